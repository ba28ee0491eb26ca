// zyfa/bf16/tile_select.hpp -- the warp/wave tile (a model of bf16/tile_contract.hpp) of the BF16 kernels for the
// target being compiled: nvcc -> Sm90WarpTile (mma.sync m16n8k16), HIP -> CdnaWaveTile32 over the target's bf16
// MFMA step (arch/target.hpp).
#pragma once
#include "../arch/target.hpp"
#include "../platform/platform.hpp"
#include "tile_contract.hpp"

#if ZYFA_PLATFORM_CUDA
#include "tile_sm90.hpp"
namespace zyfa::bf16 {
/// The warp tile of this target (query rows BlockM, keys BlockN, head dims DQK/DV in elements).
template <int BlockM, int BlockN, int DQK, int DV, int Warps>
using WarpTile = Sm90WarpTile<BlockM, BlockN, DQK, DV, Warps>;
}  // namespace zyfa::bf16
#elif ZYFA_PLATFORM_HIP
#include "tile_cdna.hpp"
namespace zyfa::bf16 {
/// The wave tile of this target (query rows BlockM, keys BlockN, head dims DQK/DV in elements).
template <int BlockM, int BlockN, int DQK, int DV, int Warps>
using WarpTile = CdnaWaveTile32<BlockM, BlockN, DQK, DV, Warps, arch::MfmaBf16>;
}  // namespace zyfa::bf16
#endif
