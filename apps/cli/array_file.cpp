#include "array_file.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "bad_input.hpp"
#include "csv.hpp"
#include "npy.hpp"
#include "npz.hpp"

namespace flashsinkhorn::cli {

loaded_array load_array_file(const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (extension == ".npy") return read_npy_file(path);
  if (extension == ".npz") return read_npz_file(path);
  if (extension == ".csv") return read_csv_file(path);
  const std::string shown = extension.empty() ? "no extension" : "'" + extension + "'";
  throw bad_input(path + ": unsupported file type (" + shown + "); use .npy, .npz or .csv");
}

matrix_view points_view(const loaded_array& array, const std::string& name) {
  if (array.shape.size() == 1) return {array.data(), array.shape[0], 1, 1, array.type, memory_space::host, 0};
  if (array.shape.size() == 2) {
    return {array.data(), array.shape[0], array.shape[1], array.shape[1], array.type, memory_space::host, 0};
  }
  throw bad_input(name + ": points must be a 1-D or 2-D array (n, d), got shape " + shape_string(array.shape));
}

vector_view weights_view(const loaded_array& array, const std::string& name) {
  const bool is_vector = array.shape.size() == 1 ||
                         (array.shape.size() == 2 && (array.shape[0] == 1 || array.shape[1] == 1));
  if (!is_vector) {
    throw bad_input(name + ": weights must be a 1-D array, got shape " + shape_string(array.shape));
  }
  return {array.data(), array.element_count(), 1, array.type, memory_space::host, 0};
}

}  // namespace flashsinkhorn::cli
