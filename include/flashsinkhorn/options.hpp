// How to solve: cost, solver, precision, device, stopping rule, unbalanced reach, debiasing.
// Defaults follow the paper (cost_scale = 1, alternating updates, fp32 arithmetic).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

namespace flashsinkhorn {

enum class cost_kind {
  squared_euclidean,  // C_ij = s·‖x_i − y_j‖²
  cosine,             // C_ij = 1 − cos(x_i, y_j) = ½‖x̂_i − ŷ_j‖² on row-normalised inputs
};

enum class solver_kind {
  alternating,  // f ← T_f(g), then g ← T_g(f) (POT / OTT)
  symmetric,    // GeomLoss: f ← ½(f + T_f(g)), g ← ½(g + T_g(f)) simultaneously, final extrapolation
};

enum class precision {
  fp32,  // float32 operands, float32 FMA (CUDA: 3×TF32 split) — the accurate single-precision mode
  fp64,  // float64 everywhere
  tf32,  // dot products on TF32-rounded operands, float32 accumulation and float32 LSE
  bf16,  // dot products on BF16-rounded operands, float32 accumulation and float32 LSE
};

// The canonical names of the precision modes, "fp32", "fp64", "tf32", "bf16", both ways (the CLI's
// --precision words and the benchmarks' labels); nothing for any other name.
[[nodiscard]] std::string_view to_string(precision mode) noexcept;
[[nodiscard]] std::optional<precision> precision_from_string(std::string_view name) noexcept;

enum class device_kind {
  automatic,  // CUDA when this build has it and a GPU is present, else CPU
  cpu,
  cuda,
};

// Reported every `check_every` iterations — in the ε schedule too, at that stage's ε — and once at
// the end.
struct progress {
  int iteration = 0;
  int max_iterations = 0;
  double eps = 0;
  double marginal_error = 0;  // L1 marginal error (see result::marginal_error)
  double elapsed_seconds = 0;
  bool finished = false;
};

struct options {
  cost_kind cost = cost_kind::squared_euclidean;
  solver_kind solver = solver_kind::alternating;
  enum precision precision = precision::fp32;
  device_kind device = device_kind::automatic;
  int cuda_device = 0;
  // The caller's CUDA stream (the value of a cudaStream_t; 0 is the legacy default stream, which is
  // also what unset means): the CUDA backend reads CUDA inputs and writes CUDA outputs in this
  // stream's order — its work starts after what the caller enqueued there before the call, and what
  // it writes into the caller's memory is complete when the call returns. The iterations themselves
  // run on the backend's own stream (so that they can be replayed as CUDA graphs).
  std::optional<std::uintptr_t> cuda_stream;

  // ε-scaling (GeomLoss `scaling`, in (0, 1)): ε runs from diam² down to the target ε, the blur
  // √ε shrinking by this ratio each iteration. Unset: every iteration uses the target ε.
  std::optional<double> scaling;
  // Start of the ε schedule is diameter²; unset: the diagonal of the joint bounding box (GeomLoss).
  std::optional<double> diameter;

  int max_iterations = 1000;  // iterations after the ε schedule (each = one f and one g update)
  double tolerance = 1e-4;    // stop when the L1 marginal error ≤ tolerance; 0 runs max_iterations
  int check_every = 10;       // iterations between convergence checks (one device→host read each)

  // Over-relaxation ω of the alternating solver (Thibault, Chizat, Dossal, Papadakis 2017; Lehmann
  // et al. 2021), in (0, 2); 1 is plain Sinkhorn. The iterations at the target ε (after the ε
  // schedule, which gives the start that over-relaxation needs) update
  //   f ← (1 − ω)·f + ω·κT_f(g),   g ← (1 − ω)·g + ω·κT_g(f);
  // near the solution the rate per iteration goes from θ to about ω* − 1 with ω* = 2/(1 + √(1 − θ)),
  // e.g. θ = 0.998 → 0.91 at ω* ≈ 1.91. Measured (CPU, fp64, scaling 0.5): the shuffled-regression
  // loss at ε = 0.05, tol 1e-5 takes 3000 plain iterations, 420 at ω = 1.8, 270 at ω = 1.9.
  // The f-update of each checked iteration (the last of every check_every) stays plain, so that
  // result::marginal_error keeps its meaning; check_every = 1 therefore leaves only the g-updates
  // relaxed (about 2× instead of ~10× fewer iterations there). Safeguard: when a check's marginal
  // error exceeds the smallest earlier one by more than 1% (readings on a plateau differ by noise),
  // the rest of the solve runs with ω = 1 (result::relaxation_fell_back). The symmetric solver
  // refuses ω ≠ 1 (its ½-averaging is GeomLoss's loop).
  double relaxation = 1.0;
  // Adaptive over-relaxation (alternating solver): ω starts at `relaxation` and is re-estimated at
  // every check from the marginal error's observed rate r per iteration: the plain loop's rate
  // θ = (r + ω − 1)²/(r·ω²) (the SOR relation), then ω ← 2/(1 + √(1 − θ)) ≤ 1.999 (Lehmann et al.
  // 2021; OTT-JAX's Momentum estimates it once). A rise of the error halves ω − 1. Where the error
  // falls linearly this takes ~2× fewer iterations than a fixed ω = 1.8; where it falls sublinearly
  // (nearly disconnected clusters at small ε) about as many (core/relaxation_control.hpp).
  // The Python package and the CLI spell it relaxation = "auto": adaptive from ω = 1.8, the fixed
  // value that served the shuffled regression best (examples/shuffled_regression/README.md).
  bool adaptive_relaxation = false;
  static constexpr double auto_relaxation_start = 1.8;

  // Unbalanced OT (KL marginal penalty ρ = reach²) on the side of X and/or Y. Unset: balanced.
  std::optional<double> reach_x;
  std::optional<double> reach_y;

  // Return the Sinkhorn divergence S_ε = OT_ε(a,b) − ½OT_ε(a,a) − ½OT_ε(b,b) instead of OT_ε.
  bool debias = false;

  // Divide a and b by their sums before solving (the convention of SPEC §1). Off: the masses are
  // kept (GeomLoss's convention; balanced problems then need Σa = Σb).
  bool normalize_weights = true;

  // Fill result::primal_cost and result::relative_entropy in solve(): one more streamed pass over
  // the plan, as long as two to three half-steps on the GPU. Off: they are NaN, the solve is the
  // loop alone, and solver::primal_objective() computes them when asked.
  bool primal_terms = true;

  int cpu_threads = 0;  // 0: OpenMP's default

  // Called on the calling thread at every convergence check and once at the end; with it, every
  // check_every-th stage of the ε schedule measures its marginal error and reports it as well.
  std::function<void(const progress&)> on_progress;
};

}  // namespace flashsinkhorn
