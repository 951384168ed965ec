// prepare() (core/prepare.cpp) for a problem whose arrays live in CUDA memory, run on the device so
// that no array crosses to the host: the same checks with the same messages, the same steps in the
// same order, and the backend's storage (device_cloud.hpp) as the result:
//   validate    X, Y finite; a, b finite, ≥ 0, not all zero (the first offending index, as on the host);
//   weights     w̃ = w/Σw (options::normalize_weights), log w̃ (−∞ where 0); uniform 1/n when absent;
//   cosine      p = x/‖x‖ per row (a zero row is an error);
//   diameter    of the joint bounding box (unless options::diameter);
//   centre      p − μ, μ = ½(Σ w̃_i x_i/Σw̃ + Σ w̃_j y_j/Σw̃)  (C is translation invariant);
//   store       the mode's rounding (core/operand_rounding.hpp's, bit for bit) into the padded
//               storage layout, s·‖p‖² from the stored values, a float copy of p for tf32/bf16.
//   warm start  initial_f, initial_g (when given) finite, read as float64 potentials.
// What crosses: a few validation flags and sums, the offending value when there is one, and the
// diameter — scalars only, counted in `transfers`. Everything is ordered on `stream`.
// Not here (the solver copies those problems through the host): label costs.
#pragma once

#include <cuda_runtime.h>

#include <array>

#include "cuda/device_cloud.hpp"
#include "flashsinkhorn/options.hpp"
#include "flashsinkhorn/problem.hpp"
#include "flashsinkhorn/transfer_statistics.hpp"

namespace flashsinkhorn::detail {

struct device_prepared_problem {
  std::array<device_cloud, 2> clouds;  // x, y
  double cost_scale = 1;               // s, 0.5 for the cosine cost
  double mass_a = 1;                   // Σa as given (1 when uniform)
  double mass_b = 1;
  double diameter = 0;  // options::diameter, else the joint bounding box's diagonal
  // The warm start's potentials (n,), (m,) as float64; empty when the problem has none.
  device_buffer<double> initial_f, initial_g;
};

// Preconditions: validate_arguments(p, o) passed; p.x, p.y (and p.a, p.b, p.initial_f, p.initial_g
// when given) are views of CUDA memory (checked: on device o.cuda_device, which is current); no labels. Throws
// invalid_argument with prepare()'s messages.
device_prepared_problem prepare_on_device(const problem& p, const options& o, cudaStream_t stream,
                                          transfer_statistics* transfers);

}  // namespace flashsinkhorn::detail
