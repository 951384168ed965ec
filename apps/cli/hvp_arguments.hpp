// The arguments of `flashsinkhorn hvp`: a balanced problem as for `solve` (no reach, no debiasing,
// squared-Euclidean cost — what the library's HVP supports), the direction file, the side and part
// of the Hessian, the CG settings, and the (required) output directory.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "flashsinkhorn/hessian.hpp"
#include "flashsinkhorn/options.hpp"
#include "problem_files.hpp"
#include "run_flags.hpp"

namespace flashsinkhorn::cli {

// --wrt: which product. x, y: H_xx·A (n, d) or H_yy·A (m, d) into hvp.npy; xy: the joint
// H·(A, B) (A from --dir, B from --dir-y) into hvp_x.npy (n, d) and hvp_y.npy (m, d); self: on a
// symmetric problem (X = Y, a = b), the Hessian of X ↦ OT(a, X; a, X) along A into hvp.npy.
enum class hvp_wrt { x, y, xy, self };

struct hvp_arguments {
  problem_files files;           // --x, --y, --a, --b, --eps, --cost-scale
  std::string direction_path;    // --dir: (n, d), or (m, d) for --wrt y
  std::string direction_y_path;  // --dir-y: (m, d), the Y direction of --wrt xy
  hvp_wrt wrt = hvp_wrt::x;
  options solve_options;       // solver, iterations, tolerance (default 1e-6 here), scaling
  hvp_options settings;        // part, CG tolerance, iteration cap, preconditioner, two-GEMM path
  std::string out_dir;
  int repeat = 0;              // --repeat: timed products after the first (hvp_seconds: their median)
  run_flags run;
};

// Throws bad_input on unknown flags, unparsable values and a missing --x, --y, --dir, --eps or
// --out (unless --help was given).
[[nodiscard]] hvp_arguments parse_hvp_arguments(std::span<const std::string> args);

[[nodiscard]] std::string hvp_usage();

// The CLI's words for the enums: full | fixed | implicit, fused | generic.
[[nodiscard]] std::string name_of(hvp_part part);
[[nodiscard]] std::string name_of(two_gemm_path path);
[[nodiscard]] std::string name_of(cg_preconditioner preconditioner);
[[nodiscard]] std::string name_of(hvp_wrt wrt);

}  // namespace flashsinkhorn::cli
