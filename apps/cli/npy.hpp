// NumPy .npy files: read float32/float64 arrays (either byte order, C order, format 1.0–3.0) and
// write little-endian float32/float64 arrays (format 1.0, header padded to 64 bytes like numpy).
#pragma once

#include <cstdint>
#include <filesystem>
#include <istream>
#include <span>
#include <string>
#include <vector>

#include "flashsinkhorn/array_view.hpp"
#include "loaded_array.hpp"

namespace flashsinkhorn::cli {

// Reads one .npy image from `in`, which holds exactly `byte_count` bytes of it (a file, or a
// member of an .npz archive). `name` prefixes every error message. Throws bad_input when the
// image is malformed, truncated, has trailing bytes, is Fortran-ordered, or is not float32/64.
[[nodiscard]] loaded_array read_npy(std::istream& in, std::uint64_t byte_count,
                                    const std::string& name);

[[nodiscard]] loaded_array read_npy_file(const std::filesystem::path& path);

// The bytes of a .npy file holding `values` (row-major, product(shape) elements) stored as
// `stored_as` (float32 values are rounded to nearest).
[[nodiscard]] std::string encode_npy(std::span<const double> values,
                                     const std::vector<std::int64_t>& shape, dtype stored_as);

}  // namespace flashsinkhorn::cli
