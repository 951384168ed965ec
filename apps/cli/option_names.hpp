// The command-line spellings of the library's option enums, both ways. Parsers throw bad_input
// naming the flag and listing the accepted words.
#pragma once

#include <string>
#include <string_view>

#include "flashsinkhorn/array_view.hpp"
#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::cli {

[[nodiscard]] cost_kind parse_cost_kind(std::string_view text);      // sqeuclidean | cosine
[[nodiscard]] solver_kind parse_solver_kind(std::string_view text);  // alternating | symmetric
[[nodiscard]] precision parse_precision(std::string_view text);      // fp32 | fp64 | tf32 | bf16

// cpu | cuda | cuda:<k> | auto; `cuda_device` receives k (0 when not given).
[[nodiscard]] device_kind parse_device(std::string_view text, int& cuda_device);

[[nodiscard]] std::string name_of(cost_kind kind);
[[nodiscard]] std::string name_of(solver_kind kind);
[[nodiscard]] std::string name_of(precision mode);

// Potentials and projections are written as float64 in fp64 mode, float32 otherwise.
[[nodiscard]] dtype output_dtype(precision mode) noexcept;

}  // namespace flashsinkhorn::cli
