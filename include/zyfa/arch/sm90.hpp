// zyfa/arch/sm90.hpp -- NVIDIA sm_90 (H100/H200) instruction wrappers: mma.sync, ldmatrix, cp.async, ex2.
//
// Instructions (PTX ISA 8.x, "Warp-level matrix instructions"): mma.sync.aligned.m16n8k16.row.col.f32.bf16
// (introduced with sm_80, runs on sm_90's tensor cores), ldmatrix.sync.aligned.m8n8.x4[.trans].b16,
// cp.async.cg.shared.global (16 bytes, zero-fill through src-size), ex2.approx.ftz.f32.
// Fragment layouts are the PTX ISA's "Matrix Fragments for mma.m16n8k16" tables; lane l = 4*g + t with
// g = l/4 (group), t = l%4 (thread in group):
//   A (16x16, row-major): a0a1 = (row g,   k 2t..2t+1)   a2a3 = (row g+8, k 2t..2t+1)
//                         a4a5 = (row g,   k 2t+8..+9)   a6a7 = (row g+8, k 2t+8..+9)
//   B (16x8,  "col"):     b0b1 = (k 2t..2t+1, col g)     b2b3 = (k 2t+8..+9, col g)
//   C (16x8, fp32):       c0c1 = (row g, col 2t..2t+1)   c2c3 = (row g+8, col 2t..2t+1)
// The BF16 warp tile built on them is bf16/tile_sm90.hpp.
// Only compiled by nvcc (ZYFA_PLATFORM_CUDA); the mma/ldmatrix/cp.async forms need sm_80 or newer.
#pragma once
#include <cstdint>

#include "../platform/platform.hpp"

#if ZYFA_PLATFORM_CUDA

namespace zyfa::arch::sm90 {

/// Shared-memory address (32-bit, .shared window) of a generic pointer to shared memory.
__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

/// 16 bytes from shared memory as four words (ld.shared.v4.u32; `addr`: .shared window address, 16-byte aligned).
__device__ __forceinline__ uint4 ld_shared_16(std::uint32_t addr) {
  uint4 w;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w) : "r"(addr));
  return w;
}
/// 16 bytes to shared memory (st.shared.v4.u32; `addr`: .shared window address, 16-byte aligned).
__device__ __forceinline__ void st_shared_16(std::uint32_t addr, uint4 w) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(w.x), "r"(w.y), "r"(w.z), "r"(w.w)
               : "memory");
}

/// 16-byte global -> shared copy, asynchronous (cp.async.cg: L2 only). `valid == false` writes 16 zero
/// bytes and reads nothing (src-size 0); `src` must still be a valid global address.
__device__ __forceinline__ void copy16_async(void* smem_dst, const void* gmem_src, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem_dst)), "l"(gmem_src),
               "r"(src_bytes));
}
/// Closes the group of cp.async issued since the last commit.
__device__ __forceinline__ void copy_commit() { asm volatile("cp.async.commit_group;\n" ::); }
/// Waits until every committed cp.async group of this thread has landed in shared memory.
__device__ __forceinline__ void copy_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::); }

/// Four 8x8 b16 matrices from shared memory; lane l gives the (.shared window) row address of matrix l/8,
/// row l%8.
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t row_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(row_addr));
}
/// As ldmatrix_x4, each matrix transposed (gives B fragments of a row-major [k][n] tile).
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t row_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(row_addr));
}

/// D = A.B + D for one 16x8x16 bf16 tile with fp32 accumulators (layouts in the file comment).
__device__ __forceinline__ void mma_bf16_16x8x16(float& c0, float& c1, float& c2, float& c3,
                                                 const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  // Not volatile: a pure function of its operands, so the compiler may schedule it freely (ldmatrix and
  // cp.async stay volatile: they touch shared memory and must not cross barriers).
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// Two floats -> packed bf16x2 (round to nearest even); `lo` in bits 0..15.
__device__ __forceinline__ std::uint32_t pack_bf16x2(float lo, float hi) {
  std::uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

/// a * b + c on two packed bf16 lanes (fma.rn.bf16x2, sm_80+; PTX ISA "Half Precision Floating Point
/// Instructions: fma"). With b = 0 it maps every finite lane to +-0 and every Inf/NaN lane to NaN.
__device__ __forceinline__ std::uint32_t fma_bf16x2(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  std::uint32_t d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

/// Two floats -> two e4m3fn codes (cvt.rn.satfinite.e4m3x2.f32, sm_89+: round to nearest even, finite values beyond
/// 448 saturate to 448, NaN -> NaN); `lo` in bits 0..7, `hi` in bits 8..15 (PTX ISA "cvt": the first source goes
/// to the upper byte).
__device__ __forceinline__ std::uint16_t pack_e4m3x2(float lo, float hi) {
  std::uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}

/// 2^x (ex2.approx.ftz: ~2 ulp, subnormal results flushed to 0, exp2(-inf) = +0).
__device__ __forceinline__ float exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace zyfa::arch::sm90

#endif  // ZYFA_PLATFORM_CUDA
