// zyfa/tile_config.hpp -- THE tuning table of the forward kernels: tile sizes keyed by (target, dtype, head dims,
// causal). One entry per built-in head-dim pair (head_dims.hpp) and target; bf16/config.hpp checks every value at
// compile time.
// NVIDIA sm_90 (mma.sync): 32 query rows per warp (two m16 MMA tiles) as FlashAttention-2's 128 x 64 tile with
// 4 warps; BlockN = 128 for hd64. hd256 keeps 16 rows per warp (8 warps) and rescales O after every tile: its
// 256-wide O accumulator leaves no registers for more. Chosen from bench_h200.py --variants on the H200
// (2026-11-29, bench/RESULTS.md); every entry compiles without spills (nvcc 13.0 -Xptxas -v). Causal and
// non-causal share the sizes (one kernel serves both).
// AMD (gfx950/gfx942): wave64s of 32 query rows, BlockM = 32 * Warps; the K and V tiles must fit gfx942's
// 64 KiB of LDS (Q lives in VGPRs). Chosen for gfx950 with the static cycle model (tools/gfx950isa/cycles.py) on
// clang-22's code, run in the gfx950 CPU emulator (tests/python/test_cycle_model_bf16.py; modelled matrix-pipe busy
// at two waves per SIMD, docs/cycle-model.md): 256 x 64 with 8 waves for hd64 (33.6% vs 24.1% for 128 x 64 x 4)
// and hd128 (38.4% vs 29.7%). hd192/128 keeps 128 x 64 x 4 (29.9%): 256 x 64 x 8 models at 41.5% and fits gfx950's
// 256 VGPRs, but spills 9 VGPRs on gfx942, which shares these entries. hd256 keeps 128 x 64 x 4 (32.9%; 256 x 64 x 8
// models at 15.1%). Modelled, not timed: nothing has run on AMD hardware.
// FP8: no entries yet (the FP8 kernels are not built; flash_attn_func says so).
#pragma once
#include "bf16/config.hpp"
#include "dtype.hpp"
#include "platform/platform.hpp"

namespace zyfa {

/// Target families that have a tile table: NVIDIA sm_90 and AMD CDNA (gfx950, gfx942 share one table).
enum class Target { sm90, cdna };

#if ZYFA_PLATFORM_HIP
inline constexpr Target kCompiledTarget = Target::cdna;  ///< the target this translation unit compiles for
#else
inline constexpr Target kCompiledTarget = Target::sm90;  ///< the target this translation unit compiles for
#endif

/// Tile sizes for (target T, input dtype D, head_dim_qk = DQK, head_dim_v = DV in elements, causal): `type` is
/// the kernel configuration flash_attn_func launches. Only the specializations below exist (a custom pair picks
/// its own sizes with bf16::KernelConfig; an unlisted key is an incomplete-type compile error).
template <Target T, DType D, int DQK, int DV, bool Causal>
struct TileConfig;

// clang-format off
//                                                                                  BlockM BlockN Warps
template <bool C> struct TileConfig<Target::cdna, DType::bf16, 64, 64, C>   { using type = bf16::KernelConfig<64, 64,   256, 64, 8>; };
template <bool C> struct TileConfig<Target::cdna, DType::bf16, 128, 128, C> { using type = bf16::KernelConfig<128, 128, 256, 64, 8>; };
template <bool C> struct TileConfig<Target::cdna, DType::bf16, 256, 256, C> { using type = bf16::KernelConfig<256, 256, 128, 64, 4>; };
template <bool C> struct TileConfig<Target::cdna, DType::bf16, 192, 128, C> { using type = bf16::KernelConfig<192, 128, 128, 64, 4>; };
template <bool C> struct TileConfig<Target::sm90, DType::bf16, 64, 64, C>   { using type = bf16::KernelConfig<64, 64,   128, 128, 4>; };
template <bool C> struct TileConfig<Target::sm90, DType::bf16, 128, 128, C> { using type = bf16::KernelConfig<128, 128, 128, 64, 4>; };
template <bool C> struct TileConfig<Target::sm90, DType::bf16, 256, 256, C> { using type = bf16::KernelConfig<256, 256, 128, 64, 8, false>; };
template <bool C> struct TileConfig<Target::sm90, DType::bf16, 192, 128, C> { using type = bf16::KernelConfig<192, 128, 128, 64, 4>; };

// clang-format on

/// The BF16 configuration of the compiled target for a built-in pair.
template <int DQK, int DV, bool Causal>
using Bf16TileConfig = typename TileConfig<kCompiledTarget, DType::bf16, DQK, DV, Causal>::type;

}  // namespace zyfa
