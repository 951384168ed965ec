#include "flashsinkhorn/optim/report.hpp"

namespace flashsinkhorn::optim {

std::string_view to_string(optimizer_status status) noexcept {
  switch (status) {
    case optimizer_status::converged: return "converged";
    case optimizer_status::max_iterations: return "max_iterations";
    case optimizer_status::line_search_failed: return "line_search_failed";
    case optimizer_status::trust_radius_too_small: return "trust_radius_too_small";
    case optimizer_status::time_limit: return "time_limit";
    case optimizer_status::stopped: return "stopped";
  }
  return "unknown";
}

}  // namespace flashsinkhorn::optim
