// Decompression of a gzip file (RFC 1952) through zlib, for the IDX files of MNIST and
// Fashion-MNIST. Without zlib at configure time (FLASHSINKHORN_CLI_HAS_ZLIB undefined) every call
// throws bad_input saying so.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace flashsinkhorn::cli {

// The decompressed bytes of the gzip file `path` (the first member; multi-member files are
// concatenated as gzip(1) does). At most `max_bytes` are produced: a larger output is refused, so a
// corrupt or hostile file cannot exhaust memory. Throws bad_input naming the file when it is
// missing, not gzip, truncated, corrupt (bad deflate data or CRC) or too large.
[[nodiscard]] std::vector<std::uint8_t> gunzip_file(const std::filesystem::path& path, std::uint64_t max_bytes);

}  // namespace flashsinkhorn::cli
