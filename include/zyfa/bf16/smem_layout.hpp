// zyfa/bf16/smem_layout.hpp -- the XOR-swizzled shared-memory (LDS) layout of Q/K/V tiles.
//
// A tile is Rows x Cols bf16 elements, row-major, cut into 16-byte chunks (8 elements). Chunk c of row r
// is stored at chunk position (c & ~(G-1)) | ((c ^ r) & (G-1)), G = 8 when a row has a multiple of 8
// chunks (Cols % 64 == 0), else 4. With G = 8, eight consecutive rows read at the same logical chunk
// (ldmatrix, or AMD's 16-byte ds_read per lane) hit 8 different 16-byte bank groups: no bank conflicts on
// sm_90's 32 x 4-byte banks (the XOR swizzle of CUTLASS/CuTe's Swizzle<3,3,3>, used by FlashAttention-2).
// With G = 4 (Cols = 32, 96, 160, ...: none of the built-in head dims) rows r and r + 4 share banks: 2-way
// conflicts remain. AMD's LDS bank rules are not modelled here.
#pragma once
#include "../platform/platform.hpp"

namespace zyfa::bf16 {

/// A Rows x Cols bf16 tile in shared memory/LDS with the swizzle above; sizes in elements (kElems) and
/// bytes (kBytes).
template <int Rows, int Cols>
struct SwizzledTile {
  static_assert(Cols % 32 == 0, "SwizzledTile: Cols (a head dim) must be a multiple of 32 elements (64 bytes).");
  static constexpr int kRows = Rows;
  static constexpr int kCols = Cols;
  static constexpr int kChunks = Cols / 8;                   ///< 16-byte chunks per row
  static constexpr int kGroup = (kChunks % 8 == 0) ? 8 : 4;  ///< chunks permuted together
  static constexpr int kElems = Rows * Cols;
  static constexpr int kBytes = kElems * 2;

  /// Element offset of (row, col); `col % 8` stays the offset inside the 16-byte chunk.
  ZYFA_HOST_DEVICE static constexpr int offset(int row, int col) {
    const int c = col >> 3;
    const int sc = (c & ~(kGroup - 1)) | ((c ^ row) & (kGroup - 1));
    return row * Cols + sc * 8 + (col & 7);
  }
};

}  // namespace zyfa::bf16
