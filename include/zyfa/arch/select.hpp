// zyfa/arch/select.hpp -- picks the warp tile (matrix-op traits) of the BF16 kernels for the target being
// compiled. nvcc: sm90::WarpTile (mma.sync, needs sm_80+; built for sm_90a). HIP device passes: gfx950 ->
// v_mfma_f32_32x32x16_bf16, gfx942 -> 2 x v_mfma_f32_32x32x8_bf16; any other AMD target is a compile error.
// The HIP host pass sees the gfx950 types (same tile shape on both AMD targets; it never runs device code).
#pragma once
#include "../platform/platform.hpp"

#if ZYFA_PLATFORM_CUDA
#include "sm90.hpp"
namespace zyfa::arch {
/// The warp tile type of this target (query rows BlockM, keys BlockN, head dims DQK/DV in elements).
template <int BlockM, int BlockN, int DQK, int DV, int Warps>
using WarpTile = sm90::WarpTile<BlockM, BlockN, DQK, DV, Warps>;
inline constexpr int kWarpThreads = 32;  ///< threads per warp
/// sm_90 opt-in limit of dynamic shared memory per block, bytes (CUDA C++ Programming Guide, "Technical
/// Specifications per Compute Capability", 9.0: 227 KB).
inline constexpr int kMaxSmemBytes = 227 * 1024;
inline constexpr const char* kName = "sm90 mma.sync m16n8k16";  ///< for messages and benchmarks
}  // namespace zyfa::arch
#elif ZYFA_PLATFORM_HIP
#include "cdna_wave_tile.hpp"
#include "gfx942.hpp"
#include "gfx950.hpp"
#if ZYFA_DEVICE_PASS && !defined(__gfx950__) && !defined(__gfx942__)
#error "zyfa: the BF16 kernels support the AMD targets gfx950 and gfx942 only (--offload-arch)."
#endif
namespace zyfa::arch {
/// The bf16 MFMA step (32x32, k16) of the AMD target being compiled.
#if defined(__gfx942__)
using Mfma = gfx942::MfmaBf16_32x32x8x2;
#else
using Mfma = gfx950::MfmaBf16_32x32x16;
#endif
/// The wave tile type of this target (query rows BlockM, keys BlockN, head dims DQK/DV in elements).
template <int BlockM, int BlockN, int DQK, int DV, int Warps>
using WarpTile = cdna::WaveTile32<BlockM, BlockN, DQK, DV, Warps, Mfma>;
inline constexpr int kWarpThreads = 64;  ///< wave64
/// LDS per workgroup, bytes: gfx942's 64 KiB, the smaller of the two AMD targets (gfx950 has 160 KiB,
/// docs/design/gfx950-facts.md section 4), so one tile table serves both.
inline constexpr int kMaxSmemBytes = 64 * 1024;
inline constexpr const char* kName = "cdna mfma 32x32 bf16";  ///< for messages and benchmarks
}  // namespace zyfa::arch
#endif
