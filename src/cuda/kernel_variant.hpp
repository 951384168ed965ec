// Which Hopper (wgmma) softmin kernel runs. The default depends on the precision (measured on the
// H200, kernel_variant.cpp); for A/B runs (docs/cuda_backend.md) the environment variable
// FLASHSINKHORN_KERNEL names another for every precision:
//   mma      no wgmma: the mma.sync kernels (softmin_kernel.cuh)
//   cpasync  cp.async loads, a CTA barrier per tile (softmin_wgmma_kernel.cuh, and
//            softmin_wgmma_streamed_kernel.cuh for wide rows)
//   tma      resident rows: copy-engine loads, per-stage barriers (softmin_wgmma_tma_kernel.cuh)
//   ws       resident rows: warp-specialised, query block in registers (softmin_wgmma_ws_kernel.cuh)
// Rows wider than the resident limit take the warp-specialised streamed kernel
// (softmin_wgmma_ws_streamed_kernel.cuh) under every variant but cpasync and mma.
#pragma once

#include <cstdint>

#include "cuda/plan_pairing.hpp"
#include "flashsinkhorn/options.hpp"

namespace flashsinkhorn::detail {

enum class wgmma_variant { mma_sync, cpasync, tma, ws };

// The variant a FLASHSINKHORN_KERNEL value names for `mode`; null or empty: the default for
// `mode`. An unknown name throws invalid_argument listing the names above.
wgmma_variant parse_wgmma_variant(const char* name, precision mode);

// The variant of this process for `mode`: parse_wgmma_variant(FLASHSINKHORN_KERNEL, mode), the
// environment read once.
wgmma_variant selected_wgmma_variant(precision mode);

// Its name as FLASHSINKHORN_KERNEL spells it.
const char* to_string(wgmma_variant variant);

// How the fp32 mode forms its dot products for rows of at most tile::kSimtFp32MaxDim padded
// coordinates, from the environment variable FLASHSINKHORN_FP32_DOTS (read once):
//   fma     (unset or empty: the default) the narrow-row softmin's fp32 FMAs (2⁻²⁴, as on the
//           CPU backend; softmin_narrow_kernel.cuh), and float64 plan passes on the float points
//           (plan_rows_launch.hpp, plan_pass_is_float64), which the fp32 Hessian's CG needs at
//           large cost scales (docs/cuda_backend.md, "fp32 Hessian products at a large cost scale")
//   3xtf32  the tensor-core kernels' split 3×TF32 products (~2⁻²¹): up to 1.6× faster softmin at
//           d = 8, but the fp32 HVP's CG can fail there
// Wider rows keep the tensor cores (3×TF32) either way. An unknown value throws invalid_argument.
bool parse_fp32_fma_dots(const char* name);
// Whether an fp32 softmin over rows of `padded_dim` runs the FMA-dot kernel in this process.
bool fp32_fma_dots_for(std::int64_t padded_dim);

// The row references of the softmin kernels that can predict them — the fp32 narrow one
// (softmin_narrow_kernel.cuh) and the tf32/bf16 warp-specialised wgmma one (softmin_wgmma_ws_kernel.cuh)
// — from the environment variable FLASHSINKHORN_NARROW_REFERENCE (read once; the name is the narrow
// kernel's, which had them first):
//   online     the running maximum of each row's scores
//   predicted  the LSE the row's previous potential implies, with the online maximum as the fallback
//              of a CTA where it fails
//   auto       (unset or empty: the default) predicted where it pays (predicted_reference_rule.hpp:
//              both kernels on key splits of at least 8 tiles; the narrow one on rows of at most 8
//              coordinates, the wgmma one at any width where the rows are not split, else up to 16)
// tf32 softmins on rows of at most 2 coordinates run this kernel wherever it takes predicted
// references (softmin_launch.cu, tf32_runs_narrow), so `online` also keeps them on wgmma.
// An unknown value throws invalid_argument.
enum class narrow_reference { online, predicted, automatic };
narrow_reference parse_narrow_reference(const char* name);
// The choice of this process.
narrow_reference narrow_reference_choice();
// Its name as FLASHSINKHORN_NARROW_REFERENCE spells it.
const char* to_string(narrow_reference reference);

// Where the predicted tiles of the warp-specialised wgmma kernel (softmin_wgmma_ws_kernel.cuh, rows of
// at most kExp2SplitMaxSteps k-steps) take their exponentials, from FLASHSINKHORN_EXP2 (read once):
//   mufu   (unset or empty: the default) every 2^x on the MUFU's ex2
//   split  one score in four by a cubic on the FMA pipe (math/exp2_cubic.hpp: relative error
//          ≤ 10⁻⁴, below tf32's and bf16's operand rounding), the rest on the MUFU, which bounds
//          these tiles (docs/cuda_backend.md, "What 2× needs at n ≥ 5·10⁴, d ≤ 16")
// Online tiles (a failed prediction's fallback, the two-CTA kernel's: there the issue slots, not the
// MUFU, are the bound — docs/cuda_backend.md) keep the MUFU. An unknown value throws invalid_argument.
bool parse_exp2_split(const char* name);
// The choice of this process; its name as FLASHSINKHORN_EXP2 spells it.
bool exp2_split_choice();
const char* exp2_name(bool split);
// The exponential of the fp32 mode's float64 plan passes on narrow rows (plan_rows_launch.hpp,
// plan_pass_is_float64: the one-column narrow pass and the SIMT pass on float points), from
// FLASHSINKHORN_FP32_PASS_EXP (read once):
//   float64  (unset or empty: the default) libdevice's exp in float64 (~17 FP64 instructions, which
//            bound these passes at d ≤ 16)
//   ex2      math/exp_by_exp2.hpp: the float64 reduction with 2^f by the MUFU (relative error
//            ≤ 4·10⁻⁷ a weight, every score still formed and summed in float64)
// The fp64 mode and the fp32 mode's float64 replica (double points) keep libdevice's exp. An
// unknown value throws invalid_argument.
bool parse_fp32_pass_exp_by_ex2(const char* name);
// The choice of this process; its name as FLASHSINKHORN_FP32_PASS_EXP spells it.
bool fp32_pass_exp_by_ex2();
const char* fp32_pass_exp_name(bool by_ex2);

// How the HVP's CG solves its sparse_plan preconditioner on the GPU, from FLASHSINKHORN_SCHUR_SOLVE
// (read once):
//   auto    (unset or empty: the default) every plan entry kept and S factored where it fits and
//           pays (dense_schur.hpp, dense_schur_fits), else the top entries' S_k by the inner CG
//   sparse  S_k by the inner CG at every size (sparse_schur.hpp): its tests on small problems
//   dense   S factored wherever it fits, whether or not a pass is dear beside the factor (the
//           m ≤ 80·d condition dropped): for A/B runs of that condition
// An unknown value throws invalid_argument.
enum class schur_solve { automatic, sparse, dense };
schur_solve parse_schur_solve(const char* name);
// The choice of this process.
schur_solve schur_solve_choice();
// Whether the dense preconditioner may be taken at all (not `sparse`).
inline bool dense_schur_enabled() { return schur_solve_choice() != schur_solve::sparse; }

// How the fp64 mode's plan passes form their dot products, from FLASHSINKHORN_FLOAT64_PASS (read once):
//   auto   (unset or empty: the default) the GEMM pass on rows of ≥ 512 coordinates, where it was
//          measured to win (plan_gemm_pass.hpp, kPlanGemmMinAutoDim), the SIMT pass on narrower ones
//   simt   the SIMT pass: one FMA chain a dot product on the SIMT pipe
//   gemm   the GEMM pass (plan_gemm_pass.hpp: the float64 tensor cores' DGEMM a block of rows at a
//          time) wherever it applies (no quadratic directions, its scratch reserved): for its tests
//          and A/B runs
// An unknown value throws invalid_argument.
enum class float64_pass { automatic, simt, gemm };
float64_pass parse_float64_pass(const char* name);
// The choice of this process.
float64_pass float64_pass_choice();

// Wider rows are bound by the tensor cores, not the exponentials: their instances keep the MUFU
// (fewer kernel instances to build). 8 k-steps: tf32 rows of ≤ 64 coordinates, bf16 of ≤ 128.
inline constexpr int kExp2SplitMaxSteps = 8;

// The margin M (log₂ units) the predicted references leave below the predicted LSE, from
// FLASHSINKHORN_NARROW_MARGIN (read once; unset or empty: 96, measured in kernel_variant.cpp). A CTA's
// guard accepts a row's sum over its split in [2⁻⁶⁰, 3·10³⁸], i.e. split LSEs within
// [pred − 60 − M, pred + 127.8 − M]: a margin moves the window toward the underflow of splits that hold
// little of a row's mass, which bench/studies/predicted_reference_window.py found to fail most CTAs at
// d ≥ 8 (the prediction itself is within ±5 after the first iteration). A number in [0, 100]; anything
// else throws invalid_argument.
float parse_narrow_margin(const char* text);
float narrow_margin_choice();

// The L2 budget (bytes) for the query blocks the streamed softmin kernels' resident CTAs read again
// for every key tile (key_splits.hpp, streamed_query_splits), from FLASHSINKHORN_STREAMED_L2_MIB in
// MiB (read once; unset or empty: 24, half the H100's and H200's 50 MiB of L2, where the keys and
// the other splits' traffic also live; 0 turns the rule off, for A/B runs). A whole number in
// [0, 1024]; anything else throws invalid_argument.
std::int64_t parse_streamed_l2_budget(const char* text);
std::int64_t streamed_l2_budget_choice();

// Whether the warp-specialised streamed softmin kernel runs in key pairs (clusters of two CTAs
// sharing each key panel by multicast: softmin_wgmma_ws_streamed_kernel.cuh), from
// FLASHSINKHORN_STREAMED_KEY_PAIRS (read once): auto (unset or empty: the default; pairs where
// key_splits.hpp's streamed_key_pairs_pay says so), on or off. Anything else throws invalid_argument.
enum class key_pairs_mode { automatic, on, off };
key_pairs_mode parse_streamed_key_pairs(const char* text);
key_pairs_mode streamed_key_pairs_choice();

// Whether, in key pairs, the last row block of an odd count runs its key splits in query pairs (the
// query panel shared: key_splits.hpp, key_pair_layout) rather than each with a ghost partner, from
// FLASHSINKHORN_STREAMED_QUERY_PAIRS (read once): on (unset or empty: the default; measured on the
// H100, 2026-12-06, streamed_l2_ab_h100_2026-12-06_s43.json: 6–10% off an iteration at 10⁴ rows,
// even at 5·10⁴) or off. Anything else throws invalid_argument.
bool parse_streamed_query_pairs(const char* text);
bool streamed_query_pairs_choice();

// How the streamed Hopper plan pass pairs its value tiles (plan_pairing.hpp,
// plan_wgmma_streamed_kernel.cuh), from FLASHSINKHORN_PLAN_CLUSTER_PAIRS (read once): auto (unset,
// empty or on: default_plan_pairing), multicast (two value tiles of one row block sharing every key
// and query panel by multicast), split (each CTA of the pair multiplies half of the panels and the
// two add their partial scores) or off. Anything else throws invalid_argument.
// The default, measured on the H100 (2026-12-06, gradient pass ms, multicast / split,
// plan_pass_l2_h100_2026-12-06_s44.json): tf32 10⁴ × 512 1.78 / 1.72, 10⁴ × 1,024 5.07 / 4.13,
// 2·10⁴ × 512 5.62 / 5.53, 5·10⁴ × 512 33.3 / 32.2 — split; bf16 1.21 / 1.42, 2.98 / 2.91, 3.83 /
// 4.51, 22.2 / 25.8 — multicast (its scores cost half of tf32's, so the exchange and the shorter
// ring outweigh the saved products). Multicast against none: plan_pass_l2_h100_2026-12-06_s43.json.
plan_pairing default_plan_pairing(precision mode);
plan_pairing parse_plan_cluster_pairs(const char* text, precision mode);
plan_pairing plan_cluster_pairs_choice(precision mode);
const char* to_string(plan_pairing pairing);  // off, multicast or split: what the variable takes

}  // namespace flashsinkhorn::detail
