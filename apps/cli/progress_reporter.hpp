// Progress of a solve on stderr, fed by options::on_progress. On a terminal: one bar redrawn in
// place with '\r' and ended with '\n' when the solve finishes (or this object is destroyed, so an
// error message starts on a fresh line). Otherwise: one plain line per report.
#pragma once

#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::cli {

class progress_reporter {
 public:
  // `tolerance`: the marginal error at which the solve stops (0: run all iterations).
  progress_reporter(bool quiet, double tolerance);
  ~progress_reporter();
  progress_reporter(const progress_reporter&) = delete;
  progress_reporter& operator=(const progress_reporter&) = delete;

  void report(const progress& p);

 private:
  // Fraction done: the larger of iterations used and log-distance of the error to the tolerance.
  [[nodiscard]] double fraction_done(const progress& p);
  void end_line();

  bool quiet_;
  bool terminal_;
  double tolerance_;
  double first_error_ = 0;
  bool line_open_ = false;
};

}  // namespace flashsinkhorn::cli
