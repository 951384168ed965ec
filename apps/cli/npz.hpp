// NumPy .npz archives holding exactly one array (numpy.savez / savez_compressed with one
// argument): the member is read as a .npy image, stored or deflate-compressed.
#pragma once

#include <filesystem>

#include "loaded_array.hpp"

namespace flashsinkhorn::cli {

// Throws bad_input when the archive is malformed, holds zero or several arrays, or its member
// is not a supported .npy image (errors name it as "<path>[<member>]").
[[nodiscard]] loaded_array read_npz_file(const std::filesystem::path& path);

}  // namespace flashsinkhorn::cli
