// Loads an input array from a .npy, .npz or .csv file, chosen by the file's extension.
#pragma once

#include <string>

#include "flashsinkhorn/array_view.hpp"
#include "loaded_array.hpp"

namespace flashsinkhorn::cli {

// Throws bad_input for any other extension ("<path>: unsupported file type '.txt'; …") and for
// every problem the format readers detect.
[[nodiscard]] loaded_array load_array_file(const std::string& path);

// Views of a loaded array as the library wants them; `name` (the file) prefixes errors.
// Points: a 1-D array of n values is n points in d = 1; a 2-D array is (n, d).
[[nodiscard]] matrix_view points_view(const loaded_array& array, const std::string& name);
// Weights: a 1-D array, or a 2-D array with one column or one row (a .csv column or line).
[[nodiscard]] vector_view weights_view(const loaded_array& array, const std::string& name);

}  // namespace flashsinkhorn::cli
