#include "loaded_array.hpp"

namespace flashsinkhorn::cli {

std::int64_t loaded_array::element_count() const noexcept {
  std::int64_t count = 1;
  for (const std::int64_t extent : shape) count *= extent;
  return count;
}

const void* loaded_array::data() const noexcept {
  static constexpr double kEmptyPlaceholder = 0;  // a valid address for zero elements
  if (element_count() == 0) return &kEmptyPlaceholder;
  return type == dtype::float32 ? static_cast<const void*>(values_f32.data())
                                : static_cast<const void*>(values_f64.data());
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  if (shape.size() == 1) text += ",";
  return text + ")";
}

}  // namespace flashsinkhorn::cli
