// zyfa/tile_config.hpp -- THE tuning table of the BF16 forward kernels: tile sizes per (head dims, target).
//
// One entry per built-in (head_dim_qk, head_dim_v); kernels/config.hpp checks every value at compile time.
// NVIDIA sm_90 (mma.sync): 8 warps of 32 threads, 16 query rows per warp (one m16 MMA tile), BlockM = 128,
// BlockN = 64 keys. 32 rows per warp (FlashAttention-2's 4-warp 128x64 tile) makes ptxas spill here (S and O
// accumulators plus the swizzled ldmatrix addresses exceed 255 registers); 16 rows per warp compiles to
// 132 (hd64) .. 247 (hd128) registers without spills (nvcc 13.0, -Xptxas -v, 2026-11-29).
// AMD (gfx950/gfx942): wave64s of 32 query rows, BlockM = 32 * Warps; the K and V tiles must fit gfx942's
// 64 KiB of LDS (Q lives in VGPRs).
#pragma once
#include "kernels/config.hpp"

namespace zyfa {

/// Tile sizes for a built-in head-dim pair; only the specializations below exist (a custom pair picks its
/// own sizes with kernels::KernelConfig).
template <int DQK, int DV>
struct TileConfig;

#if ZYFA_PLATFORM_HIP
//                                                 BlockM BlockN Warps
template <> struct TileConfig<64, 64>   { using type = kernels::KernelConfig<64, 64,   128, 64, 4>; };
template <> struct TileConfig<128, 128> { using type = kernels::KernelConfig<128, 128, 128, 64, 4>; };
template <> struct TileConfig<256, 256> { using type = kernels::KernelConfig<256, 256, 128, 64, 4>; };
template <> struct TileConfig<192, 128> { using type = kernels::KernelConfig<192, 128, 128, 64, 4>; };
#else
template <> struct TileConfig<64, 64>   { using type = kernels::KernelConfig<64, 64,   128, 64, 4>; };
template <> struct TileConfig<128, 128> { using type = kernels::KernelConfig<128, 128, 128, 64, 4>; };
template <> struct TileConfig<256, 256> { using type = kernels::KernelConfig<256, 256, 128, 64, 8, false>; };
template <> struct TileConfig<192, 128> { using type = kernels::KernelConfig<192, 128, 128, 64, 4>; };
#endif

}  // namespace zyfa
