// zyfa/tile_config.hpp -- THE tuning table of the BF16 forward kernels: tile sizes per (head dims, target).
//
// One entry per built-in (head_dim_qk, head_dim_v); kernels/config.hpp checks every value at compile time.
// NVIDIA sm_90 (mma.sync): 32 query rows per warp (two m16 MMA tiles) as FlashAttention-2's 128 x 64 tile
// with 4 warps; BlockN = 128 for hd64. hd256 keeps 16 rows per warp (8 warps) and rescales O after every tile:
// its 256-wide O accumulator leaves no registers for more. Chosen from bench_h200.py --variants on the H200
// (2026-11-29, bench/RESULTS.md); every entry compiles without spills (nvcc 13.0 -Xptxas -v).
// AMD (gfx950/gfx942): wave64s of 32 query rows, BlockM = 32 * Warps; the K and V tiles must fit gfx942's
// 64 KiB of LDS (Q lives in VGPRs). The AMD entries are not tuned: nothing has been timed on AMD hardware
// (they are compiled in CI and run in the gfx950 CPU emulator only).
#pragma once
#include "kernels/config.hpp"

namespace zyfa {

/// Tile sizes for a built-in head-dim pair (head_dim_qk = DQK, head_dim_v = DV, elements): `type` is the
/// kernels::KernelConfig flash_attn_func launches. Only the specializations below exist (a custom pair picks
/// its own sizes with kernels::KernelConfig; an unlisted pair is an incomplete-type compile error).
template <int DQK, int DV>
struct TileConfig;

#if ZYFA_PLATFORM_HIP
//                                                 BlockM BlockN Warps
template <> struct TileConfig<64, 64>   { using type = kernels::KernelConfig<64, 64,   128, 64, 4>; };
template <> struct TileConfig<128, 128> { using type = kernels::KernelConfig<128, 128, 128, 64, 4>; };
template <> struct TileConfig<256, 256> { using type = kernels::KernelConfig<256, 256, 128, 64, 4>; };
template <> struct TileConfig<192, 128> { using type = kernels::KernelConfig<192, 128, 128, 64, 4>; };
#else
template <> struct TileConfig<64, 64>   { using type = kernels::KernelConfig<64, 64,   128, 128, 4>; };
template <> struct TileConfig<128, 128> { using type = kernels::KernelConfig<128, 128, 128, 64, 4>; };
template <> struct TileConfig<256, 256> { using type = kernels::KernelConfig<256, 256, 128, 64, 8, false>; };
template <> struct TileConfig<192, 128> { using type = kernels::KernelConfig<192, 128, 128, 64, 4>; };
#endif

}  // namespace zyfa
