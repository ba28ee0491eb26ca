// zyfa/bf16/tile_copy.hpp -- cooperative copy of a Rows x Cols bf16 tile from global to shared memory.
//
// Every thread of the block copies 16-byte chunks (Tile::copy16: cp.async on sm_90, a plain 16-byte
// load/store on AMD) into the swizzled layout of smem_layout.hpp. Rows >= rows_valid are zero-filled (tails:
// a zero K row gives a score that is masked anyway, a zero V row keeps 0 * garbage from producing NaN).
// Global offsets are 64-bit (row * row_stride in int64).
#pragma once
#include <cstdint>

#include "../platform/platform.hpp"
#include "smem_layout.hpp"

#if ZYFA_PLATFORM_CUDA
#include "../arch/sm90.hpp"
#endif

namespace zyfa::bf16 {

/// Copies rows [0, Rows) of the bf16 tile at `gmem` (row stride `row_stride` elements, 16-byte aligned rows)
/// into `smem` (SwizzledTile<Rows, Cols>), zero-filling rows >= rows_valid and columns >= ColsValid (a multiple of
/// 8: the real head dim of a padded tile; those columns of `gmem` are never read); `tid` in [0, Threads). On sm_90
/// the copy is asynchronous: the caller commits and waits (Tile::commit / Tile::wait_all) and synchronizes.
template <class Tile, int Threads, int Rows, int Cols, int ColsValid = Cols>
__device__ __forceinline__ void copy_tile(std::uint16_t* smem, const std::uint16_t* gmem, std::int64_t row_stride,
                                          int rows_valid, int tid) {
  using Layout = SwizzledTile<Rows, Cols>;
  constexpr int kChunks = Rows * Layout::kChunks;
  // Not unrolled on purpose: unrolled, the compiler keeps every iteration's addresses live across the key
  // loop and the sm_90 tiles with 32 query rows per warp spill (nvcc 13.0).
#pragma unroll 1
  for (int it = 0; it < (kChunks + Threads - 1) / Threads; ++it) {
    const int idx = it * Threads + tid;
    if (kChunks % Threads == 0 || idx < kChunks) {
      const int row = idx / Layout::kChunks;
      const int col = (idx % Layout::kChunks) * 8;
      const bool valid = row < rows_valid && (ColsValid == Cols || col < ColsValid);
      const std::uint16_t* src = valid ? gmem + static_cast<std::int64_t>(row) * row_stride + col : gmem;
      Tile::copy16(smem + Layout::offset(row, col), src, valid);
    }
  }
}

/// After this thread's copy_tile of the same tile has landed (Tile::wait_all): replaces every Inf/NaN bf16 element
/// of the chunks THIS thread copied by +0, in place, and returns whether it found one. Needs no barrier (each thread
/// touches only what it wrote); other threads see the result after the next barrier. Used on the V tiles that cross
/// the causal diagonal (fwd_kernel.hpp).
template <int Threads, int Rows, int Cols>
__device__ __forceinline__ bool sanitize_own_chunks(std::uint16_t* smem, int tid) {
  using Layout = SwizzledTile<Rows, Cols>;
  constexpr int kChunks = Rows * Layout::kChunks;
  constexpr int kIters = (kChunks + Threads - 1) / Threads;
  // When every thread keeps its chunk column and steps by a multiple of the swizzle group in rows, its chunks are
  // one base offset plus a constant stride: compile-time offsets, loads issued back to back (the built-in tiles).
  constexpr bool kStrided =
      kChunks % Threads == 0 && Threads % Layout::kChunks == 0 && (Threads / Layout::kChunks) % Layout::kGroup == 0;
  constexpr int kStride = kStrided ? (Threads / Layout::kChunks) * Cols : 0;  // elements between a thread's chunks
  const int base = Layout::offset(tid / Layout::kChunks, (tid % Layout::kChunks) * 8);
  bool found = false;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int idx = it * Threads + tid;
    if (kChunks % Threads != 0 && idx >= kChunks) break;
    std::uint32_t* w = reinterpret_cast<std::uint32_t*>(
        smem + (kStrided ? base + it * kStride : Layout::offset(idx / Layout::kChunks, (idx % Layout::kChunks) * 8)));
#if ZYFA_PLATFORM_CUDA
    // Fast test first (the common case is all finite), one packed bf16 FMA per word: acc = x * 0 + acc stays +-0
    // while every x is finite and becomes NaN at the first Inf/NaN.
    const uint4 c = *reinterpret_cast<const uint4*>(w);  // one 16-byte shared-memory read
    std::uint32_t acc = arch::sm90::fma_bf16x2(c.x, 0u, 0u);
    acc = arch::sm90::fma_bf16x2(c.y, 0u, acc);
    acc = arch::sm90::fma_bf16x2(c.z, 0u, acc);
    acc = arch::sm90::fma_bf16x2(c.w, 0u, acc);
    if ((acc & 0x7FFF7FFFu) == 0) continue;
#endif
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      // Per bf16 half, tested as the fp32 number it is the top of (on AMD, 16-bit integer tests compile to
      // SDWA/packed-u16 forms that zyfa's gfx950 emulator does not model).
      const std::uint32_t x = w[k];
      const float lo = __builtin_bit_cast(float, x << 16), hi = __builtin_bit_cast(float, x & 0xFFFF0000u);
      const std::uint32_t keep =
          (__builtin_isfinite(lo) ? 0x0000FFFFu : 0u) | (__builtin_isfinite(hi) ? 0xFFFF0000u : 0u);
      if (keep != 0xFFFFFFFFu) {
        w[k] = x & keep;
        found = true;
      }
    }
  }
  return found;
}

}  // namespace zyfa::bf16
