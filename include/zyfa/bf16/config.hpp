// zyfa/bf16/config.hpp -- compile-time configuration of one BF16 forward kernel: head dims and tile sizes.
//
// `KernelConfig<DQK, DV, BlockM, BlockN, Warps[, SkipRescale]>`: head_dim_qk, head_dim_v (elements), BlockM query
// rows and BlockN keys per tile, Warps warps (NVIDIA, 32 threads) or wave64s (AMD) per block. Illegal combinations
// fail at compile time with a sentence (here, in the Tile contract bf16/tile_contract.hpp and in the tiles). The
// built-in choices are in
// ../tile_config.hpp; a custom head-dim pair (any multiples of 8 up to 512 that fit) is
// `zyfa::bf16::launch<KernelConfig<...>>` (examples/custom_head_dim).
#pragma once
#include "tile_select.hpp"
#include "smem_layout.hpp"

namespace zyfa::bf16 {

/// SkipRescale: see OnlineSoftmax (skip the O rescale when no row max of a warp grew).
template <int DQK, int DV, int BlockM, int BlockN, int Warps, bool SkipRescale = true>
struct KernelConfig {
  static_assert(DQK > 0 && DV > 0, "KernelConfig: head dims must be positive.");
  static_assert(DQK % 8 == 0 && DV % 8 == 0,
                "KernelConfig: head dims must be multiples of 8 elements (16-byte rows chunks, as make_params requires "
                "for bf16).");
  static_assert(
      DQK <= 512 && DV <= 512,
      "KernelConfig: head dims above 512 are not supported (the O accumulator would not fit the register file).");
  static_assert(BlockN % 32 == 0, "KernelConfig: BlockN must be a multiple of 32.");
  static_assert(Warps >= 1 && Warps <= 16, "KernelConfig: 1 to 16 warps per block.");

  // The template arguments (head dims in elements), then (GPU builds) the derived launch shape:
  // kThreads per block, kQSmemBytes / kSmemBytes of dynamic shared memory (LDS) in BYTES.
  static constexpr int kDQK = DQK;
  static constexpr int kDV = DV;
  /// Head dims the tile works on: rounded up to a multiple of 32 (the MMA k-steps and the swizzled 16-byte chunk
  /// groups need it). Padding columns are zero-filled in shared memory and registers and never written out, so
  /// 80, 96, 112, ... run on the same tiles as 96, 128.
  static constexpr int kDQKPad = (DQK + 31) / 32 * 32;
  static constexpr int kDVPad = (DV + 31) / 32 * 32;
  static constexpr int kBlockM = BlockM;
  static constexpr int kBlockN = BlockN;
  static constexpr int kWarps = Warps;
  static constexpr bool kSkipRescale = SkipRescale;
#if !ZYFA_PLATFORM_HOST
  using Tile = WarpTile<BlockM, BlockN, kDQKPad, kDVPad, Warps>;
  static_assert(check_tile<Tile>());
  static constexpr int kThreads = Warps * arch::kWarpThreads;
  static constexpr int kQSmemBytes = Tile::kQInSmem ? SwizzledTile<BlockM, kDQKPad>::kBytes : 0;
  static constexpr int kSmemBytes =
      kQSmemBytes + SwizzledTile<BlockN, kDQKPad>::kBytes + SwizzledTile<BlockN, kDVPad>::kBytes;
  static_assert(kSmemBytes <= arch::kMaxSmemBytes,
                "KernelConfig: the Q/K/V tiles do not fit the target's shared memory (LDS); lower BlockM or BlockN.");
  static_assert(kThreads <= 1024, "KernelConfig: more than 1024 threads per block.");
#endif
};

}  // namespace zyfa::bf16
