// An array read from an input file: its shape and its values, kept in the dtype the file stored
// (float32 or float64) so the library sees exactly the numbers the user saved.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flashsinkhorn/array_view.hpp"

namespace flashsinkhorn::cli {

struct loaded_array {
  std::vector<std::int64_t> shape;  // C order; the element count is the product (1 for rank 0)
  dtype type = dtype::float64;
  std::vector<float> values_f32;    // filled when type == float32
  std::vector<double> values_f64;   // filled when type == float64

  [[nodiscard]] std::int64_t element_count() const noexcept;
  // Never null, even for an empty array, so that an empty input is not mistaken for "not given".
  [[nodiscard]] const void* data() const noexcept;
};

// "(3, 2)", "(5,)", "()": the shape as NumPy prints it.
[[nodiscard]] std::string shape_string(const std::vector<std::int64_t>& shape);

}  // namespace flashsinkhorn::cli
