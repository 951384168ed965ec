#include "cuda/kernel_variant.hpp"

#include <cstdlib>
#include <optional>
#include <string>

#include "core/mib_setting.hpp"
#include "core/named_setting.hpp"
#include "cuda/tile_config.hpp"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {
namespace {

// The names of each setting's choices, as its environment variable spells them.
constexpr named_choice<wgmma_variant> kVariants[] = {
    {"mma", wgmma_variant::mma_sync}, {"cpasync", wgmma_variant::cpasync}, {"tma", wgmma_variant::tma},
    {"ws", wgmma_variant::ws}};
constexpr named_choice<bool> kFp32FmaDots[] = {{"3xtf32", false}, {"fma", true}};
constexpr named_choice<narrow_reference> kNarrowReferences[] = {
    {"auto", narrow_reference::automatic}, {"online", narrow_reference::online},
    {"predicted", narrow_reference::predicted}};
constexpr named_choice<bool> kExp2Splits[] = {{"mufu", false}, {"split", true}};
constexpr named_choice<bool> kFp32PassExps[] = {{"float64", false}, {"ex2", true}};
constexpr named_choice<schur_solve> kSchurSolves[] = {
    {"auto", schur_solve::automatic}, {"sparse", schur_solve::sparse}, {"dense", schur_solve::dense}};
constexpr named_choice<float64_pass> kFloat64Passes[] = {
    {"auto", float64_pass::automatic}, {"simt", float64_pass::simt}, {"gemm", float64_pass::gemm}};
constexpr named_choice<bool> kOffOn[] = {{"on", true}, {"off", false}};
constexpr named_choice<key_pairs_mode> kKeyPairsModes[] = {
    {"auto", key_pairs_mode::automatic}, {"on", key_pairs_mode::on}, {"off", key_pairs_mode::off}};
constexpr named_choice<std::optional<plan_pairing>> kPlanClusterPairs[] = {  // nullopt: the mode's default
    {"auto", std::nullopt},
    {"on", std::nullopt},
    {"multicast", plan_pairing::multicast},
    {"split", plan_pairing::split_scores},
    {"off", plan_pairing::none}};
constexpr named_choice<plan_pairing> kPlanPairings[] = {
    {"off", plan_pairing::none}, {"multicast", plan_pairing::multicast}, {"split", plan_pairing::split_scores}};

// The warp-specialised kernel for both modes (H100, tools/gpu_check.sh's reference stage, 2026-12-05,
// bench/results/narrow_reference_ab_h100_2026-12-05_s37.json, ms per iteration, two-CTA copy-engine
// kernel → warp-specialised one, bf16): n = 50,000, d = 8: 2.14 → 1.68; d = 3: 2.15 → 1.69;
// d = 64: 2.23 → 1.83; n = 200,000, d = 8: 33.2 → 26.3; n = 10,000, d = 8: 0.119 → 0.115. Until
// session 34 bf16 ran the two-CTA kernel (H200, 2026-11-30: 2.56 against 2.62 at n = 50,000,
// d = 64); since the warp-specialised kernel predicts its row references (one exponential a
// score instead of the online rescaling's extra ones) it wins bf16 too. tf32 (2026-11-30, H200):
// n = 200,000, d = 64: 55.8 → 48.2.
constexpr wgmma_variant default_variant(precision /*mode*/) { return wgmma_variant::ws; }

}  // namespace

wgmma_variant parse_wgmma_variant(const char* name, precision mode) {
  return parse_named_setting(name, "FLASHSINKHORN_KERNEL", kVariants, default_variant(mode));
}

wgmma_variant selected_wgmma_variant(precision mode) {
  // Parsed once (every launch asks); unset or empty: the default of each mode.
  static const char* const requested = std::getenv("FLASHSINKHORN_KERNEL");
  static const std::optional<wgmma_variant> chosen =
      requested == nullptr || *requested == '\0' ? std::nullopt
                                                  : std::optional(parse_wgmma_variant(requested, precision::tf32));
  return chosen.value_or(default_variant(mode));
}

bool parse_fp32_fma_dots(const char* name) {
  return parse_named_setting(name, "FLASHSINKHORN_FP32_DOTS", kFp32FmaDots, true);
}

bool fp32_fma_dots_for(std::int64_t padded_dim) {
  static const bool chosen = parse_fp32_fma_dots(std::getenv("FLASHSINKHORN_FP32_DOTS"));  // read once
  return padded_dim <= tile::kSimtFp32MaxDim && chosen;
}

narrow_reference parse_narrow_reference(const char* name) {
  return parse_named_setting(name, "FLASHSINKHORN_NARROW_REFERENCE", kNarrowReferences, narrow_reference::automatic);
}

narrow_reference narrow_reference_choice() {
  static const narrow_reference chosen = parse_narrow_reference(std::getenv("FLASHSINKHORN_NARROW_REFERENCE"));
  return chosen;
}

bool parse_exp2_split(const char* name) { return parse_named_setting(name, "FLASHSINKHORN_EXP2", kExp2Splits, false); }

bool exp2_split_choice() {
  static const bool chosen = parse_exp2_split(std::getenv("FLASHSINKHORN_EXP2"));  // read once
  return chosen;
}

const char* exp2_name(bool split) { return name_of(kExp2Splits, split); }

bool parse_fp32_pass_exp_by_ex2(const char* name) {
  return parse_named_setting(name, "FLASHSINKHORN_FP32_PASS_EXP", kFp32PassExps, false);
}

bool fp32_pass_exp_by_ex2() {
  static const bool chosen = parse_fp32_pass_exp_by_ex2(std::getenv("FLASHSINKHORN_FP32_PASS_EXP"));  // read once
  return chosen;
}

const char* fp32_pass_exp_name(bool by_ex2) { return name_of(kFp32PassExps, by_ex2); }

schur_solve parse_schur_solve(const char* name) {
  return parse_named_setting(name, "FLASHSINKHORN_SCHUR_SOLVE", kSchurSolves, schur_solve::automatic);
}

schur_solve schur_solve_choice() {
  static const schur_solve chosen = parse_schur_solve(std::getenv("FLASHSINKHORN_SCHUR_SOLVE"));  // read once
  return chosen;
}

float64_pass parse_float64_pass(const char* name) {
  return parse_named_setting(name, "FLASHSINKHORN_FLOAT64_PASS", kFloat64Passes, float64_pass::automatic);
}

float64_pass float64_pass_choice() {
  static const float64_pass chosen = parse_float64_pass(std::getenv("FLASHSINKHORN_FLOAT64_PASS"));  // read once
  return chosen;
}

// The default margin (kernel_variant.hpp), measured with FLASHSINKHORN_NARROW_REFERENCE=predicted (fp32,
// the forward benchmark, ms an iteration). H200, 2026-12-05, M = 0 / 32 / 64 / 96 against online
// (bench/results/narrow_reference_ab_margin_h200_2026-12-05_s33.json): n = 5·10⁴, d = 8: 4.90 / 3.52 /
// 2.97 / 2.88 against 3.35; d = 12: 8.83 / 6.70 / 5.64 / 4.10 against 4.88; d = 16: 12.0 / 10.6 / 8.21 /
// 6.80 against 5.44; n = 2·10⁵, d = 8: 50.2 / 47.0 / 45.8 / 43.6 against 51.8; d = 3: 2.12 for every M.
// H100, 2026-12-05, M = 64 / 96 against online (narrow_reference_ab_margin_h100_2026-12-05_s34.json):
// n = 2·10⁴, d = 8: 0.669 / 0.572 against 0.647; n = 5·10⁴, d = 8: 2.89 / 2.88 against 3.35; n = 2·10⁵,
// d = 8: 43.5 / 43.5 against 51.7; d = 12: 4.97 / 4.98 against 4.89 (on this card d = 12 still loses,
// so predicted references stay at d ≤ 8, softmin_launch.cu). 96 leaves 31.8 log₂ units above the
// prediction before a sum overflows; the prediction errs by at most ±5 after the first iteration
// (bench/studies/predicted_reference_window.py), and a CTA whose sum overflows all the same folds its
// keys again with the online maximum. The GPU tests ran under each default with predicted references
// forced at every d (M = 64: H200, 909672e; M = 96: this commit's gpu_check run, session 34).
constexpr float kDefaultNarrowMargin = 96.f;

float parse_narrow_margin(const char* text) {
  if (text == nullptr || *text == '\0') return kDefaultNarrowMargin;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(value >= 0 && value <= 100))
    throw invalid_argument(std::string("FLASHSINKHORN_NARROW_MARGIN must be a number of log2 units in [0, 100] (or unset), got '") +
                           text + "'");
  return static_cast<float>(value);
}

float narrow_margin_choice() {
  static const float chosen = parse_narrow_margin(std::getenv("FLASHSINKHORN_NARROW_MARGIN"));  // read once
  return chosen;
}

constexpr std::int64_t kDefaultStreamedL2MiB = 24;

std::int64_t parse_streamed_l2_budget(const char* text) {
  return parse_mib_setting(text, "FLASHSINKHORN_STREAMED_L2_MIB", kDefaultStreamedL2MiB, 1024);
}

std::int64_t streamed_l2_budget_choice() {
  static const std::int64_t chosen = parse_streamed_l2_budget(std::getenv("FLASHSINKHORN_STREAMED_L2_MIB"));  // read once
  return chosen;
}

key_pairs_mode parse_streamed_key_pairs(const char* text) {
  return parse_named_setting(text, "FLASHSINKHORN_STREAMED_KEY_PAIRS", kKeyPairsModes, key_pairs_mode::automatic);
}

key_pairs_mode streamed_key_pairs_choice() {
  static const key_pairs_mode chosen = parse_streamed_key_pairs(std::getenv("FLASHSINKHORN_STREAMED_KEY_PAIRS"));  // read once
  return chosen;
}

bool parse_streamed_query_pairs(const char* text) {
  return parse_named_setting(text, "FLASHSINKHORN_STREAMED_QUERY_PAIRS", kOffOn, true);
}

bool streamed_query_pairs_choice() {
  static const bool chosen = parse_streamed_query_pairs(std::getenv("FLASHSINKHORN_STREAMED_QUERY_PAIRS"));  // read once
  return chosen;
}

plan_pairing parse_plan_cluster_pairs(const char* text, precision mode) {
  return parse_named_setting(text, "FLASHSINKHORN_PLAN_CLUSTER_PAIRS", kPlanClusterPairs, std::optional<plan_pairing>())
      .value_or(default_plan_pairing(mode));
}

const char* to_string(plan_pairing pairing) { return name_of(kPlanPairings, pairing); }

plan_pairing default_plan_pairing(precision mode) {
  return mode == precision::tf32 ? plan_pairing::split_scores : plan_pairing::multicast;
}

plan_pairing plan_cluster_pairs_choice(precision mode) {
  static const char* const text = std::getenv("FLASHSINKHORN_PLAN_CLUSTER_PAIRS");  // read once
  static const plan_pairing tf32 = parse_plan_cluster_pairs(text, precision::tf32);
  static const plan_pairing others = parse_plan_cluster_pairs(text, precision::bf16);
  return mode == precision::tf32 ? tf32 : others;
}

const char* to_string(wgmma_variant variant) { return name_of(kVariants, variant); }

const char* to_string(narrow_reference reference) { return name_of(kNarrowReferences, reference); }

}  // namespace flashsinkhorn::detail
