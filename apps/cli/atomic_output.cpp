#include "atomic_output.hpp"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "bad_input.hpp"

namespace flashsinkhorn::cli {
namespace {

std::string errno_text() { return std::strerror(errno); }

// Creates a new empty file DIR/.<stem>.XXXXXX and returns its descriptor and path, or -1.
int make_temp_file(const std::filesystem::path& directory, const std::string& stem,
                   std::filesystem::path& path) {
  std::string pattern = (directory / ("." + stem + ".tmp.XXXXXX")).string();
  const int fd = ::mkstemp(pattern.data());
  if (fd >= 0) path = pattern;
  return fd;
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
  return true;
}

}  // namespace

atomic_output::atomic_output(std::filesystem::path directory) : directory_(std::move(directory)) {
  const std::string name = "--out " + directory_.string();
  std::error_code status_error;
  const auto status = std::filesystem::status(directory_, status_error);
  if (!std::filesystem::exists(status)) {
    if (::mkdir(directory_.c_str(), 0777) != 0) {
      throw bad_input(name + ": cannot create the directory: " + errno_text());
    }
    created_directory_ = true;
  } else if (!std::filesystem::is_directory(status)) {
    throw bad_input(name + ": exists and is not a directory");
  }
  std::filesystem::path probe;
  const int fd = make_temp_file(directory_, "write-probe", probe);
  if (fd < 0) {
    const std::string reason = errno_text();
    remove_everything();
    throw bad_input(name + ": the directory is not writable: " + reason);
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

atomic_output::~atomic_output() {
  if (!committed_) remove_everything();
}

void atomic_output::add(const std::string& file_name, std::string_view bytes) {
  const std::filesystem::path final_path = directory_ / file_name;
  std::filesystem::path temp_path;
  const int fd = make_temp_file(directory_, file_name, temp_path);
  if (fd < 0) throw std::runtime_error(final_path.string() + ": cannot create: " + errno_text());
  staged_.push_back({temp_path, final_path});
  // mkstemp creates 0600; give the result the permissions of an ordinary new file.
  const bool written = ::fchmod(fd, 0644) == 0 && write_all(fd, bytes) && ::fsync(fd) == 0;
  const std::string reason = errno_text();
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) {
    throw std::runtime_error(final_path.string() + ": cannot write: " + (written ? errno_text() : reason));
  }
}

void atomic_output::commit() {
  for (const staged_file& file : staged_) {
    if (::rename(file.temp_path.c_str(), file.final_path.c_str()) != 0) {
      const std::string reason = errno_text();
      remove_everything();
      throw std::runtime_error(file.final_path.string() + ": cannot rename into place: " + reason);
    }
    renamed_.push_back(file.final_path);
  }
  committed_ = true;
  staged_.clear();
}

void atomic_output::remove_everything() noexcept {
  for (const staged_file& file : staged_) ::unlink(file.temp_path.c_str());
  for (const std::filesystem::path& path : renamed_) ::unlink(path.c_str());
  staged_.clear();
  renamed_.clear();
  if (created_directory_) ::rmdir(directory_.c_str());  // fails harmlessly unless empty
  created_directory_ = false;
}

}  // namespace flashsinkhorn::cli
