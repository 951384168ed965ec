// The central directory of a ZIP archive (the container of .npz files), including the ZIP64
// extensions numpy uses for large arrays. Only what is needed to locate one member's bytes.
// Format reference: PKWARE APPNOTE.TXT, sections 4.3.7 (local header), 4.3.12 (central
// directory), 4.3.14–4.3.16 (end records), 4.5.3 (ZIP64 extra field).
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace flashsinkhorn::cli {

struct zip_member {
  std::string name;
  int method = 0;  // 0: stored, 8: deflate
  std::uint64_t compressed_size = 0;
  std::uint64_t uncompressed_size = 0;
  std::uint64_t data_offset = 0;  // where the member's (compressed) bytes start in the archive
};

// Lists the members of the archive in `in` (`archive_size` bytes). Throws bad_input, prefixed with
// `name`, when the archive is not a ZIP file or is truncated.
[[nodiscard]] std::vector<zip_member> read_zip_directory(std::istream& in,
                                                         std::uint64_t archive_size,
                                                         const std::string& name);

}  // namespace flashsinkhorn::cli
