// Opening an input file with an error message that names it and says what went wrong.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace flashsinkhorn::cli {

struct opened_file {
  std::ifstream stream;  // binary mode, positioned at the start
  std::uint64_t size = 0;
};

// Throws bad_input ("<path>: no such file", "<path>: is a directory", "<path>: cannot open: …").
[[nodiscard]] opened_file open_input_file(const std::filesystem::path& path);

}  // namespace flashsinkhorn::cli
