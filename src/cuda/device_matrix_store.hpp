// The matrix store (core/matrix_store.hpp) in the CUDA backend's device memory: the Hessian-vector
// product's O(n·d) arrays stay beside the passes (every operation a kernel or a pass on the
// backend's stream), and only O(n) vectors cross — row dot products, columns, row scales — plus the
// direction in and the product out. The matrices keep their memory for the next write of the same
// name (no allocation per product once warm).
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/matrix_store.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/device_cloud.hpp"
#include "cuda/plan_rows_launch.hpp"
#include "flashsinkhorn/options.hpp"
#include "flashsinkhorn/transfer_statistics.hpp"

namespace flashsinkhorn::detail {

// What the store needs from its backend.
struct device_store_context {
  precision mode = precision::fp32;
  int device = 0;
  cudaStream_t stream = nullptr;
  std::array<const device_cloud*, 2> clouds{};  // x, y: the stored points (row_view) and their layout
  // A plan pass's launch arguments with the backend's scratch reserved (β, LSE, staged values for k
  // columns, the one-column pass's partial states): the store sets values, directions and the output.
  std::function<plan_rows_launch_args(side rows, side keys, slot key_potential, double eps, std::int64_t k,
                                      bool quadratic)>
      pass_args;
  transfer_statistics* transfers = nullptr;  // every host↔device copy counted (nullptr: none)
  // Orders the store's stream after the caller's (options::cuda_stream) before it reads or writes
  // the caller's CUDA views; empty: nothing to order after.
  std::function<void()> order_after_caller;
};

class device_matrix_store final : public matrix_store {
 public:
  explicit device_matrix_store(device_store_context context) : context_(std::move(context)) {}

  void write(int id, const std::vector<double>& values, std::int64_t rows, std::int64_t cols) override;
  void write_view(int id, const matrix_view& view, const std::string& name) override;
  void read_into(int id, const mutable_matrix_view& out, const std::string& name) const override;
  [[nodiscard]] std::int64_t first_nonfinite(int id) const override;
  void load_points(int id, side s) override;
  void round_to_operands(int id) override;
  [[nodiscard]] std::vector<double> read(int id) const override;
  [[nodiscard]] std::vector<double> column(int id, std::int64_t column) const override;
  [[nodiscard]] std::int64_t rows(int id) const override { return at(id).rows; }
  [[nodiscard]] std::int64_t cols(int id) const override { return at(id).cols; }
  void combine(int target, std::int64_t column, std::int64_t width, bool accumulate,
               const std::vector<matrix_term>& terms) override;
  [[nodiscard]] std::vector<double> row_dots(int a, std::int64_t a_column, int b, std::int64_t b_column,
                                             std::int64_t width) const override;
  void plan_rows(const plan_rows_request& request, int values, int out) override;
  void plan_quadratic_rows(const plan_quadratic_request& request, int directions, int values, int key_directions,
                           int out) override;

 private:
  struct matrix {
    device_buffer<double> values;  // capacity ≥ rows·cols
    std::int64_t rows = 0;
    std::int64_t cols = 0;
  };
  [[nodiscard]] const matrix& at(int id) const;
  // Matrix `id` shaped (rows, cols), its contents undefined.
  double* shape(int id, std::int64_t rows, std::int64_t cols);
  // `count` host doubles into device scratch slot `slot` (row scales, the dot products' staging).
  const double* upload_vector(int slot, const std::vector<double>& host) const;
  // The caller's view must live on this store's GPU when it is device memory.
  void check_device(memory_space space, int device, const std::string& name) const;
  unsigned char* staging(std::size_t bytes) const;
  // Matrix `id` in the layout and format of the stored points of `view` (encode for a quadratic pass).
  const void* stored_like(int id, const device_cloud_view& view, device_buffer<unsigned char>& buffer) const;
  [[nodiscard]] std::vector<double> download(const double* device, std::size_t count) const;

  device_store_context context_;
  std::unordered_map<int, matrix> matrices_;
  mutable std::array<device_buffer<double>, 5> vectors_;  // row scales of a combine (≤ 4 terms), row dots
  mutable device_buffer<unsigned char> stored_directions_, stored_key_directions_;
  mutable device_buffer<unsigned char> staging_;  // a host view's packed rows on their way in or out
  mutable device_buffer<unsigned long long> flag_;  // first_nonfinite's answer
};

}  // namespace flashsinkhorn::detail
