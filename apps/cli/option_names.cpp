#include "option_names.hpp"

#include <charconv>
#include <optional>

#include "bad_input.hpp"

namespace flashsinkhorn::cli {
namespace {

[[noreturn]] void reject(std::string_view flag, std::string_view text, std::string_view accepted) {
  throw bad_input(std::string(flag) + ": '" + std::string(text) + "' is not one of " + std::string(accepted));
}

}  // namespace

cost_kind parse_cost_kind(std::string_view text) {
  if (text == "sqeuclidean") return cost_kind::squared_euclidean;
  if (text == "cosine") return cost_kind::cosine;
  reject("--cost", text, "sqeuclidean, cosine");
}

solver_kind parse_solver_kind(std::string_view text) {
  if (text == "alternating") return solver_kind::alternating;
  if (text == "symmetric") return solver_kind::symmetric;
  reject("--solver", text, "alternating, symmetric");
}

precision parse_precision(std::string_view text) {
  if (const std::optional<precision> mode = precision_from_string(text)) return *mode;
  reject("--precision", text, "fp32, fp64, tf32, bf16");
}

device_kind parse_device(std::string_view text, int& cuda_device) {
  cuda_device = 0;
  if (text == "cpu") return device_kind::cpu;
  if (text == "auto") return device_kind::automatic;
  if (text == "cuda") return device_kind::cuda;
  constexpr std::string_view kCudaPrefix = "cuda:";
  if (text.starts_with(kCudaPrefix)) {
    const std::string_view ordinal = text.substr(kCudaPrefix.size());
    const auto [end, status] = std::from_chars(ordinal.data(), ordinal.data() + ordinal.size(), cuda_device);
    if (!ordinal.empty() && status == std::errc() && end == ordinal.data() + ordinal.size() && cuda_device >= 0) {
      return device_kind::cuda;
    }
  }
  reject("--device", text, "cpu, cuda, cuda:<k>, auto");
}

std::string name_of(cost_kind kind) {
  return kind == cost_kind::cosine ? "cosine" : "sqeuclidean";
}

std::string name_of(solver_kind kind) {
  return kind == solver_kind::symmetric ? "symmetric" : "alternating";
}

std::string name_of(precision mode) { return std::string(to_string(mode)); }

dtype output_dtype(precision mode) noexcept {
  return mode == precision::fp64 ? dtype::float64 : dtype::float32;
}

}  // namespace flashsinkhorn::cli
