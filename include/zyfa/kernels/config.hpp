// zyfa/kernels/config.hpp -- compile-time configuration of one BF16 forward kernel: head dims and tile sizes.
//
// `KernelConfig<DQK, DV, BlockM, BlockN, Warps[, SkipRescale]>`: head_dim_qk, head_dim_v (elements), BlockM query
// rows and BlockN keys per tile, Warps warps (NVIDIA, 32 threads) or wave64s (AMD) per block. Illegal combinations
// fail at compile time with a sentence (here and in the arch tile, arch/*.hpp). The built-in choices are in
// ../tile_config.hpp; a custom head-dim pair is `zyfa::bf16::launch<KernelConfig<...>>` (examples/).
#pragma once
#include "../arch/select.hpp"
#include "smem_layout.hpp"

namespace zyfa::kernels {

/// SkipRescale: see OnlineSoftmax (skip the O rescale when no row max of a warp grew).
template <int DQK, int DV, int BlockM, int BlockN, int Warps, bool SkipRescale = true>
struct KernelConfig {
  static_assert(DQK > 0 && DV > 0, "KernelConfig: head dims must be positive.");
  static_assert(DQK % 32 == 0, "KernelConfig: head_dim_qk must be a multiple of 32 (swizzled 16-byte LDS/shared chunks in groups of 4, and the MMA k16 step).");
  static_assert(DV % 32 == 0, "KernelConfig: head_dim_v must be a multiple of 32 (AMD's O^T tile is 32 dv rows; shared-memory chunks in groups of 4).");
  static_assert(DQK <= 512 && DV <= 512, "KernelConfig: head dims above 512 are not supported (the O accumulator would not fit the register file).");
  static_assert(BlockN % 32 == 0, "KernelConfig: BlockN must be a multiple of 32.");
  static_assert(Warps >= 1 && Warps <= 16, "KernelConfig: 1 to 16 warps per block.");

  // The template arguments (head dims in elements), then (GPU builds) the derived launch shape:
  // kThreads per block, kQSmemBytes / kSmemBytes of dynamic shared memory (LDS) in BYTES.
  static constexpr int kDQK = DQK;
  static constexpr int kDV = DV;
  static constexpr int kBlockM = BlockM;
  static constexpr int kBlockN = BlockN;
  static constexpr int kWarps = Warps;
  static constexpr bool kSkipRescale = SkipRescale;
#if !ZYFA_PLATFORM_HOST
  using Tile = arch::WarpTile<BlockM, BlockN, DQK, DV, Warps>;
  static constexpr int kThreads = Warps * arch::kWarpThreads;
  static constexpr int kQSmemBytes = Tile::kQInSmem ? SwizzledTile<BlockM, DQK>::kBytes : 0;
  static constexpr int kSmemBytes =
      kQSmemBytes + SwizzledTile<BlockN, DQK>::kBytes + SwizzledTile<BlockN, DV>::kBytes;
  static_assert(kSmemBytes <= arch::kMaxSmemBytes,
                "KernelConfig: the Q/K/V tiles do not fit the target's shared memory (LDS); lower BlockM or BlockN.");
  static_assert(kThreads <= 1024, "KernelConfig: more than 1024 threads per block.");
#endif
};

}  // namespace zyfa::kernels
