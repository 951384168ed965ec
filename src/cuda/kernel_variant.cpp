#include "cuda/kernel_variant.hpp"

#include <cstdlib>
#include <string>
#include <string_view>

#include "cuda/tile_config.hpp"
#include "flashsinkhorn/error.hpp"

namespace flashsinkhorn::detail {
namespace {

constexpr wgmma_variant kVariants[] = {wgmma_variant::mma_sync, wgmma_variant::cpasync, wgmma_variant::tma,
                                       wgmma_variant::ws, wgmma_variant::ws_rs};

constexpr wgmma_variant compiled_default() {
  if (tile::kWgmmaWs) return wgmma_variant::ws;
  return tile::kWgmmaTma ? wgmma_variant::tma : wgmma_variant::cpasync;
}

}  // namespace

wgmma_variant parse_wgmma_variant(const char* name) {
  if (name == nullptr || *name == '\0') return compiled_default();
  std::string names;
  for (const wgmma_variant v : kVariants) {
    if (std::string_view(name) == to_string(v)) return v;
    names += std::string(names.empty() ? "" : ", ") + to_string(v);
  }
  throw invalid_argument("FLASHSINKHORN_KERNEL must be one of " + names + " (or unset), got '" + name + "'");
}

wgmma_variant selected_wgmma_variant() {
  static const wgmma_variant variant = parse_wgmma_variant(std::getenv("FLASHSINKHORN_KERNEL"));
  return variant;
}

const char* to_string(wgmma_variant variant) {
  switch (variant) {
    case wgmma_variant::mma_sync: return "mma";
    case wgmma_variant::cpasync: return "cpasync";
    case wgmma_variant::tma: return "tma";
    case wgmma_variant::ws: return "ws";
    case wgmma_variant::ws_rs: return "wsrs";
  }
  return "?";
}

}  // namespace flashsinkhorn::detail
