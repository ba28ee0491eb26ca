// zyfa/fp8/sm90/config.hpp -- compile-time configuration of the sm_90a FP8 (e4m3fn) forward kernel
// (fp8/sm90/fwd_kernel.hpp): head dims, tile sizes, shared-memory layout (bytes unless named otherwise), register
// split, and how P is made.
//
// Tiles: 128 query rows per work tile as two consumer warpgroups of 64 rows (FlashAttention-3's FP8 shape,
// arXiv:2407.08608), and key tiles of exactly one zyfa P block (kKeyBlock = 64 keys, host/fp8_spec.hpp): every
// online-softmax step of the specification is one key tile, so the kernel visits the same blocks in the same order
// and forms each block's P codes from the same running max.
#pragma once
#include "../../arch/target.hpp"
#include "../../numeric/lean_p.hpp"

namespace zyfa::fp8::sm90 {

/// How the probabilities P of a block become e4m3fn codes (host/fp8_spec.hpp STEP 2).
enum class PMode {
  lean_p,  ///< the `zyfa` recipe: one FMA per element gives the code (Lean P), no exponential per element
  exp2     ///< the `zyfa_exact` recipe: code = e4m3fn(ex2(x)) (the ablation: only the making of P differs)
};

/// DQK: head_dim_qk (elements = bytes), a multiple of 32 up to 256; DV: head_dim_v, 128 (one P.V wgmma of N = DV + 8:
/// the 8 extra columns of V^T hold a column of ones, so the accumulator's column DV is the row sum of the rounded P).
/// Stages: depth of the K, V staging and V^T rings. PingPong: the two consumer warpgroups take turns issuing their
/// wgmma (FlashAttention-3's scheduling barriers); false lets both issue whenever ready.
template <int DQK, int DV, PMode Mode, int Stages = 2, bool PingPong = true>
struct Fp8Config {
  static_assert(DQK % 32 == 0 && DQK >= 64 && DQK <= 256,
                "Fp8Config: head_dim_qk must be a multiple of 32 in [64, 256].");
  static_assert(DV == 128, "Fp8Config: head_dim_v 128 (the P.V wgmma is m64n136k32).");
  static_assert(Stages >= 2 && Stages <= 4, "Fp8Config: 2 to 4 stages.");
  static constexpr int kDQK = DQK, kDV = DV, kStages = Stages;
  static constexpr PMode kMode = Mode;
  static constexpr bool kPingPong = PingPong;
  static constexpr int kBlockM = 128;        ///< query rows per work tile = 2 consumer warpgroups x 64
  static constexpr int kBlockN = kKeyBlock;  ///< keys per tile = one zyfa P block (numeric/lean_p.hpp)
  static constexpr int kPvN = DV + 8;  ///< N of the P.V wgmma: DV columns of V and the ones column (+7 zero columns)
  static constexpr int kThreads =
      384;  ///< warpgroup 0: producer (warp 0: TMA; warps 1-3: V transpose); 1, 2: consumers
  /// setmaxnreg split: 40 x 128 + 232 x 256 <= 168 x 384 (the V transpose of the producer needs registers for
  /// loads in flight; the consumers hold S, P, the P.V block accumulator and O: about 200).
  static constexpr int kProducerRegs = 64, kConsumerRegs = 216;
  static constexpr int kTransposeWarps = 3;
  static constexpr int kQBoxes =
      (DQK + 127) / 128;  ///< 128-byte column boxes of Q and K (a partial box is zero-filled)
  static constexpr int kQBytes = kBlockM * 128 * kQBoxes;
  static constexpr int kKBytes = kBlockN * 128 * kQBoxes;  ///< one K stage
  static constexpr int kVsBytes = kBlockN * 128;    ///< one V staging tile as loaded: [64 keys][128 B], 128B swizzle
  static constexpr int kVtBytes = kPvN * kBlockN;   ///< one V^T tile: [kPvN rows][64 keys], 64B swizzle
  static constexpr int kOBytes = kBlockM * DV * 2;  ///< bf16 O staging: DV/64 boxes of 128 rows x 128 B
  static constexpr int kQOff = 0;
  static constexpr int kKOff = kQOff + kQBytes;
  static constexpr int kVsOff = kKOff + Stages * kKBytes;
  static constexpr int kVtOff = kVsOff + Stages * kVsBytes;
  static constexpr int kOOff = (kVtOff + Stages * kVtBytes + 1023) / 1024 * 1024;
  static constexpr int kBarOff = kOOff + kOBytes;
  static constexpr int kSmemBytes = kBarOff + 256 + 1024;  ///< plus 1024 to align the base to the swizzle atom
  static_assert(kVtBytes % 512 == 0, "Fp8Config: V^T stages must stay 512-byte aligned (64B swizzle atom).");
  static_assert(kSmemBytes <= arch::kMaxSmemBytes, "Fp8Config: the tiles do not fit 227 KB of shared memory.");
};

}  // namespace zyfa::fp8::sm90
