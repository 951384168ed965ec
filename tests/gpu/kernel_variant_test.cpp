// FLASHSINKHORN_KERNEL's names (kernel_variant.hpp): host-only, runs in CI.
#include "cuda/kernel_variant.hpp"
#include "cuda/plan_points_narrow_launch.hpp"
#include "cuda/plan_rows_launch.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <utility>

#include "flashsinkhorn/error.hpp"

namespace {

using flashsinkhorn::precision;
using flashsinkhorn::detail::parse_wgmma_variant;
using flashsinkhorn::detail::to_string;
using flashsinkhorn::detail::wgmma_variant;

TEST(kernel_variant, every_variant_parses_back_from_its_name) {
  for (const precision mode : {precision::tf32, precision::bf16})
    for (const wgmma_variant v : {wgmma_variant::mma_sync, wgmma_variant::cpasync, wgmma_variant::tma, wgmma_variant::ws})
      EXPECT_EQ(parse_wgmma_variant(to_string(v), mode), v) << to_string(v);
}

TEST(kernel_variant, unset_or_empty_is_the_measured_default_of_each_precision) {
  EXPECT_EQ(parse_wgmma_variant(nullptr, precision::tf32), wgmma_variant::ws);
  EXPECT_EQ(parse_wgmma_variant("", precision::tf32), wgmma_variant::ws);
  EXPECT_EQ(parse_wgmma_variant(nullptr, precision::bf16), wgmma_variant::ws);
  EXPECT_EQ(parse_wgmma_variant("", precision::bf16), wgmma_variant::ws);
}

TEST(kernel_variant, an_unknown_name_is_an_error_that_lists_the_names) {
  try {
    parse_wgmma_variant("wsrs", precision::tf32);
    FAIL() << "no error for an unknown variant";
  } catch (const flashsinkhorn::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("got 'wsrs'"), std::string::npos) << message;
    EXPECT_NE(message.find("mma, cpasync, tma or ws (or unset)"), std::string::npos) << message;
  }
}

}  // namespace

namespace {

// A switch read from the environment: `name` → parsed value for the accepted spellings, and
// invalid_argument naming the choices (`message`) for `unknown`.
template <class Value = bool, class Parse>
void expect_switch(Parse parse, std::initializer_list<std::pair<const char*, Value>> accepted, const char* unknown,
                   const std::string& message) {
  for (const auto& [name, value] : accepted) EXPECT_EQ(parse(name), value) << (name == nullptr ? "(unset)" : name);
  try {
    parse(unknown);
    FAIL() << "no error for an unknown value";
  } catch (const flashsinkhorn::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

// Each of `bad` is refused with invalid_argument naming the variable `variable`.
template <class Parse>
void expect_rejected(Parse parse, std::initializer_list<const char*> bad, const char* variable) {
  for (const char* text : bad) {
    try {
      (void)parse(text);
      ADD_FAILURE() << text << " was accepted";
    } catch (const flashsinkhorn::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(variable), std::string::npos) << e.what();
    }
  }
}

TEST(kernel_variant, fp32_dots_are_fma_unless_3xtf32_is_asked_for) {
  expect_switch(flashsinkhorn::detail::parse_fp32_fma_dots,
                {{nullptr, true}, {"", true}, {"fma", true}, {"3xtf32", false}}, "FMA",
                "3xtf32 or fma (or unset), got 'FMA'");
}

TEST(kernel_variant, point_gradients_take_the_narrow_pass_unless_tensor_is_asked_for) {
  expect_switch(flashsinkhorn::detail::parse_point_gradient_pass,
                {{nullptr, true}, {"", true}, {"narrow", true}, {"tensor", false}}, "Narrow",
                "narrow or tensor (or unset), got 'Narrow'");
}

TEST(kernel_variant, narrow_softmin_references_are_chosen_where_they_pay_unless_one_is_asked_for) {
  using flashsinkhorn::detail::narrow_reference;
  expect_switch<narrow_reference>(flashsinkhorn::detail::parse_narrow_reference,
                {{nullptr, narrow_reference::automatic},
                 {"", narrow_reference::automatic},
                 {"auto", narrow_reference::automatic},
                 {"online", narrow_reference::online},
                 {"predicted", narrow_reference::predicted}},
                "max", "auto, online or predicted (or unset), got 'max'");
  // Each choice's name (the benches' rows) parses back to it.
  for (const narrow_reference reference :
       {narrow_reference::automatic, narrow_reference::online, narrow_reference::predicted})
    EXPECT_EQ(flashsinkhorn::detail::parse_narrow_reference(flashsinkhorn::detail::to_string(reference)), reference);
}

TEST(kernel_variant, the_narrow_margin_is_96_unless_a_number_of_log2_units_up_to_100_is_given) {
  using flashsinkhorn::detail::parse_narrow_margin;
  EXPECT_EQ(parse_narrow_margin(nullptr), 96.f);
  EXPECT_EQ(parse_narrow_margin(""), 96.f);
  EXPECT_EQ(parse_narrow_margin("0"), 0.f);
  EXPECT_EQ(parse_narrow_margin("64"), 64.f);
  EXPECT_EQ(parse_narrow_margin("0.5"), 0.5f);
  EXPECT_EQ(parse_narrow_margin("100"), 100.f);
  expect_rejected(parse_narrow_margin, {"-1", "101", "nan", "inf", "64x", "x"}, "FLASHSINKHORN_NARROW_MARGIN");
}

TEST(kernel_variant, the_streamed_l2_budget_is_24_mib_unless_a_whole_number_up_to_1024_is_given) {
  using flashsinkhorn::detail::parse_streamed_l2_budget;
  constexpr std::int64_t kMiB = std::int64_t{1} << 20;
  EXPECT_EQ(parse_streamed_l2_budget(nullptr), 24 * kMiB);
  EXPECT_EQ(parse_streamed_l2_budget(""), 24 * kMiB);
  EXPECT_EQ(parse_streamed_l2_budget("0"), 0);  // the rule off
  EXPECT_EQ(parse_streamed_l2_budget("40"), 40 * kMiB);
  EXPECT_EQ(parse_streamed_l2_budget("1024"), 1024 * kMiB);
  expect_rejected(parse_streamed_l2_budget, {"-1", "1025", "2.5", "24M", "x"}, "FLASHSINKHORN_STREAMED_L2_MIB");
}

TEST(kernel_variant, the_query_pairs_are_on_unless_off_is_given) {
  using flashsinkhorn::detail::parse_streamed_query_pairs;
  expect_switch(parse_streamed_query_pairs, {{nullptr, true}, {"", true}, {"off", false}, {"on", true}}, "1",
                "FLASHSINKHORN_STREAMED_QUERY_PAIRS");
  expect_rejected(parse_streamed_query_pairs, {"ON", "yes", "auto"}, "FLASHSINKHORN_STREAMED_QUERY_PAIRS");
}

TEST(kernel_variant, the_plan_cluster_pairs_split_the_scores_in_tf32_and_multicast_in_bf16_unless_told) {
  using flashsinkhorn::precision;
  using flashsinkhorn::detail::parse_plan_cluster_pairs;
  using flashsinkhorn::detail::plan_pairing;
  for (const precision mode : {precision::tf32, precision::bf16}) {
    const plan_pairing automatic = mode == precision::tf32 ? plan_pairing::split_scores : plan_pairing::multicast;
    EXPECT_EQ(flashsinkhorn::detail::default_plan_pairing(mode), automatic);
    const auto parse = [mode](const char* text) { return parse_plan_cluster_pairs(text, mode); };
    expect_switch<plan_pairing>(parse,
                                {{nullptr, automatic},
                                 {"", automatic},
                                 {"auto", automatic},
                                 {"on", automatic},
                                 {"multicast", plan_pairing::multicast},
                                 {"split", plan_pairing::split_scores},
                                 {"off", plan_pairing::none}},
                                "1", "FLASHSINKHORN_PLAN_CLUSTER_PAIRS");
    expect_rejected(parse, {"ON", "yes", "split_scores"}, "FLASHSINKHORN_PLAN_CLUSTER_PAIRS");
    for (const plan_pairing pairing : {plan_pairing::none, plan_pairing::multicast, plan_pairing::split_scores})
      EXPECT_EQ(parse(flashsinkhorn::detail::to_string(pairing)), pairing);
  }
}

TEST(kernel_variant, a_plan_pair_needs_an_even_value_tile_count_and_splits_only_two_panels_or_more) {
  using flashsinkhorn::detail::plan_pairing;
  using flashsinkhorn::detail::plan_pairing_for;
  for (const plan_pairing chosen : {plan_pairing::none, plan_pairing::multicast, plan_pairing::split_scores}) {
    EXPECT_EQ(plan_pairing_for(chosen, 3, 16, true), plan_pairing::none);  // k = 384: three tiles of 128
    EXPECT_EQ(plan_pairing_for(chosen, 4, 16, true), chosen);              // k = 512
  }
  EXPECT_EQ(plan_pairing_for(plan_pairing::split_scores, 4, 1, true), plan_pairing::multicast);
  EXPECT_EQ(plan_pairing_for(plan_pairing::split_scores, 4, 2, true), plan_pairing::split_scores);
  EXPECT_EQ(plan_pairing_for(plan_pairing::split_scores, 4, 16, false), plan_pairing::multicast);
  EXPECT_EQ(plan_pairing_for(plan_pairing::multicast, 4, 1, false), plan_pairing::multicast);
}

TEST(kernel_variant, the_streamed_key_pairs_are_automatic_unless_on_or_off_is_given) {
  using flashsinkhorn::detail::key_pairs_mode;
  using flashsinkhorn::detail::parse_streamed_key_pairs;
  expect_switch<key_pairs_mode>(parse_streamed_key_pairs,
                {{nullptr, key_pairs_mode::automatic},
                 {"", key_pairs_mode::automatic},
                 {"auto", key_pairs_mode::automatic},
                 {"off", key_pairs_mode::off},
                 {"on", key_pairs_mode::on}},
                "1", "FLASHSINKHORN_STREAMED_KEY_PAIRS");
  expect_rejected(parse_streamed_key_pairs, {"ON", "yes", "pairs", "automatic"}, "FLASHSINKHORN_STREAMED_KEY_PAIRS");
}

// The plan passes follow the softmin's dots: float64 SIMT passes in fp64 and in fp32 with FMA dots
// (narrow rows only), tensor cores otherwise; FLASHSINKHORN_FP32_DOTS=3xtf32 keeps fp32 on them.
TEST(kernel_variant, plan_passes_are_float64_in_fp64_and_with_fp32_fma_dots) {
  using flashsinkhorn::detail::fp32_fma_dots_for;
  using flashsinkhorn::detail::plan_pass_is_float64;
  for (const std::int64_t padded_dim : {8, 16, 64, 1024}) {
    EXPECT_TRUE(plan_pass_is_float64(precision::fp64, padded_dim));
    EXPECT_FALSE(plan_pass_is_float64(precision::tf32, padded_dim));
    EXPECT_FALSE(plan_pass_is_float64(precision::bf16, padded_dim));
    EXPECT_EQ(plan_pass_is_float64(precision::fp32, padded_dim), fp32_fma_dots_for(padded_dim)) << padded_dim;
  }
  EXPECT_FALSE(plan_pass_is_float64(precision::fp32, 64));  // wider than the FMA softmin takes
  if (std::getenv("FLASHSINKHORN_FP32_DOTS") == nullptr) {     // the default
    EXPECT_TRUE(plan_pass_is_float64(precision::fp32, 8));
    EXPECT_TRUE(plan_pass_is_float64(precision::fp32, 16));
  }
}

}  // namespace

namespace {

TEST(kernel_variant, exponentials_stay_on_the_mufu_unless_split_is_asked_for) {
  expect_switch(flashsinkhorn::detail::parse_exp2_split,
                {{nullptr, false}, {"", false}, {"mufu", false}, {"split", true}}, "fma",
                "mufu or split (or unset), got 'fma'");
  for (const bool split : {false, true})
    EXPECT_EQ(flashsinkhorn::detail::parse_exp2_split(flashsinkhorn::detail::exp2_name(split)), split);
}

TEST(kernel_variant, fp32_passes_keep_float64_exponentials_unless_ex2_is_asked_for) {
  expect_switch(flashsinkhorn::detail::parse_fp32_pass_exp_by_ex2,
                {{nullptr, false}, {"", false}, {"float64", false}, {"ex2", true}}, "mufu",
                "float64 or ex2 (or unset), got 'mufu'");
  for (const bool by_ex2 : {false, true})
    EXPECT_EQ(flashsinkhorn::detail::parse_fp32_pass_exp_by_ex2(flashsinkhorn::detail::fp32_pass_exp_name(by_ex2)),
              by_ex2);
}

TEST(kernel_variant, the_hvp_factors_schur_systems_where_they_fit_unless_sparse_is_asked_for) {
  using flashsinkhorn::detail::schur_solve;
  expect_switch<schur_solve>(flashsinkhorn::detail::parse_schur_solve,
                             {{nullptr, schur_solve::automatic},
                              {"", schur_solve::automatic},
                              {"auto", schur_solve::automatic},
                              {"sparse", schur_solve::sparse},
                              {"dense", schur_solve::dense}},
                             "factor", "auto, sparse or dense (or unset), got 'factor'");
}

TEST(kernel_variant, float64_pass_names) {
  using flashsinkhorn::detail::float64_pass;
  expect_switch<float64_pass>(flashsinkhorn::detail::parse_float64_pass,
                              {{nullptr, float64_pass::automatic},
                               {"", float64_pass::automatic},
                               {"auto", float64_pass::automatic},
                               {"simt", float64_pass::simt},
                               {"gemm", float64_pass::gemm}},
                              "dgemm", "auto, simt or gemm (or unset), got 'dgemm'");
}

}  // namespace
