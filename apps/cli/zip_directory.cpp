#include "zip_directory.hpp"

#include <algorithm>

#include "bad_input.hpp"

namespace flashsinkhorn::cli {
namespace {

constexpr std::uint32_t kEndOfDirectorySignature = 0x06054b50;
constexpr std::uint32_t kZip64EndOfDirectorySignature = 0x06064b50;
constexpr std::uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr std::uint32_t kDirectoryEntrySignature = 0x02014b50;
constexpr std::uint32_t kLocalHeaderSignature = 0x04034b50;
constexpr std::uint64_t kEndOfDirectoryBytes = 22;
constexpr std::uint64_t kMaxCommentBytes = 0xffff;
constexpr std::uint16_t kZip64ExtraId = 0x0001;
constexpr std::uint32_t kSaturated32 = 0xffffffff;

// Little-endian field access into a byte buffer with bounds checks.
class byte_reader {
 public:
  byte_reader(std::vector<unsigned char> bytes, const std::string& name)
      : bytes_(std::move(bytes)), name_(name) {}

  [[nodiscard]] std::uint64_t read(std::size_t offset, int width) const {
    if (offset + static_cast<std::size_t>(width) > bytes_.size()) corrupt();
    std::uint64_t value = 0;
    for (int i = width - 1; i >= 0; --i) value = (value << 8) | bytes_[offset + static_cast<std::size_t>(i)];
    return value;
  }
  [[nodiscard]] std::string text(std::size_t offset, std::size_t length) const {
    if (offset + length > bytes_.size()) corrupt();
    return {bytes_.begin() + static_cast<std::ptrdiff_t>(offset),
            bytes_.begin() + static_cast<std::ptrdiff_t>(offset + length)};
  }
  [[nodiscard]] std::size_t size() const noexcept { return bytes_.size(); }
  [[nodiscard]] const std::vector<unsigned char>& bytes() const noexcept { return bytes_; }
  [[noreturn]] void corrupt() const {
    throw bad_input(name_ + ": not a valid .npz (corrupt or truncated ZIP archive)");
  }

 private:
  std::vector<unsigned char> bytes_;
  const std::string& name_;
};

byte_reader read_range(std::istream& in, std::uint64_t offset, std::uint64_t length,
                       std::uint64_t archive_size, const std::string& name) {
  if (offset > archive_size || length > archive_size - offset) {
    throw bad_input(name + ": not a valid .npz (corrupt or truncated ZIP archive)");
  }
  std::vector<unsigned char> bytes(static_cast<std::size_t>(length));
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(length));
  if (in.gcount() != static_cast<std::streamsize>(length)) {
    throw bad_input(name + ": read error");
  }
  return {std::move(bytes), name};
}

struct directory_location {
  std::uint64_t entries = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

directory_location locate_directory(std::istream& in, std::uint64_t archive_size,
                                    const std::string& name) {
  if (archive_size < kEndOfDirectoryBytes) {
    throw bad_input(name + ": not a .npz file (too short to be a ZIP archive)");
  }
  const std::uint64_t tail_length = std::min(archive_size, kEndOfDirectoryBytes + kMaxCommentBytes);
  const std::uint64_t tail_offset = archive_size - tail_length;
  const byte_reader tail = read_range(in, tail_offset, tail_length, archive_size, name);
  std::size_t end_record = tail.size() - kEndOfDirectoryBytes;
  while (tail.read(end_record, 4) != kEndOfDirectorySignature) {
    if (end_record == 0) throw bad_input(name + ": not a .npz file (no ZIP end-of-directory record)");
    --end_record;
  }
  directory_location location{tail.read(end_record + 10, 2), tail.read(end_record + 16, 4),
                              tail.read(end_record + 12, 4)};
  const bool needs_zip64 = location.entries == 0xffff || location.offset == kSaturated32 ||
                           location.size == kSaturated32;
  if (needs_zip64) {
    const std::uint64_t locator = tail_offset + end_record;
    if (locator < 20) tail.corrupt();
    const byte_reader locator_record = read_range(in, locator - 20, 20, archive_size, name);
    if (locator_record.read(0, 4) != kZip64LocatorSignature) locator_record.corrupt();
    const byte_reader record = read_range(in, locator_record.read(8, 8), 56, archive_size, name);
    if (record.read(0, 4) != kZip64EndOfDirectorySignature) record.corrupt();
    location = {record.read(32, 8), record.read(48, 8), record.read(40, 8)};
  }
  return location;
}

// Replaces saturated 32-bit fields by the values of the entry's ZIP64 extra field, in the order
// the format fixes: uncompressed size, compressed size, local header offset.
void apply_zip64_extra(const byte_reader& directory, std::size_t extra, std::size_t extra_length,
                       zip_member& member, std::uint64_t& local_offset) {
  std::size_t field = extra;
  while (field + 4 <= extra + extra_length) {
    const auto id = directory.read(field, 2);
    const auto length = static_cast<std::size_t>(directory.read(field + 2, 2));
    if (id == kZip64ExtraId) {
      std::size_t value = field + 4;
      for (std::uint64_t* target : {&member.uncompressed_size, &member.compressed_size, &local_offset}) {
        if (*target != kSaturated32) continue;
        if (value + 8 > field + 4 + length) directory.corrupt();
        *target = directory.read(value, 8);
        value += 8;
      }
    }
    field += 4 + length;
  }
}

}  // namespace

std::vector<zip_member> read_zip_directory(std::istream& in, std::uint64_t archive_size,
                                           const std::string& name) {
  const directory_location location = locate_directory(in, archive_size, name);
  const byte_reader directory = read_range(in, location.offset, location.size, archive_size, name);
  std::vector<zip_member> members;
  std::size_t entry = 0;
  for (std::uint64_t i = 0; i < location.entries; ++i) {
    if (directory.read(entry, 4) != kDirectoryEntrySignature) directory.corrupt();
    zip_member member;
    member.method = static_cast<int>(directory.read(entry + 10, 2));
    member.compressed_size = directory.read(entry + 20, 4);
    member.uncompressed_size = directory.read(entry + 24, 4);
    const auto name_length = static_cast<std::size_t>(directory.read(entry + 28, 2));
    const auto extra_length = static_cast<std::size_t>(directory.read(entry + 30, 2));
    const auto comment_length = static_cast<std::size_t>(directory.read(entry + 32, 2));
    std::uint64_t local_offset = directory.read(entry + 42, 4);
    member.name = directory.text(entry + 46, name_length);
    apply_zip64_extra(directory, entry + 46 + name_length, extra_length, member, local_offset);

    const byte_reader local = read_range(in, local_offset, 30, archive_size, name);
    if (local.read(0, 4) != kLocalHeaderSignature) local.corrupt();
    member.data_offset = local_offset + 30 + local.read(26, 2) + local.read(28, 2);
    if (member.data_offset > archive_size || member.compressed_size > archive_size - member.data_offset) {
      local.corrupt();
    }
    members.push_back(std::move(member));
    entry += 46 + name_length + extra_length + comment_length;
  }
  return members;
}

}  // namespace flashsinkhorn::cli
