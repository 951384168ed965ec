#include "npz.hpp"

#include <streambuf>

#include "bad_input.hpp"
#include "inflate.hpp"
#include "input_file.hpp"
#include "npy.hpp"
#include "zip_directory.hpp"

namespace flashsinkhorn::cli {
namespace {

constexpr int kStored = 0;
constexpr int kDeflated = 8;

// An istream source over bytes already in memory (an inflated member).
class memory_buffer : public std::streambuf {
 public:
  explicit memory_buffer(std::vector<char>& bytes) {
    setg(bytes.data(), bytes.data(), bytes.data() + bytes.size());
  }
};

std::string member_list(const std::vector<zip_member>& members) {
  std::string list;
  for (const zip_member& member : members) list += (list.empty() ? "" : ", ") + member.name;
  return list;
}

}  // namespace

loaded_array read_npz_file(const std::filesystem::path& path) {
  const std::string name = path.string();
  opened_file file = open_input_file(path);
  std::vector<zip_member> members = read_zip_directory(file.stream, file.size, name);
  std::erase_if(members, [](const zip_member& m) { return !m.name.empty() && m.name.back() == '/'; });
  if (members.size() != 1) {
    throw bad_input(name + ": holds " + std::to_string(members.size()) + " arrays" +
                    (members.empty() ? "" : " (" + member_list(members) + ")") +
                    "; expected exactly one");
  }
  const zip_member& member = members.front();
  const std::string member_name = name + "[" + member.name + "]";
  file.stream.clear();
  file.stream.seekg(static_cast<std::streamoff>(member.data_offset));
  if (member.method == kStored) {
    if (member.compressed_size != member.uncompressed_size) {
      throw bad_input(member_name + ": corrupt .npz (stored member with two sizes)");
    }
    return read_npy(file.stream, member.compressed_size, member_name);
  }
  if (member.method == kDeflated) {
    std::vector<char> bytes =
        inflate_member(file.stream, member.compressed_size, member.uncompressed_size, member_name);
    memory_buffer buffer(bytes);
    std::istream in(&buffer);
    return read_npy(in, bytes.size(), member_name);
  }
  throw bad_input(member_name + ": ZIP compression method " + std::to_string(member.method) +
                  " is not supported (only stored and deflate)");
}

}  // namespace flashsinkhorn::cli
