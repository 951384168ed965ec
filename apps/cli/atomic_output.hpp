// All-or-nothing output of several files into one directory (--out DIR).
//
// Contract: the constructor creates DIR if it is missing (one level: its parent must exist) and
// proves it writable by creating and removing a probe file, so an unusable --out is reported
// (bad_input) before any solving. add() writes each file to a hidden temp file in DIR and
// flushes it to disk; commit() renames every temp file onto its final name. If an add() or the
// commit fails, or the object is destroyed without commit(), every temp file and every file this
// object already renamed is removed, and DIR too if this object created it and it is empty.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace flashsinkhorn::cli {

class atomic_output {
 public:
  explicit atomic_output(std::filesystem::path directory);
  ~atomic_output();
  atomic_output(const atomic_output&) = delete;
  atomic_output& operator=(const atomic_output&) = delete;

  // Stages `bytes` as DIR/file_name. Throws std::runtime_error naming the file on failure.
  void add(const std::string& file_name, std::string_view bytes);
  // Renames every staged file into place. Throws std::runtime_error (after cleaning up) on failure.
  void commit();

  [[nodiscard]] const std::filesystem::path& directory() const noexcept { return directory_; }

 private:
  struct staged_file {
    std::filesystem::path temp_path;
    std::filesystem::path final_path;
  };
  void remove_everything() noexcept;

  std::filesystem::path directory_;
  bool created_directory_ = false;
  bool committed_ = false;
  std::vector<staged_file> staged_;
  std::vector<std::filesystem::path> renamed_;
};

}  // namespace flashsinkhorn::cli
