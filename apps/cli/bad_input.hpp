// The one exception the command-line tool throws itself: the user's request or an input file is
// unusable (unknown flag, unparsable number, missing/truncated/malformed file, unwritable --out).
// main() prints its message as one line and exits with status 2, as it does for the library's
// flashsinkhorn::invalid_argument and flashsinkhorn::unsupported.
#pragma once

#include <stdexcept>

namespace flashsinkhorn::cli {

class bad_input : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace flashsinkhorn::cli
