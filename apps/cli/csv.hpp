// Comma-separated numbers, one row per line, every row the same length; a first line in which no
// field is a number is a header and is skipped. Blank lines are ignored; "\r\n" endings are accepted.
// Values are read as float64 (shape (rows, columns)).
#pragma once

#include <filesystem>

#include "loaded_array.hpp"

namespace flashsinkhorn::cli {

// Throws bad_input naming the file and line of the first problem (a non-number, a row of the
// wrong length, no data rows).
[[nodiscard]] loaded_array read_csv_file(const std::filesystem::path& path);

}  // namespace flashsinkhorn::cli
