// Hopper warpgroup MMA primitives (sm_90a only; PTX ISA "Asynchronous Warpgroup Level Matrix
// Multiply-Accumulate"): the 128-byte-swizzled K-major shared-memory layout, its matrix
// descriptor, the fences, and D(64×128, fp32) = A(64×k)·B(128×k)ᵀ for tf32 (k = 8) and bf16
// (k = 16) — both k-steps are 32 bytes of a row — with A from shared memory or from registers.
//
// Layout ("panel"): a (rows, 32 words) slab of a K-major tile, one 128-byte line per row; the 16-byte
// chunk c of row r lives at chunk c ⊕ (r mod 8). A panel starts on a 1024-byte boundary, so the
// hardware's swizzle (address bits [4,7) ⊕ bits [7,10)) reproduces the same placement. Rows wider
// than 32 words use several panels, one after the other.
//
// Accumulator fragment of m64nN (per thread of the warpgroup, warp w, lane l, i = 0 … N/8 − 1):
//   d[4i + 0], d[4i + 1]  row 16w + l/4,      columns 8i + 2(l mod 4) + {0, 1}
//   d[4i + 2], d[4i + 3]  row 16w + l/4 + 8,  same columns.
#pragma once

#include <cstdint>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FLASHSINKHORN_WGMMA_ENABLED 1
#endif

namespace flashsinkhorn::detail::wgmma {

inline constexpr int kPanelWords = 32;     // one 128-byte swizzle line
inline constexpr int kPanelRowBytes = 128;
inline constexpr int kPanelAlignment = 1024;  // 8 rows × 128 bytes: one swizzle period
inline constexpr int kStepBytes = 32;      // one k-step of tf32 (8 values) or bf16 (16 values)
inline constexpr int kTileN = 128;         // keys per MMA (m64n128)
inline constexpr int kAccumulators = 64;   // fp32 values of the 64×128 tile per thread

// Byte offset of 16-byte chunk `chunk` (0 … 7) of row `row` inside a panel.
__host__ __device__ __forceinline__ int panel_offset(int row, int chunk) {
  return row * kPanelRowBytes + ((chunk ^ (row & 7)) << 4);
}

// Matrix descriptor of a swizzled K-major operand starting at shared address `address`
// (bits 0–13 start >> 4, 16–29 leading offset (unused for swizzled K-major: 1), 32–45 stride
// offset between 8-row groups = 1024 B, 62–63 swizzle mode 1 = 128 B). Advancing by a k-step
// adds kStepBytes >> 4 to the start field: within a 1024-aligned panel the swizzle is unchanged.
__device__ __forceinline__ std::uint64_t make_descriptor(std::uint32_t address) {
  std::uint64_t desc = (address & 0x3FFFFu) >> 4;
  desc |= std::uint64_t{1} << 16;
  desc |= std::uint64_t{kPanelAlignment >> 4} << 32;
  desc |= std::uint64_t{1} << 62;
  return desc;
}

#if defined(FLASHSINKHORN_WGMMA_ENABLED)

// Orders this thread's register accesses before the following wgmma (PTX: required whenever the
// accumulators were touched by other instructions).
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit_group() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wait_group() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Shared memory written through the generic proxy (st.shared, cp.async) becomes visible to the
// async proxy (wgmma operand reads) after this fence in the writing thread and a barrier.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Register reallocation between the warpgroups of a CTA (PTX setmaxnreg; every thread of the
// warpgroup executes it): the producer gives registers back, the consumers take them.
template <int kRegisters>
__device__ __forceinline__ void release_registers() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}
template <int kRegisters>
__device__ __forceinline__ void claim_registers() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}

// Keeps the compiler from moving accesses of `d` across an async MMA boundary.
__device__ __forceinline__ void pin(float (&d)[kAccumulators]) {
#pragma unroll
  for (int i = 0; i < kAccumulators; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

#define FS_WGMMA_D_LIST                                                                             \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
  "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, "  \
  "%40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, "  \
  "%59, %60, %61, %62, %63}"
#define FS_WGMMA_D8(i)                                                                              \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]),     \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define FS_WGMMA_D_OPERANDS                                                                        \
  FS_WGMMA_D8(0), FS_WGMMA_D8(8), FS_WGMMA_D8(16), FS_WGMMA_D8(24), FS_WGMMA_D8(32), FS_WGMMA_D8(40), \
      FS_WGMMA_D8(48), FS_WGMMA_D8(56)

// d = (accumulate ? d : 0) + A·Bᵀ, A = 64 rows × 8 tf32, B = 128 keys × 8 tf32, both K-major.
__device__ __forceinline__ void mma_tf32(float (&d)[kAccumulators], std::uint64_t desc_a, std::uint64_t desc_b,
                                         int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 " FS_WGMMA_D_LIST ", %64, %65, p, 1, 1;\n}\n"
      : FS_WGMMA_D_OPERANDS
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

// The same for bf16 (k = 16), no transposes.
__device__ __forceinline__ void mma_bf16(float (&d)[kAccumulators], std::uint64_t desc_a, std::uint64_t desc_b,
                                         int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " FS_WGMMA_D_LIST ", %64, %65, p, 1, 1, 0, 0;\n}\n"
      : FS_WGMMA_D_OPERANDS
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

// The same with A from registers (wgmma's RS form): a[0..3] = this thread's words of the 64×k
// A slab, layout of mma.m16n8k8 (tf32) / m16n8k16 (bf16) per warp w of the warpgroup (rows 16w …
// 16w + 15): a0 (row g, word t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4) of the k-step's
// 8 words, g = lane/4, t = lane mod 4. Only B is read from shared memory.
__device__ __forceinline__ void mma_tf32(float (&d)[kAccumulators], const std::uint32_t (&a)[4],
                                         std::uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 " FS_WGMMA_D_LIST
      ", {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
      : FS_WGMMA_D_OPERANDS
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
}

__device__ __forceinline__ void mma_bf16(float (&d)[kAccumulators], const std::uint32_t (&a)[4],
                                         std::uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " FS_WGMMA_D_LIST
      ", {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
      : FS_WGMMA_D_OPERANDS
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
}

// m64n64k8 tf32 with A from registers (the P·V product of the plan kernel, plan_wgmma_kernel.cuh):
// d holds the 64×64 fp32 tile (32 per thread, the layout above with i < 8), A as in the RS form
// above, B a K-major operand of 64 rows.
inline constexpr int kAccumulatorsN64 = 32;

__device__ __forceinline__ void mma_tf32_n64(float (&d)[kAccumulatorsN64], const std::uint32_t (&a)[4],
                                             std::uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, "
      "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
      : FS_WGMMA_D8(0), FS_WGMMA_D8(8), FS_WGMMA_D8(16), FS_WGMMA_D8(24)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
}

__device__ __forceinline__ void pin(float (&d)[kAccumulatorsN64]) {
#pragma unroll
  for (int i = 0; i < kAccumulatorsN64; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

#undef FS_WGMMA_D_OPERANDS
#undef FS_WGMMA_D8
#undef FS_WGMMA_D_LIST

#endif  // FLASHSINKHORN_WGMMA_ENABLED

}  // namespace flashsinkhorn::detail::wgmma
