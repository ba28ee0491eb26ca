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

/// As copy_tile, synchronously through registers, with every Inf/NaN bf16 element replaced by +0 (the V tiles that
/// cross the causal diagonal: fwd_kernel.hpp). Visible to other threads after the next barrier.
template <int Threads, int Rows, int Cols, int ColsValid = Cols>
__device__ __forceinline__ void copy_tile_finite(std::uint16_t* smem, const std::uint16_t* gmem,
                                                 std::int64_t row_stride, int rows_valid, int tid) {
  using Layout = SwizzledTile<Rows, Cols>;
  constexpr int kChunks = Rows * Layout::kChunks;
#pragma unroll 1
  for (int idx = tid; idx < kChunks; idx += Threads) {
    const int row = idx / Layout::kChunks;
    const int col = (idx % Layout::kChunks) * 8;
    std::uint32_t w[4] = {0u, 0u, 0u, 0u};
    if (row < rows_valid && (ColsValid == Cols || col < ColsValid)) {
      const std::uint32_t* src = reinterpret_cast<const std::uint32_t*>(gmem + static_cast<std::int64_t>(row) * row_stride + col);
#pragma unroll
      for (int k = 0; k < 4; ++k) w[k] = src[k];
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      // Per bf16 half: exponent all ones (Inf/NaN) -> +0. Adding 0x80 to the exponent field carries into bit 15
      // exactly when it is all ones (no carry crosses the halves): integer arithmetic, no compares.
      const std::uint32_t bad = ((w[k] & 0x7F807F80u) + 0x00800080u) & 0x80008000u;
      w[k] &= ~((bad >> 15) * 0xFFFFu);
    }
    std::uint32_t* dst = reinterpret_cast<std::uint32_t*>(smem + Layout::offset(row, col));
#pragma unroll
    for (int k = 0; k < 4; ++k) dst[k] = w[k];
  }
}

}  // namespace zyfa::bf16
