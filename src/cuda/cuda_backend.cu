// The CUDA backend: owns the two prepared clouds on one device (in the storage type of the
// precision mode), the 8 potential slots (float64) and O(n + m) scratch, and orders every
// operation, copies included, on one stream (its own non-blocking stream, or the caller's). The
// only host synchronisations are the reads the contract asks for (take_error, read_potential,
// plan_rows), uploads (write_potential, construction) and destruction; an output written into the
// caller's CUDA memory is handed to the caller's stream with an event (hand_output_to_caller).
// Built either from clouds prepared on the host (uploaded) or from the caller's CUDA arrays,
// prepared in place (device_prepare.hpp); in the second case it also orders itself after the
// caller's stream before touching the caller's memory (caller_stream.hpp), and the solve's scalars
// are reduced on the device (weighted_dual_terms, primal_terms) so that no potential crosses. Every
// host↔device copy it makes is counted when the solver hands it a transfer_statistics.
//
// Iteration blocks (backend::run_block) are recorded, not run: each softmin / copy_potential of the
// block appends a block_op (its steps resolved to buffers and scalars; swap_potentials just moves
// the slot → buffer map, as always), then graph_cache enqueues the whole sequence — plain the first
// time, as one CUDA graph launch whenever the same sequence comes again (graph_cache.hpp).
#include <algorithm>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/operand_rounding.hpp"
#include "core/transfer_count.hpp"
#include "core/view_io.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/caller_stream.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/cuda_stream.hpp"
#include "cuda/device_matrix_store.hpp"
#include "cuda/device_cloud.hpp"
#include "cuda/device_prepare.hpp"
#include "cuda/dense_schur.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/graph_cache.hpp"
#include "cuda/kernel_variant.hpp"
#include "cuda/plan_gemm_pass.hpp"
#include "cuda/plan_rows_launch.hpp"
#include "cuda/plan_top_entries.hpp"
#include "cuda/schur_cg.hpp"
#include "cuda/plan_points_narrow_launch.hpp"
#include "cuda/point_gradient_launch.hpp"
#include "cuda/softmin_launch.hpp"
#include "cuda/solve_summary_launch.hpp"
#include "cuda/sparse_schur.hpp"
#include "cuda/tile_config.hpp"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {
namespace {

// Operand rounding is core/operand_rounding.hpp's (round-to-nearest-even of the float), exactly what
// the CPU backend does, so both backends see bit-identical operands.
std::uint16_t bf16_bits(float rounded) {
  std::uint32_t bits;
  std::memcpy(&bits, &rounded, sizeof bits);
  return static_cast<std::uint16_t>(bits >> 16);
}

std::int64_t storage_bytes(precision mode) {
  switch (mode) {
    case precision::fp64: return 8;
    case precision::bf16: return 2;
    case precision::fp32:
    case precision::tf32: return 4;
  }
  return 8;
}

template <class T>
device_buffer<T> upload(const std::vector<T>& host, cudaStream_t stream, transfer_statistics* transfers) {
  device_buffer<T> buffer(host.size(), stream);
  if (!host.empty()) {
    FS_CUDA_CHECK(cudaMemcpyAsync(buffer.data(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, stream));
    FS_CUDA_CHECK(cudaStreamSynchronize(stream));  // `host` may die when we return
    count_host_to_device(transfers, static_cast<std::int64_t>(host.size() * sizeof(T)));
  }
  return buffer;
}

// The points in the storage type of `mode`, (padded_n, padded_d) with zero padding; `rounded`, when
// given, receives the stored values as doubles, (n, d).
std::vector<unsigned char> encode_points(const double* points, std::int64_t n, std::int64_t d,
                                         std::int64_t padded_n, std::int64_t padded_d, precision mode,
                                         std::vector<double>* rounded) {
  const std::int64_t element = storage_bytes(mode);
  std::vector<unsigned char> bytes(static_cast<std::size_t>(padded_n * padded_d * element), 0);
  if (rounded != nullptr) rounded->assign(static_cast<std::size_t>(n * d), 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t c = 0; c < d; ++c) {
      const double stored = rounded_operand(points[i * d + c], mode);  // exact in the storage type
      unsigned char* dst = bytes.data() + (i * padded_d + c) * element;
      if (mode == precision::fp64) {
        std::memcpy(dst, &stored, 8);
      } else if (mode == precision::bf16) {
        const std::uint16_t b = bf16_bits(static_cast<float>(stored));
        std::memcpy(dst, &b, 2);
      } else {
        const auto f = static_cast<float>(stored);
        std::memcpy(dst, &f, 4);
      }
      if (rounded != nullptr) (*rounded)[static_cast<std::size_t>(i * d + c)] = stored;
    }
  }
  return bytes;
}

// Converts a prepared cloud to the working type and uploads it; the squared norms are those of the
// stored (rounded) values, with the signature (‖p‖²_η, prepared_cloud.hpp), so that
// C_ij = s‖p‖²_η + s‖q‖²_η − 2s·p·(η⊙q) is exact for the rounded points. The keys' copy η⊙q is
// uploaded only when the cloud has negative-signature coordinates (a label cost with a non-PSD
// −½JWJ); rounding commutes with negation, so it is η⊙(the stored rows).
device_cloud upload_cloud(const prepared_cloud& cloud, precision mode, double cost_scale, cudaStream_t stream,
                          transfer_statistics* transfers) {
  device_cloud out;
  const std::int64_t n = cloud.count;
  const std::int64_t d = cloud.dim;
  const std::int64_t padded_n = tile::round_up(n, tile::kRowPadding);
  const std::int64_t padded_d = softmin_padded_dim(mode, d);
  std::vector<double> rounded;
  out.points = upload(encode_points(cloud.points.data(), n, d, padded_n, padded_d, mode, &rounded), stream, transfers);
  if (mode == precision::tf32 || mode == precision::bf16) {
    const std::vector<float> exact(cloud.points.begin(), cloud.points.end());
    out.exact_points = upload(exact, stream, transfers);
    out.exact = {out.exact_points.data(), d, false};
  } else {
    out.exact = {out.points.data(), padded_d, mode == precision::fp64};
  }
  if (cloud.negative_dim > 0)
    out.key_points = upload(encode_points(cloud.key_points.data(), n, d, padded_n, padded_d, mode, nullptr), stream, transfers);
  std::vector<double> sq_norm(static_cast<std::size_t>(n), 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    sq_norm[static_cast<std::size_t>(i)] = cost_scale * signed_sq_norm(rounded.data() + i * d, d, cloud.negative_dim);
  out.scaled_sq_norm = upload(sq_norm, stream, transfers);
  out.weights = upload(cloud.weights, stream, transfers);
  out.log_weights = upload(cloud.log_weights, stream, transfers);
  out.make_views(n, padded_n, d, padded_d);
  return out;
}

void check_cloud(const prepared_cloud& cloud, const char* name) {
  const auto count = static_cast<std::size_t>(cloud.count);
  if (cloud.count <= 0 || cloud.dim <= 0)
    throw invalid_argument(std::string("CUDA backend: cloud ") + name + " is empty");
  if (cloud.points.size() != count * static_cast<std::size_t>(cloud.dim) ||
      cloud.weights.size() != count || cloud.log_weights.size() != count)
    throw invalid_argument(std::string("CUDA backend: cloud ") + name + " has inconsistent sizes");
  if (cloud.negative_dim < 0 || cloud.negative_dim > cloud.dim ||
      (cloud.negative_dim > 0 && cloud.key_points.size() != cloud.points.size()))
    throw invalid_argument(std::string("CUDA backend: cloud ") + name + " has an inconsistent key-role copy");
}


const char* slot_name(slot s) {
  static constexpr const char* kNames[kSlotCount] = {"f", "g", "f_next", "g_next",
                                                     "f_aa", "g_bb", "f_aa_next", "g_bb_next"};
  return kNames[static_cast<int>(s)];
}

// One device operation of an iteration block, resolved to buffers and scalars: everything a
// captured graph bakes in, so that equal sequences may share a graph (graph_cache's Op).
struct block_op {
  enum class kind { softmin, copy };
  kind what = kind::softmin;
  side rows = side::x;
  side keys = side::y;
  const double* key_potential = nullptr;  // softmin: h (nullptr: h = 0)
  const double* source = nullptr;         // softmin: previous (or nullptr); copy: the source
  double* target = nullptr;               // softmin: out; copy: the destination
  double eps = 1;
  double damping = 1;
  double blend = 1;
  bool accumulate_error = false;
  std::size_t bytes = 0;                  // copy
};

bool operator==(const block_op& a, const block_op& b) {
  return a.what == b.what && a.rows == b.rows && a.keys == b.keys && a.key_potential == b.key_potential &&
         a.source == b.source && a.target == b.target && a.eps == b.eps && a.damping == b.damping &&
         a.blend == b.blend && a.accumulate_error == b.accumulate_error && a.bytes == b.bytes;
}

class cuda_backend final : public backend {
 public:
  // From clouds prepared on the host: converted to the storage type and uploaded.
  cuda_backend(const prepared_problem& problem, precision mode, int device, cudaStream_t stream,
               transfer_statistics* transfers)
      : mode_(mode), device_(device), cost_scale_(problem.cost_scale), transfers_(transfers) {
    check_cloud(problem.x, "x");
    check_cloud(problem.y, "y");
    if (problem.x.dim != problem.y.dim)
      throw invalid_argument("CUDA backend: x and y have different dimensions (" +
                             std::to_string(problem.x.dim) + " vs " + std::to_string(problem.y.dim) + ")");
    open_device(stream);
    clouds_[0] = upload_cloud(problem.x, mode_, cost_scale_, stream_.get(), transfers_);
    clouds_[1] = upload_cloud(problem.y, mode_, cost_scale_, stream_.get(), transfers_);
    dim_ = problem.x.dim;
    allocate_state();
  }

  // From the caller's CUDA arrays, prepared where they are (device_prepare.hpp) on a stream of the
  // backend's own, after the work enqueued on the caller's stream (options::cuda_stream).
  cuda_backend(const problem& p, const options& o, transfer_statistics* transfers, device_preparation_summary& summary)
      : mode_(o.precision), device_(o.cuda_device), transfers_(transfers) {
    open_device(nullptr);
    caller_ = caller_stream(o.cuda_stream ? reinterpret_cast<cudaStream_t>(*o.cuda_stream) : nullptr);
    caller_.order_after(stream_.get());
    device_prepared_problem prepared = prepare_on_device(p, o, stream_.get(), transfers_);
    cost_scale_ = prepared.cost_scale;
    clouds_ = std::move(prepared.clouds);
    dim_ = p.x.cols;
    summary = {prepared.cost_scale, prepared.mass_a, prepared.mass_b, prepared.diameter, false};
    allocate_state();
    if (prepared.initial_f.size() > 0) {  // the warm start, device to device (allocate_state zeroed the slots)
      FS_CUDA_CHECK(cudaMemcpyAsync(slot_data(slot::f), prepared.initial_f.data(), prepared.initial_f.bytes(),
                                    cudaMemcpyDeviceToDevice, stream_.get()));
      FS_CUDA_CHECK(cudaMemcpyAsync(slot_data(slot::g), prepared.initial_g.data(), prepared.initial_g.bytes(),
                                    cudaMemcpyDeviceToDevice, stream_.get()));
      // (`prepared`'s buffers, freed on return, are freed in the order of stream_: no wait)
      summary.warm_start = true;
    }
  }

 private:
  // The device, its properties and the stream (`stream`, the caller's, when given; else our own).
  void open_device(cudaStream_t stream) {
    const int devices = cuda_device_count();
    if (device_ < 0 || device_ >= devices)
      throw unsupported("CUDA device " + std::to_string(device_) + " requested but " + std::to_string(devices) +
                        " CUDA device(s) are visible");
    FS_CUDA_CHECK(cudaSetDevice(device_));
    FS_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
    FS_CUDA_CHECK(cudaDeviceGetAttribute(&max_shared_bytes_, cudaDevAttrMaxSharedMemoryPerBlockOptin, device_));
    name_ = "cuda:" + std::to_string(device_) + " (" + cuda_device_name(device_) + ")";
    stream_ = stream != nullptr ? cuda_stream::borrow(stream) : cuda_stream::create();
    if (stream_.is_legacy()) graphs_.turn_off("the legacy default stream cannot be captured into a CUDA graph");
  }

  // The potential slots and the scratch of the softmin, once the clouds are in place: one
  // allocation and one memset (the zeros: slots, error, split counts) instead of eleven buffers and
  // ten memsets — a memset cost ~8 µs of host time on the H200 machine (solve_path_profile).
  void allocate_state() {
    constexpr std::size_t kAlign = 256;
    auto aligned = [](std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; };
    std::size_t offsets[kSlotCount];
    std::size_t zeroed = 0;
    for (int s = 0; s < kSlotCount; ++s) {
      offsets[s] = zeroed;
      zeroed += aligned(static_cast<std::size_t>(cloud(side_of(static_cast<slot>(s))).count) * sizeof(double));
    }
    const std::size_t error_offset = zeroed;
    zeroed += aligned(sizeof(double));
    // Partial states for the split-key path: sized for the largest split any direction needs.
    std::int64_t partial_bytes = 0;
    for (side rows : {side::x, side::y})
      for (side keys : {side::x, side::y}) {
        const int splits = softmin_split_count(mode_, cloud(rows), key_cloud(keys), sm_count_, max_shared_bytes_);
        partial_bytes = std::max(partial_bytes, softmin_partial_bytes(mode_, cloud(rows).padded_count, splits));
      }
    const std::int64_t max_padded = std::max(cloud(side::x).padded_count, cloud(side::y).padded_count);
    const std::size_t counts_offset = zeroed;  // the split counts start at 0 (finish_block)
    split_count_capacity_ = softmin_split_counts(max_padded);
    zeroed += aligned(static_cast<std::size_t>(split_count_capacity_) * sizeof(unsigned));
    const std::size_t partial_offset = zeroed;  // not zeroed from here on
    const std::size_t bias_offset = partial_offset + aligned(static_cast<std::size_t>(partial_bytes));
    state_ = device_buffer<unsigned char>(bias_offset + static_cast<std::size_t>(max_padded) * sizeof(double),
                                          stream_.get());
    FS_CUDA_CHECK(cudaMemsetAsync(state_.data(), 0, zeroed, stream_.get()));
    for (int s = 0; s < kSlotCount; ++s) {
      slots_[s] = reinterpret_cast<double*>(state_.data() + offsets[s]);
      slot_buffer_[s] = s;
    }
    error_ = reinterpret_cast<double*>(state_.data() + error_offset);
    partial_ = partial_bytes > 0 ? state_.data() + partial_offset : nullptr;
    partial_bytes_ = partial_bytes;
    split_counts_ = reinterpret_cast<unsigned*>(state_.data() + counts_offset);
    bias_ = reinterpret_cast<double*>(state_.data() + bias_offset);
    FS_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

 public:

  // The buffers are freed after this body (and the stream, when ours, after them): first let the
  // work in flight that reads and writes them finish.
  ~cuda_backend() override {
    FS_CUDA_CHECK_LOG(cudaSetDevice(device_));
    FS_CUDA_CHECK_LOG(cudaStreamSynchronize(stream_.get()));
  }
  cuda_backend(const cuda_backend&) = delete;
  cuda_backend& operator=(const cuda_backend&) = delete;

  [[nodiscard]] std::string name() const override { return name_; }

  void softmin(const softmin_step& step) override {
    if (!(step.eps > 0)) throw invalid_argument("softmin: eps must be > 0");
    if (side_of(step.out) != step.rows)
      throw invalid_argument(std::string("softmin: output slot ") + slot_name(step.out) +
                             " does not live on the rows' side");
    if (step.key_potential && side_of(*step.key_potential) != step.keys)
      throw invalid_argument(std::string("softmin: key potential slot ") + slot_name(*step.key_potential) +
                             " does not live on the keys' side");
    if (step.previous && side_of(*step.previous) != step.rows)
      throw invalid_argument(std::string("softmin: previous slot ") + slot_name(*step.previous) +
                             " does not live on the rows' side");
    if (!step.previous && (step.blend != 1 || step.accumulate_error))
      throw invalid_argument("softmin: blend < 1 and accumulate_error need a previous slot");

    block_op op;
    op.rows = step.rows;
    op.keys = step.keys;
    op.key_potential = step.key_potential ? slot_data(*step.key_potential) : nullptr;
    op.source = step.previous ? slot_data(*step.previous) : nullptr;
    op.target = slot_data(step.out);
    op.eps = step.eps;
    op.damping = step.damping;
    op.blend = step.blend;
    op.accumulate_error = step.accumulate_error;
    if (recording_ != nullptr) {
      recording_->push_back(op);
      return;
    }
    FS_CUDA_CHECK(cudaSetDevice(device_));
    FS_CUDA_CHECK(launch_softmin(mode_, launch_args(op), stream_.get()));
  }

  double take_error() override {
    refuse_inside_block("take_error");
    FS_CUDA_CHECK(cudaSetDevice(device_));
    double value = 0;
    FS_CUDA_CHECK(cudaMemcpyAsync(&value, error_, sizeof value, cudaMemcpyDeviceToHost, stream_.get()));
    FS_CUDA_CHECK(cudaMemsetAsync(error_, 0, sizeof(double), stream_.get()));
    FS_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    count_device_to_host(transfers_, sizeof value);
    return value;
  }

  void write_potential(slot s, const std::vector<double>& values) override {
    refuse_inside_block("write_potential");
    const std::int64_t count = cloud(side_of(s)).count;
    if (values.empty()) {  // the contract: an empty vector writes zeros (0.0 is all-zero bytes)
      FS_CUDA_CHECK(cudaSetDevice(device_));
      FS_CUDA_CHECK(cudaMemsetAsync(slot_data(s), 0, static_cast<std::size_t>(count) * sizeof(double), stream_.get()));
      return;
    }
    if (static_cast<std::int64_t>(values.size()) != count)
      throw invalid_argument(std::string("write_potential: slot ") + slot_name(s) + " holds " +
                             std::to_string(count) + " values, got " + std::to_string(values.size()));
    FS_CUDA_CHECK(cudaSetDevice(device_));
    FS_CUDA_CHECK(cudaMemcpyAsync(slot_data(s), values.data(), values.size() * sizeof(double),
                                  cudaMemcpyHostToDevice, stream_.get()));
    FS_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));  // `values` may die after we return
    count_host_to_device(transfers_, static_cast<std::int64_t>(values.size() * sizeof(double)));
  }

  [[nodiscard]] std::vector<double> read_potential(slot s) const override {
    refuse_inside_block("read_potential");
    std::vector<double> values(static_cast<std::size_t>(cloud(side_of(s)).count));
    FS_CUDA_CHECK(cudaSetDevice(device_));
    FS_CUDA_CHECK(cudaMemcpyAsync(values.data(), slot_data(s), values.size() * sizeof(double),
                                  cudaMemcpyDeviceToHost, stream_.get()));
    FS_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    count_device_to_host(transfers_, static_cast<std::int64_t>(values.size() * sizeof(double)));
    return values;
  }

  [[nodiscard]] bool read_potential_into(slot s, const mutable_vector_view& out) const override {
    refuse_inside_block("read_potential_into");
    const std::int64_t count = cloud(side_of(s)).count;
    if (out.data == nullptr) throw invalid_argument(std::string("potential ") + slot_name(s) + ": output has no data");
    if (out.size != count)
      throw invalid_argument(std::string("potential ") + slot_name(s) + ": output has " + std::to_string(out.size) +
                             " elements, expected " + std::to_string(count));
    if (out.space == memory_space::host) {
      write_vector(out, read_potential(s), slot_name(s));
      return true;
    }
    if (out.device != device_)
      throw invalid_argument(std::string("potential ") + slot_name(s) + ": the output lives on CUDA device " +
                             std::to_string(out.device) + ", the solver on device " + std::to_string(device_));
    if (out.stride < 1) throw invalid_argument(std::string("potential ") + slot_name(s) + ": output stride must be ≥ 1");
    FS_CUDA_CHECK(cudaSetDevice(device_));
    caller_.order_after(stream_.get());
    // A column (count, 1) with row stride out.stride: the gradient's device copy serves.
    const mutable_matrix_view column{out.data, count, 1, out.stride, out.type, out.space, out.device};
    FS_CUDA_CHECK(launch_copy_to_view(column, slot_data(s), 1, stream_.get()));
    hand_output_to_caller();
    return true;
  }

  [[nodiscard]] std::optional<std::vector<double>> weighted_dual_terms(const std::vector<dual_term_request>& terms,
                                                                       double eps) const override {
    refuse_inside_block("weighted_dual_terms");
    if (terms.empty()) return std::vector<double>{};
    FS_CUDA_CHECK(cudaSetDevice(device_));
    if (terms.size() > static_cast<std::size_t>(kMaxWeightedPhiSums))
      throw invalid_argument("weighted_dual_terms: at most " + std::to_string(kMaxWeightedPhiSums) + " terms at once");
    double* values = reserve(summary_.values, terms.size(), stream_.get());
    std::array<weighted_phi_sum, kMaxWeightedPhiSums> sums{};
    for (std::size_t k = 0; k < terms.size(); ++k) {
      const device_cloud_view& own = cloud(side_of(terms[k].potential));
      sums[k] = {own.weights, slot_data(terms[k].potential), own.count, terms[k].rho ? *terms[k].rho : 0.0, values + k};
    }
    FS_CUDA_CHECK(launch_weighted_phi_sums(sums.data(), static_cast<int>(terms.size()), eps, stream_.get()));
    return download_scalars(values, terms.size());
  }

  // One x-rows pass keyed by g with V = g − ḡ and the cost, then the row terms and five sums on
  // the device (solve_summary_launch.hpp); five doubles come back.
  [[nodiscard]] std::optional<primal_summary> primal_terms(double eps, bool unbalanced_rows) const override {
    refuse_inside_block("primal_terms");
    FS_CUDA_CHECK(cudaSetDevice(device_));
    const device_cloud_view& rows = cloud(side::x);
    const device_cloud_view& keys = cloud(side::y);
    const auto n = static_cast<std::size_t>(rows.count);
    const auto m = static_cast<std::size_t>(keys.count);
    // sums: [Σa, Σb, Σ b·g, Σ transport, Σ entropy, Σ mass]
    double* sums = reserve(summary_.values, 6, stream_.get());
    cudaStream_t stream = stream_.get();
    const weighted_phi_sum masses_and_mean[3] = {{nullptr, rows.weights, rows.count, 0.0, sums + 0},
                                                 {nullptr, keys.weights, keys.count, 0.0, sums + 1},
                                                 {keys.weights, slot_data(slot::g), keys.count, 0.0, sums + 2}};
    FS_CUDA_CHECK(launch_weighted_phi_sums(masses_and_mean, 3, eps, stream));
    double* shifted = reserve(plan_.values, m, stream_.get());
    FS_CUDA_CHECK(launch_shifted(slot_data(slot::g), keys.count, sums + 2, sums + 1, shifted, stream));
    plan_rows_launch_args args = plan_args(side::x, side::y, slot::g, eps, 1);
    args.values = shifted;
    args.values_scratch = reserve(plan_.staged, staged_bytes(side::y, 1, true), stream_.get());
    args.cost = reserve(plan_.cost, n, stream_.get());
    FS_CUDA_CHECK(launch_plan_rows(mode_, args, stream));
    double* terms = reserve(summary_.row_terms, 3 * n, stream_.get());
    primal_row_terms_args row_terms;
    row_terms.weights = rows.weights;
    row_terms.potential = slot_data(slot::f);
    row_terms.lse = args.lse;
    row_terms.weighted = args.weighted;
    row_terms.cost = args.cost;
    row_terms.shift_numerator = sums + 2;
    row_terms.shift_denominator = sums + 1;
    row_terms.rows = rows.count;
    row_terms.eps = eps;
    row_terms.unbalanced = unbalanced_rows;
    row_terms.transport = terms;
    row_terms.entropy = terms + n;
    row_terms.mass = terms + 2 * n;
    FS_CUDA_CHECK(launch_primal_row_terms(row_terms, stream));
    const weighted_phi_sum row_sums[3] = {{nullptr, terms, rows.count, 0.0, sums + 3},
                                          {nullptr, terms + n, rows.count, 0.0, sums + 4},
                                          {nullptr, terms + 2 * n, rows.count, 0.0, sums + 5}};
    FS_CUDA_CHECK(launch_weighted_phi_sums(row_sums, 3, eps, stream));
    const std::vector<double> host = download_scalars(sums, 6);
    primal_summary out;
    out.transport = host[3];
    out.relative_entropy = host[4] + host[0] * host[1] - host[5];
    return out;
  }

  void copy_potential(slot dst, slot src) override {
    if (side_of(dst) != side_of(src))
      throw invalid_argument(std::string("copy_potential: slots ") + slot_name(dst) + " and " +
                             slot_name(src) + " live on different sides");
    if (dst == src) return;
    block_op op;
    op.what = block_op::kind::copy;
    op.source = slot_data(src);
    op.target = slot_data(dst);
    op.bytes = static_cast<std::size_t>(cloud(side_of(dst)).count) * sizeof(double);
    if (recording_ != nullptr) {
      recording_->push_back(op);
      return;
    }
    FS_CUDA_CHECK(cudaSetDevice(device_));
    FS_CUDA_CHECK(cudaMemcpyAsync(op.target, op.source, op.bytes, cudaMemcpyDeviceToDevice, stream_.get()));
  }

  void swap_potentials(slot a, slot b) override {
    if (side_of(a) != side_of(b))
      throw invalid_argument(std::string("swap_potentials: slots ") + slot_name(a) + " and " +
                             slot_name(b) + " live on different sides");
    std::swap(slot_buffer_[static_cast<int>(a)], slot_buffer_[static_cast<int>(b)]);
  }

  [[nodiscard]] plan_rows_result plan_rows(const plan_rows_request& request) const override {
    if (!(request.eps > 0)) throw invalid_argument("plan_rows: eps must be > 0");
    if (side_of(request.key_potential) != request.keys)
      throw invalid_argument(std::string("plan_rows: key potential slot ") + slot_name(request.key_potential) +
                             " does not live on the keys' side");
    if (request.k < 0 || (request.k > 0 && request.values == nullptr))
      throw invalid_argument("plan_rows: k > 0 needs values");
    refuse_inside_block("plan_rows");
    FS_CUDA_CHECK(cudaSetDevice(device_));
    const device_cloud_view& rows = cloud(request.rows);
    const device_cloud_view& keys = key_cloud(request.keys);
    const auto n = static_cast<std::size_t>(rows.count);
    const auto m = static_cast<std::size_t>(keys.count);
    const auto k = static_cast<std::size_t>(request.k);

    plan_rows_launch_args args = plan_args(request.rows, request.keys, request.key_potential, request.eps, k);
    if (k > 0) {
      double* values = reserve(plan_.values, m * k, stream_.get());
      FS_CUDA_CHECK(cudaMemcpyAsync(values, request.values, m * k * sizeof(double), cudaMemcpyHostToDevice,
                                    stream_.get()));
      count_host_to_device(transfers_, static_cast<std::int64_t>(m * k * sizeof(double)));
      args.values = values;
      args.values_scratch = reserve(plan_.staged, staged_bytes(request.keys, request.k, request.want_cost), stream_.get());
    }
    if (request.want_cost) args.cost = reserve(plan_.cost, n, stream_.get());
    FS_CUDA_CHECK(launch_plan_rows(mode_, args, stream_.get()));

    plan_rows_result result;
    result.lse.resize(n);
    result.weighted.resize(n * k);
    if (request.want_cost) result.cost.resize(n);
    FS_CUDA_CHECK(cudaMemcpyAsync(result.lse.data(), args.lse, n * sizeof(double), cudaMemcpyDeviceToHost,
                                  stream_.get()));
    if (k > 0)
      FS_CUDA_CHECK(cudaMemcpyAsync(result.weighted.data(), args.weighted, n * k * sizeof(double),
                                    cudaMemcpyDeviceToHost, stream_.get()));
    if (request.want_cost)
      FS_CUDA_CHECK(cudaMemcpyAsync(result.cost.data(), args.cost, n * sizeof(double), cudaMemcpyDeviceToHost,
                                    stream_.get()));
    FS_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    count_device_to_host(transfers_, static_cast<std::int64_t>(n * sizeof(double)));
    if (k > 0) count_device_to_host(transfers_, static_cast<std::int64_t>(n * k * sizeof(double)));
    if (request.want_cost) count_device_to_host(transfers_, static_cast<std::int64_t>(n * sizeof(double)));
    return result;
  }

  // Fused in every mode, key directions included: fp64 in the SIMT plan pass (plan_rows_kernel.cuh:
  // a second dot product u_i·z_j per term), the other modes on tensor cores (plan_mma_kernel.cuh:
  // U = u·Zᵀ beside the scores, O += (P∘U)·V), with u stored like the rows' points and z like the
  // keys'.
  [[nodiscard]] bool supports_key_directions() const override { return true; }

  // The Hessian-vector product's matrices in device memory (device_matrix_store.hpp), made on first
  // use; its passes take this backend's scratch through plan_args.
  [[nodiscard]] matrix_store* matrices() const override {
    if (store_ == nullptr) {
      device_store_context context;
      context.mode = mode_;
      context.device = device_;
      context.stream = stream_.get();
      context.clouds = {&clouds_[0], &clouds_[1]};
      context.pass_args = [this](side rows, side keys, slot key, double eps, std::int64_t k, bool quadratic) {
        plan_rows_launch_args args = plan_args(rows, keys, key, eps, static_cast<std::size_t>(k), false);
        args.values_scratch = reserve(plan_.staged, staged_bytes(keys, k, false, quadratic), stream_.get());
        return args;
      };
      context.transfers = transfers_;
      context.order_after_caller = [this] { caller_.order_after(stream_.get()); };
      store_ = std::make_unique<device_matrix_store>(std::move(context));
    }
    return store_.get();
  }

  [[nodiscard]] plan_rows_result plan_quadratic_rows(const plan_quadratic_request& request) const override {
    if (!(request.eps > 0)) throw invalid_argument("plan_quadratic_rows: eps must be > 0");
    if (side_of(request.key_potential) != request.keys)
      throw invalid_argument("plan_quadratic_rows: the key potential slot does not live on the keys' side");
    if (request.directions == nullptr || request.values == nullptr || request.k < 1)
      throw invalid_argument("plan_quadratic_rows: needs directions, values and k ≥ 1");
    refuse_inside_block("plan_quadratic_rows");
    FS_CUDA_CHECK(cudaSetDevice(device_));
    const device_cloud_view& rows = cloud(request.rows);
    const auto n = static_cast<std::size_t>(rows.count);
    const auto m = static_cast<std::size_t>(key_cloud(request.keys).count);
    const auto k = static_cast<std::size_t>(request.k);
    const auto d = static_cast<std::size_t>(dim_);
    plan_rows_launch_args args = plan_args(request.rows, request.keys, request.key_potential, request.eps, k);
    args.values = upload_to(plan_.values, request.values, m * k);
    const device_cloud_view& keys = key_cloud(request.keys);
    if (plan_pass_is_float64(mode_, rows.padded_dim)) {
      args.directions = upload_to(plan_.directions, request.directions, n * d);
      if (request.key_directions != nullptr)
        args.key_directions = upload_to(plan_.key_directions, request.key_directions, m * d);
    } else {
      args.stored_directions = upload_stored(plan_.stored_directions, request.directions, rows);
      if (request.key_directions != nullptr)
        args.stored_key_directions = upload_stored(plan_.stored_key_directions, request.key_directions, keys);
      args.values_scratch = reserve(plan_.staged, staged_bytes(request.keys, request.k, false, true), stream_.get());
    }
    FS_CUDA_CHECK(launch_plan_rows(mode_, args, stream_.get()));
    plan_rows_result result;
    result.lse.resize(n);
    result.weighted.resize(n * k);
    FS_CUDA_CHECK(cudaMemcpyAsync(result.lse.data(), args.lse, n * sizeof(double), cudaMemcpyDeviceToHost, stream_.get()));
    FS_CUDA_CHECK(cudaMemcpyAsync(result.weighted.data(), args.weighted, n * k * sizeof(double), cudaMemcpyDeviceToHost,
                                  stream_.get()));
    FS_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    return result;
  }

  // The CG of the potential system on the device (cuda/schur_cg.hpp). Each product is the x-rows
  // pass keyed by g on p, the reweighting by w, and the y-rows pass keyed by f, one value column
  // each: plan_mma_kernel.cuh's FMA pass, exact to fp32 whatever the mode.
  [[nodiscard]] std::optional<projected_cg_outcome> solve_schur(const schur_system& system,
                                                                const std::vector<double>& rhs,
                                                                const std::vector<double>& diagonal,
                                                                const projected_cg_settings& settings) const override {
    if (!(system.eps > 0)) throw invalid_argument("solve_schur: eps must be > 0");
    refuse_inside_block("solve_schur");
    FS_CUDA_CHECK(cudaSetDevice(device_));
    const auto n = static_cast<std::size_t>(cloud(side::x).count);
    const auto m = static_cast<std::size_t>(cloud(side::y).count);
    if (system.key_reweight->size() != n || rhs.size() != m || diagonal.size() != m)
      throw invalid_argument("solve_schur: vector sizes do not match the clouds");
    // Systems that fit (dense_schur_fits: m ≤ 2,048, or up to 12,288 where s is written directly and m ≤ 80·d): the
    // sparse_plan preconditioner with every entry kept, factored (dense_schur.hpp), built before the
    // CG's scratch is sized (its pass grows the staged values).
    std::optional<dense_schur> dense;
    if (system.sparse_row_masses != nullptr &&
        dense_schur_fits(static_cast<std::int64_t>(n), static_cast<std::int64_t>(m), dim_, plan_softmax_applies(mode_),
                         schur_solve_choice())) {
      try {
        dense.emplace(dense_plan(system));
        if (!dense->factored()) dense.reset();  // not positive definite in float64: the sparse path
      } catch (const out_of_memory&) {          // s and S did not fit beside the caller's memory: the sparse path
        plan_.dense = dense_schur_buffers{};
        dense.reset();
      }
    }
    // All scratch at its final size first: nothing is reallocated while passes are in flight.
    reserve(plan_.lse, std::max(n, m), stream_.get());
    reserve(plan_.weighted, std::max(n, m), stream_.get());
    void* staged = reserve(plan_.staged, std::max(staged_bytes(side::y, 1, false), staged_bytes(side::x, 1, false)), stream_.get());
    reserve(plan_.partials, static_cast<std::size_t>(
                                std::max(vector_partial_bytes(side::x, side::y), vector_partial_bytes(side::y, side::x))), stream_.get());
    device_buffer<double> reweight(n, stream_.get()), reweighted(n, stream_.get());
    FS_CUDA_CHECK(cudaMemcpyAsync(reweight.data(), system.key_reweight->data(), n * sizeof(double),
                                  cudaMemcpyHostToDevice, stream_.get()));

    const schur_product product = [&](const double* direction, double* out) {
      plan_rows_launch_args rows = plan_args(side::x, side::y, slot::g, system.eps, 1);
      rows.values = direction;
      rows.values_scratch = staged;
      FS_CUDA_CHECK(launch_plan_rows(mode_, rows, stream_.get()));
      FS_CUDA_CHECK(launch_hadamard(reweighted.data(), reweight.data(), rows.weighted, static_cast<std::int64_t>(n),
                                    stream_.get()));
      plan_rows_launch_args columns = plan_args(side::y, side::x, slot::f, system.eps, 1);
      columns.values = reweighted.data();
      columns.values_scratch = staged;
      columns.weighted = out;
      FS_CUDA_CHECK(launch_plan_rows(mode_, columns, stream_.get()));
    };
    schur_cg_inputs inputs;
    inputs.column_sums = system.column_sums;
    inputs.column_masses = system.column_masses;
    inputs.diagonal = &diagonal;
    inputs.rhs = &rhs;
    if (system.sparse_row_masses == nullptr) return device_schur_cg(cg_workspace_, product, inputs, settings, stream_.get());
    if (dense) {
      const schur_preconditioner precondition = [&](const double* residual, double* out, const int* /*skip*/) {
        dense->solve(residual, out, stream_.get());  // (after the CG is done its output is not read)
      };
      return device_schur_cg(cg_workspace_, product, inputs, settings, stream_.get(), &precondition);
    }
    const sparse_schur preconditioner = sparse_plan(system);
    const schur_preconditioner precondition = [&](const double* residual, double* out, const int* skip) {
      preconditioner.solve(residual, out, skip, stream_.get());
    };
    return device_schur_cg(cg_workspace_, product, inputs, settings, stream_.get(), &precondition);
  }

  // The dense preconditioner of `system` (dense_schur.hpp): the x rows' softmax keyed by g, then S
  // and its factor. s in float64 from the stored points in fp64 and fp32 (launch_plan_softmax:
  // 2·n·m·d FMAs); in tf32 and bf16 by the mode's own pass with V = I_m (n·m·(d + m) on the tensor
  // cores), whose rounding s then shares with the operator it preconditions (plan_softmax_applies).
  [[nodiscard]] dense_schur dense_plan(const schur_system& system) const {
    const auto m = static_cast<std::int64_t>(cloud(side::y).count);
    const auto n = static_cast<std::int64_t>(cloud(side::x).count);
    const bool softmax_pass = plan_softmax_applies(mode_);
    plan_rows_launch_args args =
        plan_args(side::x, side::y, slot::g, system.eps, softmax_pass ? 0 : static_cast<std::size_t>(m), false);
    args.weighted = reserve(plan_.dense.softmax, static_cast<std::size_t>(n * m), stream_.get());
    if (softmax_pass) {
      FS_CUDA_CHECK(launch_plan_softmax(mode_, args, stream_.get()));
    } else {
      args.values = dense_schur_identity(plan_.dense, m, stream_.get());
      args.values_scratch = reserve(plan_.staged, staged_bytes(side::y, m, false), stream_.get());
      FS_CUDA_CHECK(launch_plan_rows(mode_, args, stream_.get()));
    }
    return dense_schur(plan_.dense, n, m, *system.sparse_row_masses, *system.column_sums, system.sparse_shift,
                       stream_.get());
  }

  // The sparse_plan preconditioner of `system` (sparse_schur.hpp): the x rows' top entries keyed by
  // g, then S_k.
  [[nodiscard]] sparse_schur sparse_plan(const schur_system& system) const {
    const device_cloud_view& rows = cloud(side::x);
    const auto entries = static_cast<std::size_t>(rows.count) * kTopEntries;
    plan_top_entries_args args;
    args.rows = rows;
    args.keys = key_cloud(side::y);
    args.key_potential = slot_data(slot::g);
    args.cost_scale = cost_scale_;
    args.eps = system.eps;
    args.sm_count = sm_count_;
    args.entry_keys = reserve(plan_.top_keys, entries, stream_.get());
    args.entry_values = reserve(plan_.top_values, entries, stream_.get());
    FS_CUDA_CHECK(launch_plan_top_entries(mode_, args, plan_.top_scratch, stream_.get()));
    return sparse_schur(plan_.sparse, args.entry_keys, args.entry_values, rows.count, kTopEntries,
                        *system.sparse_row_masses, *system.column_sums, system.sparse_shift, device_, stream_.get());
  }

  // The plan pass with the keys' exact points as values (cached as staged Vᵀ per side in the
  // tensor-core modes), then the epilogue, all on the stream: nothing crosses to the host.
  void point_gradient(const point_gradient_request& request) override {
    if (!(request.eps > 0)) throw invalid_argument("point_gradient: eps must be > 0");
    if (side_of(request.key_potential) != request.keys || side_of(request.row_potential) != request.rows)
      throw invalid_argument("point_gradient: a potential slot does not live on its side");
    refuse_inside_block("point_gradient");
    FS_CUDA_CHECK(cudaSetDevice(device_));
    const device_cloud_view& rows = cloud(request.rows);
    const auto n = static_cast<std::size_t>(rows.count);
    const auto d = static_cast<std::size_t>(rows.dim);
    plan_rows_launch_args args = plan_args(request.rows, request.keys, request.key_potential, request.eps, d);
    const exact_points_view& key_points = clouds_[static_cast<int>(request.keys)].exact;
    if (mode_ == precision::fp64) {
      args.values = static_cast<const double*>(key_points.data);
      args.values_stride = key_points.stride;
    } else if (key_cloud(request.keys).points == key_points.data &&
               plan_points_narrow_applies(mode_, rows.padded_dim, rows.dim)) {
      // fp32 on narrow rows: the keys' stored points are the values, read with them (nothing staged)
      args.values_are_key_points = true;
      args.partial_scratch_capacity = plan_points_narrow_partial_bytes(rows, key_cloud(request.keys), sm_count_);
      args.partial_scratch = reserve(plan_.partials, static_cast<std::size_t>(args.partial_scratch_capacity), stream_.get());
    } else {
      args.values_scratch = staged_points(request.keys);
      args.values_staged = true;
      args.values_are_key_points = true;
    }
    FS_CUDA_CHECK(launch_plan_rows(mode_, args, stream_.get()));

    device_buffer<double>& gradient = gradients_[static_cast<int>(request.rows)];
    if (request.accumulate && gradient.size() != n * d)
      throw invalid_argument("point_gradient: accumulate into a gradient that was never written");
    const exact_points_view& row_points = clouds_[static_cast<int>(request.rows)].exact;
    point_gradient_epilogue_args epilogue;
    epilogue.gradient = reserve(gradient, n * d, stream_.get());
    epilogue.points = row_points.data;
    epilogue.points_are_double = row_points.is_double;
    epilogue.points_stride = row_points.stride;
    epilogue.weighted = args.weighted;
    epilogue.lse = args.lse;
    epilogue.weights = rows.weights;
    epilogue.potential = slot_data(request.row_potential);
    epilogue.rows = rows.count;
    epilogue.dim = rows.dim;
    epilogue.eps = request.eps;
    epilogue.unbalanced = request.unbalanced_rows;
    epilogue.coefficient = request.coefficient;
    epilogue.accumulate = request.accumulate;
    FS_CUDA_CHECK(launch_point_gradient_epilogue(epilogue, stream_.get()));
  }

  void read_point_gradient(side s, const mutable_matrix_view& out) const override {
    refuse_inside_block("read_point_gradient");
    const device_cloud_view& own = cloud(s);
    const device_buffer<double>& gradient = gradients_[static_cast<int>(s)];
    if (gradient.size() != static_cast<std::size_t>(own.count * own.dim))
      throw invalid_argument("read_point_gradient: no gradient was computed on that side");
    if (out.space == memory_space::host) {
      std::vector<double> host(gradient.size());
      FS_CUDA_CHECK(cudaSetDevice(device_));
      FS_CUDA_CHECK(cudaMemcpyAsync(host.data(), gradient.data(), gradient.bytes(), cudaMemcpyDeviceToHost,
                                    stream_.get()));
      FS_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
      count_device_to_host(transfers_, static_cast<std::int64_t>(gradient.bytes()));
      write_leading_columns(out, host, own.count, own.dim, "point gradient");
      return;
    }
    if (out.device != device_)
      throw invalid_argument("point gradient: the output lives on CUDA device " + std::to_string(out.device) +
                             ", the solver on device " + std::to_string(device_));
    if (out.cols > own.dim) throw invalid_argument("point gradient: the output has more columns than the points");
    check_output_shape(out, own.count, out.cols, "point gradient");
    FS_CUDA_CHECK(cudaSetDevice(device_));
    caller_.order_after(stream_.get());
    FS_CUDA_CHECK(launch_copy_to_view(out, gradient.data(), own.dim, stream_.get()));
    hand_output_to_caller();
  }

  // After an output was written into CUDA memory on the backend's stream: the caller's stream orders
  // itself after it (no host wait); without a caller's stream (a problem prepared on the host) the
  // host waits, as nothing else would order a reader after the write.
  void hand_output_to_caller() const {
    if (caller_.present()) {
      caller_.order_caller_after(stream_.get());
      return;
    }
    FS_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

  // Records the block (see the file comment), then hands it to the graph cache. A block that
  // throws leaves the slots naming the buffers they named before it.
  void run_block(int count, const std::function<void(int)>& iteration) override {
    if (count <= 0) return;
    refuse_inside_block("run_block");
    const std::array<int, kSlotCount> slots_before = slot_buffer_;
    std::vector<block_op> ops;
    try {
      recording_ = &ops;
      for (int i = 0; i < count; ++i) iteration(i);
      recording_ = nullptr;
      FS_CUDA_CHECK(cudaSetDevice(device_));
      graphs_.run(ops, stream_.get(), [this](const block_op& op) { return enqueue(op); });
    } catch (...) {
      recording_ = nullptr;
      slot_buffer_ = slots_before;
      throw;
    }
  }

  [[nodiscard]] cuda_block_statistics block_statistics() const {
    const graph_cache_statistics& s = graphs_.statistics();
    return {s.plain_blocks, s.captures, s.graph_launches, s.unavailable};
  }

 private:
  void refuse_inside_block(const char* operation) const {
    if (recording_ != nullptr)
      throw error(std::string(operation) +
                  " inside an iteration block (run_block): a block may only call softmin, swap_potentials "
                  "and copy_potential");
  }

  // `count` doubles of device memory to the host, after the stream's work (counted).
  [[nodiscard]] std::vector<double> download_scalars(const double* device, std::size_t count) const {
    std::vector<double> host(count);
    FS_CUDA_CHECK(cudaMemcpyAsync(host.data(), device, count * sizeof(double), cudaMemcpyDeviceToHost, stream_.get()));
    FS_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    count_device_to_host(transfers_, static_cast<std::int64_t>(count * sizeof(double)));
    return host;
  }

  // A plan pass of `rows` against `keys` with k value columns, writing into the plan scratch
  // (values and cost left for the caller to set; with weighted_scratch false the weighted output
  // too: the matrix store writes into its own matrices).
  [[nodiscard]] plan_rows_launch_args plan_args(side rows, side keys, slot key_potential, double eps,
                                                std::size_t k, bool weighted_scratch = true) const {
    plan_rows_launch_args args;
    args.rows = cloud(rows);
    args.keys = key_cloud(keys);
    args.key_potential = slot_data(key_potential);
    args.cost_scale = cost_scale_;
    args.eps = eps;
    args.k = static_cast<std::int64_t>(k);
    const auto n = static_cast<std::size_t>(args.rows.count);
    args.lse = reserve(plan_.lse, n, stream_.get());
    args.weighted = k > 0 && weighted_scratch ? reserve(plan_.weighted, n * k, stream_.get()) : nullptr;
    args.bias_scratch = reinterpret_cast<float*>(bias_);  // the softmin's β buffer, 8 bytes a key
    args.max_shared_bytes = max_shared_bytes_;
    args.sm_count = sm_count_;
    // The one-column and LSE-only passes split their keys, and so does the SIMT pass with any k.
    std::int64_t partial_bytes = k <= 1 ? vector_partial_bytes(rows, keys) : 0;
    if (plan_pass_is_float64(mode_, args.rows.padded_dim))
      partial_bytes = std::max(partial_bytes, plan_simt_partial_bytes(mode_, args.rows, args.keys,
                                                                      static_cast<std::int64_t>(k), sm_count_));
    if (partial_bytes > 0) {
      args.partial_scratch_capacity = partial_bytes;
      args.partial_scratch = reserve(plan_.partials, static_cast<std::size_t>(partial_bytes), stream_.get());
    }
    if (const std::int64_t elements = plan_gemm_scratch_elements(args.rows.count, args.keys.count);
        elements > 0 && plan_gemm_pass_enabled(mode_, args.rows.padded_dim)) {
      try {
        args.gemm_scratch = reserve(plan_.gemm, static_cast<std::size_t>(elements), stream_.get());
        args.gemm_scratch_elements = elements;
      } catch (const out_of_memory&) {  // the SIMT pass needs no block: it runs instead
        plan_.gemm = device_buffer<double>{};
      }
    }
    return args;
  }

  // `count` host doubles into `buffer` (grown as needed), enqueued on the stream.
  double* upload_to(device_buffer<double>& buffer, const double* host, std::size_t count) const {
    double* device = reserve(buffer, count, stream_.get());
    FS_CUDA_CHECK(cudaMemcpyAsync(device, host, count * sizeof(double), cudaMemcpyHostToDevice, stream_.get()));
    return device;
  }

  // Per-point vectors (view.count, dim) float64 stored like the points of `view` (the mode's format
  // and padding, encode_points) into `buffer`. A pageable upload returns once its bytes are staged,
  // so the encoded copy may die before the copy completes.
  const void* upload_stored(device_buffer<unsigned char>& buffer, const double* host,
                            const device_cloud_view& view) const {
    const std::vector<unsigned char> stored =
        encode_points(host, view.count, view.dim, view.padded_count, view.padded_dim, mode_, nullptr);
    unsigned char* device = reserve(buffer, stored.size(), stream_.get());
    FS_CUDA_CHECK(cudaMemcpyAsync(device, stored.data(), stored.size(), cudaMemcpyHostToDevice, stream_.get()));
    return device;
  }

  // Bytes of the key-split partial states of a one-column pass of `rows` against `keys`.
  [[nodiscard]] std::int64_t vector_partial_bytes(side rows, side keys) const {
    return plan_vector_partial_bytes(mode_, cloud(rows), key_cloud(keys), sm_count_, max_shared_bytes_);
  }

  // Bytes of the staged values of a pass with keys on `keys`, k columns.
  [[nodiscard]] std::size_t staged_bytes(side keys, std::int64_t k, bool want_cost, bool quadratic = false) const {
    const device_cloud_view& view = key_cloud(keys);
    const staged_values_layout layout =
        plan_values_layout(mode_, view.padded_dim, k, want_cost, max_shared_bytes_, quadratic);
    return static_cast<std::size_t>(plan_values_bytes(layout, k, view.padded_count));
  }

  // The staged Vᵀ of the exact points of `keys` (tensor-core modes), staged on first use.
  void* staged_points(side keys) const {
    device_buffer<unsigned char>& staged = plan_.staged_points[static_cast<int>(keys)];
    if (staged.size() > 0) return staged.data();
    const device_cloud_view& view = cloud(keys);
    const exact_points_view& exact = clouds_[static_cast<int>(keys)].exact;
    const staged_values_layout layout = plan_values_layout(mode_, view.padded_dim, view.dim, false, max_shared_bytes_);
    staged = device_buffer<unsigned char>(static_cast<std::size_t>(plan_values_bytes(layout, view.dim, view.padded_count)), stream_.get());
    FS_CUDA_CHECK(stage_plan_values(mode_, layout, static_cast<const float*>(exact.data), exact.stride, view.count,
                                    view.padded_count, view.dim, staged.data(), stream_.get()));
    return staged.data();
  }

  [[nodiscard]] softmin_launch_args launch_args(const block_op& op) const {
    softmin_launch_args args;
    args.rows = cloud(op.rows);
    args.keys = key_cloud(op.keys);
    args.key_potential = op.key_potential;
    args.previous = op.source;
    args.out = op.target;
    args.cost_scale = cost_scale_;
    args.eps = op.eps;
    args.damping = op.damping;
    args.blend = op.blend;
    args.accumulate_error = op.accumulate_error;
    args.error = error_;
    args.bias_scratch = bias_;
    args.partial_scratch = partial_;
    args.partial_scratch_capacity = partial_bytes_;
    args.split_counts = split_counts_;
    args.split_count_capacity = split_count_capacity_;
    args.sm_count = sm_count_;
    args.max_shared_bytes = max_shared_bytes_;
    return args;
  }

  // Enqueues one recorded op on the stream (captured when the stream is capturing).
  cudaError_t enqueue(const block_op& op) const {
    if (op.what == block_op::kind::copy)
      return cudaMemcpyAsync(op.target, op.source, op.bytes, cudaMemcpyDeviceToDevice, stream_.get());
    return launch_softmin(mode_, launch_args(op), stream_.get());
  }

  // A cloud in the rows' role (p) and in the keys' role (η⊙q; the same buffer without negative coordinates).
  [[nodiscard]] const device_cloud_view& cloud(side s) const { return clouds_[static_cast<int>(s)].row_view; }
  [[nodiscard]] const device_cloud_view& key_cloud(side s) const { return clouds_[static_cast<int>(s)].key_view; }
  [[nodiscard]] double* slot_data(slot s) const { return slots_[slot_buffer_[static_cast<int>(s)]]; }

  precision mode_;
  int device_;
  double cost_scale_;
  int sm_count_ = 0;
  int max_shared_bytes_ = 48 * 1024;
  std::string name_;
  transfer_statistics* transfers_ = nullptr;  // the solver's count of host↔device copies, or null
  cuda_stream stream_;           // declared before every device resource: destroyed after them
  caller_stream caller_;         // the caller's stream, when the backend reads the caller's CUDA arrays
  graph_cache<block_op> graphs_;
  std::vector<block_op>* recording_ = nullptr;  // the block being recorded (run_block), else null
  std::array<device_cloud, 2> clouds_;
  device_buffer<unsigned char> state_;         // the loop's state, one allocation (allocate_state):
  std::array<double*, kSlotCount> slots_{};    //   the potential slots
  std::array<int, kSlotCount> slot_buffer_{};  //   slot → physical buffer (swap_potentials swaps these)
  double* bias_ = nullptr;                     //   β of the keys of the current step
  unsigned char* partial_ = nullptr;           //   split-key partial lse_states, or null
  std::int64_t partial_bytes_ = 0;
  unsigned* split_counts_ = nullptr;           //   a count per row block (zeros between launches)
  std::int64_t split_count_capacity_ = 0;
  double* error_ = nullptr;                    //   accumulated marginal error
  // Plan-pass scratch, grown on demand and kept (plan_rows and point_gradient are const or not;
  // the scratch is not state).
  struct plan_scratch {
    device_buffer<double> lse, weighted, cost, values;
    device_buffer<double> directions;                           // u of a quadratic pass (fp64)
    device_buffer<unsigned char> stored_directions;             // u of a quadratic pass, stored (other modes)
    device_buffer<double> key_directions;                       // z of a quadratic pass (fp64)
    device_buffer<unsigned char> stored_key_directions;         // z of a quadratic pass, stored (other modes)
    device_buffer<unsigned char> staged;                        // Vᵀ of a caller's values
    device_buffer<unsigned char> top_scratch;                   // the top-entries pass's partial states
    device_buffer<int> top_keys;                                // its output: (n, K) key indices
    device_buffer<double> top_values;                           // and values
    sparse_schur_buffers sparse;                                // S_k and its solve (sparse_schur.hpp)
    dense_schur_buffers dense;                                  // S, its factor and handles (dense_schur.hpp)
    device_buffer<unsigned char> partials;                      // key-split states of the plan passes
    device_buffer<double> gemm;                                 // the fp64 GEMM pass's block (plan_gemm_pass.hpp)
    std::array<device_buffer<unsigned char>, 2> staged_points;  // Vᵀ of each side's exact points
  };
  mutable plan_scratch plan_;
  mutable schur_cg_workspace cg_workspace_;  // the device CG's vectors and state ring
  std::array<device_buffer<double>, 2> gradients_;  // point gradients, (count, dim) per side
  // The solve's scalars reduced on the device (weighted_dual_terms, primal_terms).
  struct summary_scratch {
    device_buffer<double> values;                // the sums
    device_buffer<double> row_terms;             // (3, n) per-row primal terms
  };
  mutable summary_scratch summary_;
  std::int64_t dim_ = 0;
  mutable std::unique_ptr<device_matrix_store> store_;  // matrices(), made on first use
};

}  // namespace

std::unique_ptr<backend> make_cuda_backend(const prepared_problem& problem, precision mode, int device,
                                           CUstream_st* stream, transfer_statistics* transfers) {
  return std::make_unique<cuda_backend>(problem, mode, device, stream, transfers);
}

std::unique_ptr<backend> make_cuda_backend_on_device_inputs(const problem& p, const options& o,
                                                            transfer_statistics* transfers,
                                                            device_preparation_summary& summary) {
  return std::make_unique<cuda_backend>(p, o, transfers, summary);
}

cuda_block_statistics cuda_block_stats(const backend& compute) {
  const auto* cuda = dynamic_cast<const cuda_backend*>(&compute);
  if (cuda == nullptr) throw invalid_argument("cuda_block_stats: the backend is not a CUDA backend");
  return cuda->block_statistics();
}

int cuda_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

std::string cuda_device_name(int device) {
  // cudaGetDeviceProperties reads every property, some through the driver (reported at 1 to 10s of
  // ms: NVIDIA/cutlass#927), and the runtime has no attribute for the name: read once per device
  // and process, not at every backend's construction (each solver makes one).
  static std::mutex mutex;
  static std::map<int, std::string> names;
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto known = names.find(device); known != names.end()) return known->second;
  cudaDeviceProp properties{};
  FS_CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
  return names.emplace(device, properties.name).first->second;
}

}  // namespace flashsinkhorn::detail
