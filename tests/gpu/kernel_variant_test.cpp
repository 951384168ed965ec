// FLASHSINKHORN_KERNEL's names (kernel_variant.hpp): host-only, runs in CI.
#include "cuda/kernel_variant.hpp"

#include <gtest/gtest.h>

#include <string>

#include "cuda/tile_config.hpp"
#include "flashsinkhorn/error.hpp"

namespace {

using flashsinkhorn::detail::parse_wgmma_variant;
using flashsinkhorn::detail::to_string;
using flashsinkhorn::detail::wgmma_variant;

TEST(kernel_variant, every_variant_parses_back_from_its_name) {
  for (const wgmma_variant v : {wgmma_variant::mma_sync, wgmma_variant::cpasync, wgmma_variant::tma,
                                wgmma_variant::ws, wgmma_variant::ws_rs})
    EXPECT_EQ(parse_wgmma_variant(to_string(v)), v) << to_string(v);
}

TEST(kernel_variant, unset_or_empty_is_the_compiled_default) {
  const wgmma_variant expected = flashsinkhorn::detail::tile::kWgmmaWs    ? wgmma_variant::ws
                                 : flashsinkhorn::detail::tile::kWgmmaTma ? wgmma_variant::tma
                                                                          : wgmma_variant::cpasync;
  EXPECT_EQ(parse_wgmma_variant(nullptr), expected);
  EXPECT_EQ(parse_wgmma_variant(""), expected);
}

TEST(kernel_variant, an_unknown_name_is_an_error_that_lists_the_names) {
  try {
    parse_wgmma_variant("halves");
    FAIL() << "no error for an unknown variant";
  } catch (const flashsinkhorn::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("got 'halves'"), std::string::npos) << message;
    EXPECT_NE(message.find("mma, cpasync, tma, ws, wsrs"), std::string::npos) << message;
  }
}

}  // namespace
