// Raw-deflate decompression (ZIP method 8) through zlib, for members written by
// numpy.savez_compressed. Without zlib at configure time (FLASHSINKHORN_CLI_HAS_ZLIB undefined)
// every call throws bad_input saying so.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace flashsinkhorn::cli {

// True when this build can decompress deflated .npz members.
[[nodiscard]] bool has_inflate() noexcept;

// Reads `compressed_size` bytes from `in` and inflates them into exactly `uncompressed_size`
// bytes. Throws bad_input, prefixed with `name`, on corrupt data or a size mismatch.
[[nodiscard]] std::vector<char> inflate_member(std::istream& in, std::uint64_t compressed_size,
                                               std::uint64_t uncompressed_size,
                                               const std::string& name);

}  // namespace flashsinkhorn::cli
