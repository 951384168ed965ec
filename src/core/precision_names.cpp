// See options.hpp: the canonical names of the precision modes.
#include "flashsinkhorn/options.hpp"

#include <utility>

namespace flashsinkhorn {
namespace {

constexpr std::pair<precision, std::string_view> kNames[] = {
    {precision::fp32, "fp32"}, {precision::fp64, "fp64"}, {precision::tf32, "tf32"}, {precision::bf16, "bf16"}};

}  // namespace

std::string_view to_string(precision mode) noexcept {
  for (const auto& [value, name] : kNames)
    if (value == mode) return name;
  return "fp32";
}

std::optional<precision> precision_from_string(std::string_view name) noexcept {
  for (const auto& [value, known] : kNames)
    if (known == name) return value;
  return std::nullopt;
}

}  // namespace flashsinkhorn
