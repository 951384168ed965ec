// Lanczos's first vector q₁ (lanczos.hpp): N(0, I) from `seed`, or `start` plus start_noise times a
// random unit vector, normalised. Shared with the hybrid's dense check (dense_check.hpp), which begins
// as Lanczos does.
#pragma once

#include "flashsinkhorn/optim/lanczos.hpp"
#include "optim/vector_ops.hpp"

namespace flashsinkhorn::optim::detail {

[[nodiscard]] host_vector lanczos_start_vector(const lanczos_options& options, int dimension);

}  // namespace flashsinkhorn::optim::detail
