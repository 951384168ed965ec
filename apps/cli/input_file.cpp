#include "input_file.hpp"

#include <cerrno>
#include <cstring>
#include <system_error>

#include "bad_input.hpp"

namespace flashsinkhorn::cli {

opened_file open_input_file(const std::filesystem::path& path) {
  const std::string name = path.string();
  std::error_code status_error;
  const auto status = std::filesystem::status(path, status_error);
  if (!std::filesystem::exists(status)) throw bad_input(name + ": no such file");
  if (std::filesystem::is_directory(status)) throw bad_input(name + ": is a directory, not a file");

  opened_file file;
  errno = 0;
  file.stream.open(path, std::ios::binary);
  if (!file.stream) {
    const std::string reason = errno != 0 ? std::strerror(errno) : "unknown reason";
    throw bad_input(name + ": cannot open: " + reason);
  }
  std::error_code size_error;
  const std::uintmax_t size = std::filesystem::file_size(path, size_error);
  if (size_error) throw bad_input(name + ": cannot read its size: " + size_error.message());
  file.size = static_cast<std::uint64_t>(size);
  return file;
}

}  // namespace flashsinkhorn::cli
