// The header of a NumPy .npy file: magic "\x93NUMPY", version (1.0, 2.0 or 3.0), a little-endian
// length (2 bytes in 1.0, 4 bytes after), then a Python dict literal such as
//   {'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), }
// padded with spaces and ending in '\n'. Format reference: numpy/lib/format.py.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flashsinkhorn::cli {

struct npy_header {
  std::string descr;  // e.g. "<f8"
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
};

// Parses the dict literal of a header (the text after the length field). Throws bad_input,
// prefixed with `name`, when it is not a dict with exactly 'descr', 'fortran_order' and 'shape'.
[[nodiscard]] npy_header parse_npy_header_dict(std::string_view text, const std::string& name);

// The dict literal numpy itself writes for this header (no padding).
[[nodiscard]] std::string format_npy_header_dict(const npy_header& header);

}  // namespace flashsinkhorn::cli
