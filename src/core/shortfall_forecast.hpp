// Whether a single-precision product's sparse CG will fall short and be redone in float64
// (float64_replica.hpp), foreseen from the solved plan before the attempt: near a matching, rows
// whose softmax a float32 sum sees as a single entry cut the Schur complement into weakly coupled
// pieces, and its near-null directions sink below single precision's rounding (docs/math.md).
//
// The statistic: the share of x rows (keyed by g, the HVP's plan) with row entropy
// H_i = −Σ_j s_ij log s_ij below kSingleMatchEntropy. One-sided: on the CPU backend every case with
// a share ≥ kForeseenShortfallShare fell short, in fp32, tf32 and bf16 alike (session 55:
// bench/studies/single_precision_shortfall.py, 44 of 44 by this statistic, 100 of 100 by the row's
// leak 1 − max_j s_ij < 1e-6), while a lower share promises nothing (6 of 67 below fell short).
// H_i = lse_i − Σ_j s_ij S_ij, S_ij = (g_j − C_ij)/ε + log b_j, from one float64 pass with one value
// column V_j = g_j/ε + log b_j and the cost: Σ_j s_ij S_ij = weighted_i − cost_i/ε. (In float64 the
// cancellation against |S| ~ 10³ leaves ~1e-13; single-precision passes could not resolve 1e-5.)
#pragma once

#include "core/backend.hpp"
#include "core/prepared_cloud.hpp"

namespace flashsinkhorn::detail {

inline constexpr double kSingleMatchEntropy = 1e-5;
inline constexpr double kForeseenShortfallShare = 0.09;

// FLASHSINKHORN_SHORTFALL_FORECAST: on (unset) or off (every product tries single precision first,
// as before session 55: the A/B of the forecast); invalid_argument naming the variable otherwise.
[[nodiscard]] bool shortfall_forecast_enabled();

// The share of x rows with H_i < kSingleMatchEntropy, from one pass of `float64_compute` (a float64
// backend holding the solve's potentials: the solver's replica) over `problem` at `eps`.
[[nodiscard]] double single_match_share(const backend& float64_compute, const prepared_problem& problem, double eps);

}  // namespace flashsinkhorn::detail
