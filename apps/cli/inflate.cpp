#include "inflate.hpp"

#include <limits>

#include "bad_input.hpp"

#ifdef FLASHSINKHORN_CLI_HAS_ZLIB
#include <zlib.h>
#endif

namespace flashsinkhorn::cli {

#ifdef FLASHSINKHORN_CLI_HAS_ZLIB

bool has_inflate() noexcept { return true; }

std::vector<char> inflate_member(std::istream& in, std::uint64_t compressed_size,
                                 std::uint64_t uncompressed_size, const std::string& name) {
  // Deflate cannot expand data by more than ~1032×; a larger claim is a corrupt directory.
  constexpr std::uint64_t kMaxDeflateRatio = 1032;
  if (uncompressed_size > compressed_size * kMaxDeflateRatio + 1024) {
    throw bad_input(name + ": corrupt .npz (impossible compressed size)");
  }
  std::vector<char> compressed(static_cast<std::size_t>(compressed_size));
  in.read(compressed.data(), static_cast<std::streamsize>(compressed_size));
  if (in.gcount() != static_cast<std::streamsize>(compressed_size)) {
    throw bad_input(name + ": truncated .npz member");
  }
  std::vector<char> output(static_cast<std::size_t>(uncompressed_size));

  z_stream stream{};
  if (inflateInit2(&stream, -MAX_WBITS) != Z_OK) throw bad_input(name + ": zlib failed to start");
  constexpr std::uint64_t kChunk = std::numeric_limits<uInt>::max();
  std::uint64_t consumed = 0;
  std::uint64_t produced = 0;
  int status = Z_OK;
  while (status == Z_OK) {
    stream.next_in = reinterpret_cast<Bytef*>(compressed.data() + consumed);
    stream.avail_in = static_cast<uInt>(std::min(kChunk, compressed_size - consumed));
    stream.next_out = reinterpret_cast<Bytef*>(output.data() + produced);
    stream.avail_out = static_cast<uInt>(std::min(kChunk, uncompressed_size - produced));
    const uInt in_before = stream.avail_in;
    const uInt out_before = stream.avail_out;
    status = inflate(&stream, Z_NO_FLUSH);
    consumed += in_before - stream.avail_in;
    produced += out_before - stream.avail_out;
    if (status == Z_OK && in_before == stream.avail_in && out_before == stream.avail_out) break;
  }
  inflateEnd(&stream);
  if (status != Z_STREAM_END || produced != uncompressed_size) {
    throw bad_input(name + ": corrupt or truncated deflate data in .npz");
  }
  return output;
}

#else

bool has_inflate() noexcept { return false; }

std::vector<char> inflate_member(std::istream&, std::uint64_t, std::uint64_t,
                                 const std::string& name) {
  throw bad_input(name + ": the .npz member is deflate-compressed (numpy.savez_compressed) but this "
                  "build has no zlib; save it with numpy.savez or as .npy");
}

#endif

}  // namespace flashsinkhorn::cli
