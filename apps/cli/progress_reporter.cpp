#include "progress_reporter.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace flashsinkhorn::cli {
namespace {

constexpr int kBarWidth = 30;

}  // namespace

progress_reporter::progress_reporter(bool quiet, double tolerance)
    : quiet_(quiet), terminal_(::isatty(STDERR_FILENO) == 1), tolerance_(tolerance) {}

progress_reporter::~progress_reporter() { end_line(); }

void progress_reporter::end_line() {
  if (!line_open_) return;
  std::fputc('\n', stderr);
  std::fflush(stderr);
  line_open_ = false;
}

double progress_reporter::fraction_done(const progress& p) {
  double fraction = p.max_iterations > 0 ? static_cast<double>(p.iteration) / p.max_iterations : 0;
  if (std::isfinite(p.marginal_error) && p.marginal_error > 0) {
    if (first_error_ == 0) first_error_ = p.marginal_error;
    if (tolerance_ > 0 && first_error_ > tolerance_) {
      const double by_error = std::log(first_error_ / p.marginal_error) / std::log(first_error_ / tolerance_);
      fraction = std::max(fraction, by_error);
    }
  }
  return p.finished ? 1.0 : std::clamp(fraction, 0.0, 1.0);
}

void progress_reporter::report(const progress& p) {
  if (quiet_) return;
  if (!terminal_) {
    std::fprintf(stderr, "flashsinkhorn: iteration %d/%d  eps %.4g  marginal error %.3e  elapsed %.2fs%s\n",
                 p.iteration, p.max_iterations, p.eps, p.marginal_error, p.elapsed_seconds,
                 p.finished ? "  (done)" : "");
    std::fflush(stderr);
    return;
  }
  const auto filled = static_cast<int>(std::lround(fraction_done(p) * kBarWidth));
  const std::string bar = std::string(static_cast<std::size_t>(filled), '#') +
                          std::string(static_cast<std::size_t>(kBarWidth - filled), '.');
  // "\033[K" clears what a longer previous line left to the right.
  std::fprintf(stderr, "\r[%s] it %d/%d  eps %.3g  err %.2e  %.1fs\033[K", bar.c_str(), p.iteration,
               p.max_iterations, p.eps, p.marginal_error, p.elapsed_seconds);
  std::fflush(stderr);
  line_open_ = true;
  if (p.finished) end_line();
}

}  // namespace flashsinkhorn::cli
