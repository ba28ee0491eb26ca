// zyfa/arch/select.hpp -- picks the warp tile (matrix-op traits) of the BF16 kernels for the target being
// compiled. nvcc: sm90::WarpTile (mma.sync, needs sm_80+; built for sm_90a). HIP device passes: gfx950 ->
// v_mfma_f32_32x32x16_bf16, gfx942 -> 2 x v_mfma_f32_32x32x8_bf16; any other AMD target is a compile error.
// The HIP host pass sees the gfx950 types (same tile shape on both AMD targets; it never runs device code).
#pragma once
#include "../platform/platform.hpp"

#if ZYFA_PLATFORM_CUDA
#include "sm90.hpp"
namespace zyfa::arch {
template <int BlockM, int BlockN, int DQK, int DV, int Warps>
using WarpTile = sm90::WarpTile<BlockM, BlockN, DQK, DV, Warps>;
inline constexpr int kWarpThreads = 32;
inline constexpr int kMaxSmemBytes = 227 * 1024;  ///< sm_90 opt-in limit per block
inline constexpr const char* kName = "sm90 mma.sync m16n8k16";
}  // namespace zyfa::arch
#elif ZYFA_PLATFORM_HIP
#include "cdna_wave_tile.hpp"
#include "gfx942.hpp"
#include "gfx950.hpp"
#if ZYFA_DEVICE_PASS && !defined(__gfx950__) && !defined(__gfx942__)
#error "zyfa: the BF16 kernels support the AMD targets gfx950 and gfx942 only (--offload-arch)."
#endif
namespace zyfa::arch {
#if defined(__gfx942__)
using Mfma = gfx942::MfmaBf16_32x32x8x2;
#else
using Mfma = gfx950::MfmaBf16_32x32x16;
#endif
template <int BlockM, int BlockN, int DQK, int DV, int Warps>
using WarpTile = cdna::WaveTile32<BlockM, BlockN, DQK, DV, Warps, Mfma>;
inline constexpr int kWarpThreads = 64;
inline constexpr int kMaxSmemBytes = 64 * 1024;  ///< gfx942's LDS per workgroup (gfx950 has 160 KiB)
inline constexpr const char* kName = "cdna mfma 32x32 bf16";
}  // namespace zyfa::arch
#endif
