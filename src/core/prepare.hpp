// From the caller's problem to what every backend is built from (see prepared_cloud.hpp), plus
// what the solver needs afterwards to map results back to the caller's coordinates.
#pragma once

#include <cstdint>
#include <vector>

#include "core/prepared_cloud.hpp"
#include "flashsinkhorn/options.hpp"
#include "flashsinkhorn/problem.hpp"

namespace flashsinkhorn::detail {

struct prepared_inputs {
  prepared_problem kernel;       // centred (and normalised) clouds, normalised weights
  std::int64_t dim = 0;          // d of X and Y as given (the kernels' dim adds the label coordinates)
  std::vector<double> x_input;   // (n, d) X as given, float64
  std::vector<double> y_input;   // (m, d) Y as given
  std::vector<double> x_norms;   // (n,) ‖x_i‖ for the cosine chain rule (empty otherwise)
  std::vector<double> y_norms;   // (m,)
  double mass_a = 1;             // Σ a as given (1 for uniform)
  double mass_b = 1;
  double diameter = 0;           // of the joint bounding box (GeomLoss's max_diameter); with a label
                                 // cost √(diag² + (λy/λx)·max W over the labels present), so that
                                 // s'·diameter² bounds every C_ij
  std::vector<double> initial_f, initial_g;  // warm start, empty when cold
};

// Reads and validates every array, then centres, normalises and computes log-weights.
prepared_inputs prepare(const problem& p, const options& o);

// Subtracts the joint weighted mean ½(Σ ã_i x_i + Σ b̃_j y_j) from both clouds (weights taken over
// their sums). Part of prepare(); exposed for tests and benchmarks that build a prepared_problem.
void centre_clouds(prepared_problem& problem);

// Fills cloud.key_points = η⊙cloud.points (clears it when negative_dim == 0). Part of prepare(),
// after centring.
void make_key_points(prepared_cloud& cloud);

}  // namespace flashsinkhorn::detail
