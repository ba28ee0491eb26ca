// zyfa/bf16/sm90/config_ws.hpp -- compile-time configuration of the sm_90a warp-specialized BF16 forward kernel
// (bf16/sm90/fwd_kernel_ws.hpp): head dims, tile sizes, shared-memory layout (all sizes in bytes unless named
// otherwise), register split.
//
// The FlashAttention-3 tile shapes (Shah et al. 2024, arXiv:2407.08608; FA3 hopper/tile_size.h): 64 query rows per
// consumer warpgroup, two of them (three for hd64), BlockN keys per K/V tile, 2 K and 2 V stages, 1 producer
// warpgroup.
#pragma once
#include "../../arch/target.hpp"

/// Lazy rescaling's threshold in log2 units (WsConfig::kRescaleThreshold): 8, FlashAttention-4's; 0 builds the exact
/// running max (every increase moves it: the largest P of a row is then exactly 1, 1.1-1.7x less error on rows
/// dominated by one key, and O keeps 2^8 more headroom). docs/interface.md, "NaN and overflow", states the bound.
#ifndef ZYFA_SM90_RESCALE_THRESHOLD
#define ZYFA_SM90_RESCALE_THRESHOLD 8.0f
#endif

namespace zyfa::bf16::sm90ws {

/// DQK, DV: head dims (elements), multiples of 64 (one 128-byte swizzle box = 64 bf16 columns), DV <= DQK (where O
/// fits neither a buffer of its own nor the V stages, a warpgroup stages it in its own, dead, part of the Q tile).
/// BlockN: keys per tile (multiple of 16, <= 256: one wgmma N and one TMA box). Stages: K and V ring depth.
/// Consumers: consumer warpgroups of 64 query rows each, 2 or 3 (FlashAttention-3 takes 3, BlockM 192, for hd64: a
/// 64-wide P.V is too short to hide a softmax behind only one other warpgroup's GEMMs).
template <int DQK, int DV, int BlockN, int Stages = 2, int Consumers = 2>
struct WsConfig {
  static_assert(DQK % 64 == 0 && DV % 64 == 0, "WsConfig: head dims must be multiples of 64 (128-byte swizzle boxes).");
  static_assert(DQK <= 256 && DV <= 256, "WsConfig: head dims up to 256 (one wgmma N for P.V).");
  static_assert(DV <= DQK, "WsConfig: head_dim_v <= head_dim_qk (the O tile reuses the Q tile's shared memory).");
  static_assert(BlockN % 16 == 0 && BlockN >= 16 && BlockN <= 256,
                "WsConfig: BlockN must be a multiple of 16 in [16, 256].");
  static_assert(Stages >= 2, "WsConfig: at least 2 K/V stages.");
  static_assert(Consumers == 2 || Consumers == 3, "WsConfig: 2 or 3 consumer warpgroups.");

  static constexpr int kDQK = DQK, kDV = DV;
  static constexpr int kConsumers = Consumers;
  static constexpr int kBlockM = 64 * Consumers;  ///< query rows per block = consumer warpgroups x 64
  static constexpr int kBlockN = BlockN;
  static constexpr int kStages = Stages;
  static constexpr int kThreads = 128 * (Consumers + 1);  ///< warpgroup 0: producer (its warp 0 issues TMA)
  /// setmaxnreg split of the entry allocation (65,536 registers / kThreads, rounded down to a multiple of 8, per
  /// thread): producer x 128 + consumers x 128 x Consumers must not exceed it, or setmaxnreg.inc waits forever.
  /// 2 consumers: 40 / 232 (FlashAttention-3 uses 24 / 240; the persistent producer needs more than 24 without
  /// spilling; hd256's 80-key tiles fit in 232 since the convergent key-tile loop). 3 consumers: 32 / 160,
  /// FlashAttention-3's split. FA3's 24 / 240 with two (the producer then spills 48-72 bytes, outside the key-tile
  /// loop) measured 0.99-1.00x on an H100 (bench/RESULTS.md, 2026-12-07): the consumers' 8 more registers buy nothing.
  static constexpr int kProducerRegs = Consumers == 2 ? 40 : 32, kConsumerRegs = Consumers == 2 ? 232 : 160;
  static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * Consumers <= (65536 / kThreads) / 8 * 8 * kThreads,
                "WsConfig: register split over budget.");
  /// FlashAttention-3's key-tile step: one P buffer, O rescaled on every tile (no branch), no branch holding the
  /// P.V wait, and the key tiles that need the mask in a loop of their own. ptxas then places the P.V wait among the
  /// exponentials (at hd128 after 15 of the 66 per tile, where FA3's SASS has it) and packs P between the rest; with
  /// the mask test inside the loop it put the wait at the join after the mask, before the first exponential. Same
  /// pass on the H200 (bench/RESULTS.md, 2026-12-04, "FlashAttention-3's key-tile step"): hd128 against the double-P
  /// step 1.00-1.03x, hd64 (3 consumer warpgroups) 0.98-1.04x; (192, 128) and hd256 0.97-1.00x at 4K-16K, so they
  /// keep their steps. With it each row's max is one serial chain (FA3's order: ptxas then computes the second row's
  /// max between the first row's exponentials) and O is rescaled before P.V (kRescaleBeforePv).
  static constexpr bool kFa3Step = (DQK == 128 && DV == 128 && Consumers == 2 && BlockN == 128 && Stages == 2) ||
                                   (DQK == 64 && DV == 64 && Consumers == 3 && BlockN == 128 && Stages == 2);
  /// The P.V wait of a key tile placed after the softmax so that the two overlap (fwd_kernel_ws.hpp explains how
  /// ptxas is kept from hoisting it). Every configuration but kFa3Step: with 64-key tiles (hd256: O takes 128
  /// registers) P held live across the softmax once made the consumers spill; since the convergent key-tile loop it
  /// compiles without.
  static constexpr bool kPvWaitAfterSoftmax = !kFa3Step;
  /// That wait's branch is on a warp vote (uniform: the loop's stage and phase counters stay on the uniform
  /// datapath, about 14 fewer instructions per key tile). With 3 consumer warpgroups (160 registers) it fits without
  /// spill since the work order re-reads %ctaid.x and the epilogue forms its staging address per work tile (hd64
  /// 1.04-1.06x same pass, bench/RESULTS.md, 2026-12-03, "a second P buffer, ...").
  static constexpr bool kPvWaitBranchUniform = true;
  /// P double-buffered (BlockN / 4 more registers): the softmax of key tile n packs its P while P.V(n-1) still reads
  /// the other buffer, so the packing runs between the exponentials instead of after the P.V wait; the key loop is
  /// unrolled by two. Only where the registers allow it: 128-key tiles, 2 stages, a value head dim of 128 (MLA (192,
  /// 128); hd256, 176-key tiles and a third stage spill with it); hd128 takes kFa3Step instead.
  static constexpr bool kDoubleP = !kFa3Step && Consumers == 2 && DV <= 128 && BlockN <= 128 && Stages == 2;
  /// O rescaled by a tile's correction factors after the next Q.K^T is issued, before the P.V that adds into O
  /// (FlashAttention-3's RescaleOBeforeGemm, which it uses above hd128): the multiplies then run while Q.K^T is on
  /// the tensor cores instead of between the P.V wait and the warpgroup's next turn. Same-pass A/B on the H200
  /// (bench/RESULTS.md, 2026-12-03, two passes): hd256 +2-19%, (192, 128) -1% to +11%, hd128 -2% to +10%
  /// except causal 2K (0.91-0.97). With kFa3Step on every tile (no branch): placed after the P.V wait, ptxas put the
  /// 64 multiplies after the last exponential (FA3's SASS has them between its exponentials); here they issue while
  /// Q.K^T runs. Same bits; with the serial row max 1.00-1.01x hd128 and 1.00-1.05x hd64, two passes (bench/RESULTS.md,
  /// 2026-12-04, "O rescaled before P.V with FlashAttention-3's step").
  static constexpr bool kRescaleBeforePv = true;
  /// Lazy rescaling (FlashAttention-4's conditional rescale, flash_attn/cute, threshold 8): a row keeps its running
  /// max, and O and the row sum are not rescaled, until a key tile's max exceeds it by more than this many log2 units
  /// (scores times softmax_scale * log2(e)); 0: the max moves on every increase. Exact in real arithmetic (the max is
  /// only the base of the exponentials: O / l and the LSE m * scale + log2(l) do not depend on it); P then lies in
  /// [0, 2^threshold] instead of [0, 1], and the GPU case "O's fp32 headroom" checks both sides. With a vote
  /// (kRescaleEveryTile off) a rescale is then left where a row max jumps (the first key tiles, an attention sink)
  /// instead of most tiles. Costs: a row's largest P is no longer exactly 1 but rounded to bf16 like the others (rows
  /// dominated by one key: up to 1.7x the max error, bench/lazy_rescale_accuracy.py; 3-8% on real heads,
  /// bench/RESULTS.md 2026-12-04), and O's fp32 headroom shrinks by 2^threshold (docs/interface.md, "NaN and
  /// overflow"). Same pass on an H100 (bench/RESULTS.md, 2026-12-07, "the dynamic work order and lazy rescaling" and
  /// "lazy rescaling at every head dim"), causal / non-causal at 2K-16K: hd128 1.011-1.021x / 1.007-1.016x,
  /// hd256 1.017-1.030x / 1.023-1.036x, (192, 128) 1.005-1.011x / 1.009-1.015x, hd64 (with the vote,
  /// kRescaleEveryTile) 1.012-1.014x / 1.011-1.015x.
  static constexpr float kRescaleThreshold = float(ZYFA_SM90_RESCALE_THRESHOLD);
  static_assert(kRescaleThreshold >= 0.0f && kRescaleThreshold <= 16.0f,
                "WsConfig: ZYFA_SM90_RESCALE_THRESHOLD must lie in [0, 16] (log2 units; P <= 2^threshold).");
  /// O rescaled on every key tile, with no branch (FlashAttention-3's step), rather than only where a row max of
  /// the warp moved (a warp vote; corr is then 1 to an FFMA's rounding, so skipping it changes bits only there). With
  /// kFa3Step and two consumer warpgroups (hd128) the vote skips the 64 multiplies between the two wgmma issues on
  /// most tiles: same pass on an H100 (bench/RESULTS.md, 2026-12-07, "O rescaled only where a row max moved"),
  /// hd128 1.005 / 1.007 / 1.011 / 1.017x causal and 1.006-1.016x non-causal at 2K / 4K / 8K / 16K, and 1.005-1.018x
  /// in a second pass with the GPU suite clean ("... second pass and GPU suite"); with three (hd64) 0.985-1.004x, so
  /// hd64 keeps the branch-free step with the exact running max. With lazy rescaling the vote is rarely taken, and
  /// hd64 with it measured 1.011-1.015x over its branch-free step with lazy rescaling ("lazy rescaling at every head
  /// dim": that step alone loses 1.0-1.4% to lazy rescaling, whose P no longer is at most 1).
  static constexpr bool kRescaleEveryTile = kFa3Step && Consumers == 3 && kRescaleThreshold == 0.0f;
  /// Where O is rescaled on a vote (not kRescaleEveryTile) with FlashAttention-3's step (hd128, and hd64 with lazy
  /// rescaling), one vote per row of a thread's two (rows r and r + 8 of each 16-row slice of the warp): only the
  /// half of O whose rows moved is multiplied (32 multiplies instead of 64 where one half moved). Same pass on an H100
  /// (bench/RESULTS.md, 2026-12-07, "a vote per row for hd128's O rescale"): 1.002-1.010x causal, 1.004-1.012x
  /// non-causal over one vote per warp (the same vote for every configuration, a pass before: 1.001-1.009x at hd128,
  /// 0.985-1.001x at hd64).
  static constexpr bool kRescaleVotePerRow = kFa3Step && !kRescaleEveryTile;
  /// Causal, key tiles last to first: a consumer warpgroup skips the first key tiles of its block that lie wholly
  /// past its own last row (their turns of the ping-pong pass without wgmma; same bits, its P there is 0). Where
  /// BlockM != BlockN that happens at equal seqlen_q and seqlen_k: hd256's 80-key tiles (warpgroup 0 skips one in 4
  /// of 5 blocks) and hd64's 192-row blocks (warpgroup 0 one tile in each, warpgroup 1 in every other), about 3% and
  /// 5.5% of the tensor-core work at 2K tokens. Same pass on an H100 (bench/RESULTS.md, 2026-12-06): hd64 causal
  /// 1.03 / 1.02 / 1.02 / 1.01x at 2K / 4K / 8K / 16K, hd256 causal 1.01 / 1.01 / 1.01 / 1.00x, non-causal 0.99-1.00x.
  /// With BlockM == BlockN it skips only where (seqlen_k - seqlen_q) mod 128 is 1-64, and hd128 measured 0.99-1.00x
  /// at equal lengths, so it is off there.
  static constexpr bool kSkipUnseenKeyTiles = kBlockM != BlockN;
  /// Every consumer warpgroup waits for the K-full and V-full mbarriers of its stages (FlashAttention-3's
  /// consumer_wait), not consumer 0 alone (the others then read a stage only after their turn of the ping-pong, which
  /// follows consumer 0's wait). Same bits; same pass on an H100 (bench/RESULTS.md, 2026-12-07, two passes): with 3
  /// consumer warpgroups (hd64) 1.005-1.015x and 1.004-1.010x at 2K-16K causal and not, with 2 (hd128) 0.98-0.99x,
  /// so only with 3.
  static constexpr bool kEveryConsumerWaitsFull = Consumers == 3;
  /// Persistent grid (min(work tiles, SMs) CTAs looping over tiles) or one CTA per tile (the loop then runs once).
  static constexpr bool kPersistent = true;
  /// Unrolling of the producer's Inf/NaN scan of diagonal V tiles (16-byte loads in flight per thread).
  static constexpr int kScanUnroll = 4;
  static constexpr int kQBoxes = DQK / 64, kVBoxes = DV / 64;  ///< 64-column (128-byte) swizzle boxes
  static constexpr int kQBytes = kBlockM * DQK * 2;            ///< Q tile: kQBoxes boxes of kBlockM x 128 B
  static constexpr int kMBoxBytes = kBlockM * 128;             ///< one 64-column box of the Q (and O staging) tile
  static constexpr int kKBytes = BlockN * DQK * 2;             ///< one K stage: kQBoxes boxes of BlockN x 128 B
  static constexpr int kVBytes = BlockN * DV * 2;              ///< one V stage: kVBoxes boxes of BlockN x 128 B
  static constexpr int kOBytes = kBlockM * DV * 2;             ///< O staging tile: kVBoxes boxes of kBlockM x 128 B
  static constexpr int kQOff = 0;
  static constexpr int kKOff = kQOff + kQBytes;
  static constexpr int kVOff = kKOff + Stages * kKBytes;
  /// The O staging tile gets its own buffer when it fits (then the next Q tile loads while the epilogue runs).
  static constexpr bool kOSeparate = kVOff + Stages * kVBytes + kOBytes + 256 + 1024 <= arch::kMaxSmemBytes;
  /// Otherwise (hd256, (192, 128)) O is staged over the end of the V stages, FlashAttention-3's layout (its
  /// SharedStorage puts smem_o in a union with smem_v): every consumer warpgroup first waits until all of them have
  /// finished their last P.V (a named barrier), and the producer loads the next work tile's first V only after the
  /// O store has read the tile (an `O empty` mbarrier). Q is then free after the last Q.K^T, so the next work
  /// tile's Q loads while the last P.V and the epilogue run. The alternative, O in each warpgroup's dead rows of Q,
  /// holds the next Q load until the store has read O.
  static constexpr bool kOInV = !kOSeparate && kOBytes <= Stages * kVBytes;
  /// The consumers release Q at their last Q.K^T (the next work tile's Q may load under the last P.V).
  static constexpr bool kQFreeAfterLastQk = kOSeparate || kOInV;
  static constexpr int kOOff = kOSeparate ? kVOff + Stages * kVBytes
                               : kOInV    ? kVOff + Stages * kVBytes - kOBytes
                                          : kQOff;
  static constexpr int kBarOff = kVOff + Stages * kVBytes + (kOSeparate ? kOBytes : 0);  ///< mbarriers, flags (256 B)
  /// Dynamic shared memory requested: the layout plus 1024 bytes to align the base to the swizzle atom.
  static constexpr int kSmemBytes = kBarOff + 256 + 1024;
  static_assert((BlockN * 128) % 1024 == 0, "WsConfig: BlockN must be a multiple of 8 (1024-byte aligned boxes).");
  static_assert(kOOff % 1024 == 0, "WsConfig: the O staging tile must be 1024-byte aligned (128-byte swizzle atom).");
  static_assert(kSmemBytes <= arch::kMaxSmemBytes, "WsConfig: the Q/K/V tiles do not fit 227 KB of shared memory.");
};

}  // namespace zyfa::bf16::sm90ws
