// All-or-nothing output: files appear only on commit, and every failure path leaves nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "atomic_output.hpp"
#include "bad_input.hpp"
#include "scratch_directory.hpp"

namespace flashsinkhorn::cli {
namespace {

std::vector<std::string> listing(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string contents(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(AtomicOutput, FilesAppearOnlyOnCommit) {
  const scratch_directory dir;
  const auto out = dir.path() / "out";
  {
    atomic_output output(out);
    EXPECT_TRUE(std::filesystem::is_directory(out));
    output.add("f.npy", "first");
    output.add("g.npy", "second");
    EXPECT_FALSE(std::filesystem::exists(out / "f.npy"));
    output.commit();
  }
  EXPECT_EQ(listing(out), (std::vector<std::string>{"f.npy", "g.npy"}));
  EXPECT_EQ(contents(out / "g.npy"), "second");
  const auto permissions = std::filesystem::status(out / "f.npy").permissions();
  EXPECT_NE(permissions & std::filesystem::perms::others_read, std::filesystem::perms::none);
}

TEST(AtomicOutput, CommitReplacesExistingFiles) {
  const scratch_directory dir;
  dir.write("f.npy", "old");
  atomic_output output(dir.path());
  output.add("f.npy", "new");
  EXPECT_EQ(contents(dir.path() / "f.npy"), "old");
  output.commit();
  EXPECT_EQ(contents(dir.path() / "f.npy"), "new");
  EXPECT_EQ(listing(dir.path()), (std::vector<std::string>{"f.npy"}));
}

TEST(AtomicOutput, AbandonedOutputLeavesNothingAndRemovesTheDirectoryItCreated) {
  const scratch_directory dir;
  const auto out = dir.path() / "out";
  {
    atomic_output output(out);
    output.add("f.npy", "staged");
  }
  EXPECT_FALSE(std::filesystem::exists(out));

  dir.write("keep.txt", "mine");
  {
    atomic_output output(dir.path());
    output.add("f.npy", "staged");
  }
  EXPECT_EQ(listing(dir.path()), (std::vector<std::string>{"keep.txt"}));
}

TEST(AtomicOutput, FailedCommitRemovesWhatItRenamed) {
  const scratch_directory dir;
  std::filesystem::create_directory(dir.path() / "g.npy");  // rename onto a directory fails
  std::filesystem::create_directory(dir.path() / "g.npy" / "occupied");
  atomic_output output(dir.path());
  output.add("f.npy", "one");
  output.add("g.npy", "two");
  EXPECT_THROW(output.commit(), std::runtime_error);
  EXPECT_EQ(listing(dir.path()), (std::vector<std::string>{"g.npy"}));
}

TEST(AtomicOutput, UnusableDirectoriesAreBadInputNamingThem) {
  const scratch_directory dir;
  const auto file = dir.write("plain_file", "x");
  for (const std::filesystem::path& bad : {file, file / "sub", dir.path() / "missing" / "two_levels"}) {
    try {
      atomic_output output(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const bad_input& e) {
      EXPECT_NE(std::string(e.what()).find("--out " + bad.string() + ": "), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(listing(dir.path()), (std::vector<std::string>{"plain_file"}));
}

}  // namespace
}  // namespace flashsinkhorn::cli
