// A backend that times every call of another one and prints a line per call to stderr:
//   flashsinkhorn trace: plan_rows x<-y k=64  0.512 ms  (host 1.204 ms before)
// ("host … before": the time since the previous traced call returned, the caller's own work.)
// The solver wraps its backend in one when the environment sets FLASHSINKHORN_TRACE=1 — where a
// Hessian-vector product or a gradient spends its time, without a profiler (the device machine
// has neither nsys nor hardware counters). Calls that return host results (plan passes, reads,
// solve_schur, take_error) synchronise, so their times include the device's work; a block of
// iterations and a point gradient are only enqueued (marked "enqueue": the next read waits for
// them). The backend's matrix store (the HVP's arrays and passes) is traced too, its device-side
// operations marked "enqueue". Single half-steps, copies and swaps are not printed. Results pass through unchanged.
// Every virtual of backend.hpp is forwarded: one added there with a default (supports_key_directions,
// matrices, solve_schur, read_potential_into, weighted_dual_terms, primal_terms) must be added here
// too, or the traced solver silently takes the default (for the last three: the copying host path).
#pragma once

#include <memory>

#include "core/backend.hpp"

namespace flashsinkhorn::detail {

[[nodiscard]] std::unique_ptr<backend> make_traced_backend(std::unique_ptr<backend> inner);

// Whether FLASHSINKHORN_TRACE asks for tracing (set and not "0").
[[nodiscard]] bool tracing_requested();

}  // namespace flashsinkhorn::detail
