#include "gunzip.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "bad_input.hpp"
#include "input_file.hpp"

#ifdef FLASHSINKHORN_CLI_HAS_ZLIB
#include <zlib.h>
#endif

namespace flashsinkhorn::cli {

#ifdef FLASHSINKHORN_CLI_HAS_ZLIB

namespace {

constexpr std::uint8_t kGzipMagic0 = 0x1f;
constexpr std::uint8_t kGzipMagic1 = 0x8b;
constexpr int kGzipWindowBits = 16 + MAX_WBITS;  // zlib: expect a gzip header and trailer (CRC-32, size)

std::vector<std::uint8_t> read_all(const std::filesystem::path& path) {
  opened_file file = open_input_file(path);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(file.size));
  file.stream.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (file.stream.gcount() != static_cast<std::streamsize>(bytes.size())) {
    throw bad_input(path.string() + ": cannot read the whole file");
  }
  return bytes;
}

// Inflates one gzip member starting at compressed[offset]; returns the offset after it.
std::size_t inflate_member(const std::vector<std::uint8_t>& compressed, std::size_t offset,
                           std::vector<std::uint8_t>& output, std::uint64_t max_bytes, const std::string& name) {
  z_stream stream{};
  if (inflateInit2(&stream, kGzipWindowBits) != Z_OK) throw bad_input(name + ": zlib failed to start");
  constexpr std::size_t kChunk = std::size_t{1} << 24;
  constexpr std::size_t kMaxStep = std::numeric_limits<uInt>::max();
  int status = Z_OK;
  std::size_t consumed = offset;
  while (status == Z_OK) {
    if (output.size() >= max_bytes) {
      inflateEnd(&stream);
      throw bad_input(name + ": decompresses to more than " + std::to_string(max_bytes) +
                      " bytes, more than an IDX file of this kind can hold");
    }
    const std::size_t produced = output.size();
    const std::size_t room = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, max_bytes - produced));
    output.resize(produced + room);
    stream.next_in = const_cast<Bytef*>(compressed.data() + consumed);
    stream.avail_in = static_cast<uInt>(std::min(kMaxStep, compressed.size() - consumed));
    stream.next_out = output.data() + produced;
    stream.avail_out = static_cast<uInt>(room);
    const uInt in_before = stream.avail_in;
    status = inflate(&stream, Z_NO_FLUSH);
    consumed += in_before - stream.avail_in;
    output.resize(produced + (room - stream.avail_out));
    // No progress with all input consumed: the stream ended early (Z_BUF_ERROR or Z_OK with nothing left).
    if (status == Z_BUF_ERROR || (status == Z_OK && consumed == compressed.size() && stream.avail_out > 0)) {
      inflateEnd(&stream);
      throw bad_input(name + ": truncated gzip file (the compressed data end before the stream does)");
    }
  }
  const std::string message = stream.msg != nullptr ? stream.msg : "unknown zlib error";
  inflateEnd(&stream);
  if (status != Z_STREAM_END) {
    throw bad_input(name + ": corrupt gzip data (" + message + ")");
  }
  return consumed;
}

}  // namespace

std::vector<std::uint8_t> gunzip_file(const std::filesystem::path& path, std::uint64_t max_bytes) {
  const std::string name = path.string();
  const std::vector<std::uint8_t> compressed = read_all(path);
  if (compressed.size() < 2 || compressed[0] != kGzipMagic0 || compressed[1] != kGzipMagic1) {
    throw bad_input(name + ": not a gzip file (expected the bytes 1f 8b at its start)");
  }
  std::vector<std::uint8_t> output;
  std::size_t offset = 0;
  while (offset < compressed.size()) {
    offset = inflate_member(compressed, offset, output, max_bytes, name);
    // gzip(1) skips zero padding after the last member; anything else must be another member.
    while (offset < compressed.size() && compressed[offset] == 0) ++offset;
    if (offset < compressed.size() &&
        (compressed.size() - offset < 2 || compressed[offset] != kGzipMagic0 || compressed[offset + 1] != kGzipMagic1)) {
      throw bad_input(name + ": trailing garbage after the gzip data");
    }
  }
  return output;
}

#else

std::vector<std::uint8_t> gunzip_file(const std::filesystem::path& path, std::uint64_t) {
  throw bad_input(path.string() + ": reading gzip files needs zlib, which this build of flashsinkhorn lacks "
                  "(install zlib1g-dev and rebuild)");
}

#endif

}  // namespace flashsinkhorn::cli
