// zyfa/kernels/tile_copy.hpp -- cooperative copy of a Rows x Cols bf16 tile from global to shared memory.
//
// Every thread of the block copies 16-byte chunks (Tile::copy16: cp.async on sm_90, a plain 16-byte
// load/store on AMD) into the swizzled layout of smem_layout.hpp. Rows >= rows_valid are zero-filled (tails:
// a zero K row gives a score that is masked anyway, a zero V row keeps 0 * garbage from producing NaN).
// Global offsets are 64-bit (row * row_stride in int64).
#pragma once
#include <cstdint>

#include "../platform/platform.hpp"
#include "smem_layout.hpp"

namespace zyfa::kernels {

/// Copies rows [0, Rows) of the bf16 tile at `gmem` (row stride `row_stride` elements, 16-byte aligned rows)
/// into `smem` (SwizzledTile<Rows, Cols>), zero-filling rows >= rows_valid; `tid` in [0, Threads). On sm_90
/// the copy is asynchronous: the caller commits and waits (Tile::commit / Tile::wait_all) and synchronizes.
template <class Tile, int Threads, int Rows, int Cols>
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
      const bool valid = row < rows_valid;
      const std::uint16_t* src = valid ? gmem + static_cast<std::int64_t>(row) * row_stride + col : gmem;
      Tile::copy16(smem + Layout::offset(row, col), src, valid);
    }
  }
}

}  // namespace zyfa::kernels
