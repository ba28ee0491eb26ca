// zyfa/arch/gfx950.hpp -- AMD CDNA4 (gfx950, MI355X) BF16 matrix op: v_mfma_f32_32x32x16_bf16.
//
// Layouts (wave64, docs/design/gfx950-facts.md section 1.2, from AMD's rocjitsu emulator
// `mma_layout.py`, cross-checked against CK Tile): A (32 x 16): lane l holds row l%32, k = 8*(l/32) + 0..7;
// B (16 x 32): lane l holds column l%32, the same k; C/D (32 x 32 fp32, 16 VGPRs): register r of lane l
// holds row 8*(r/4) + 4*(l/32) + r%4, column l%32. 32768 FLOP per instruction.
#pragma once
#include "../platform/platform.hpp"
#include "cdna_mfma_types.hpp"

#if ZYFA_PLATFORM_HIP

namespace zyfa::arch::gfx950 {

/// One k16 step of a 32x32 bf16 tile product: c += A.B with A [32 x 16] bf16, B [16 x 32] bf16, c [32 x 32]
/// fp32 (lane operands as in the file comment; 8 bf16 per lane for A and B, 16 fp32 per lane for c).
/// Only the gfx950 device pass executes it; elsewhere it returns `c` unchanged (never called there).
struct MfmaBf16_32x32x16 {
  /// Instruction name, for messages.
  static constexpr const char* kName = "v_mfma_f32_32x32x16_bf16";
  __device__ static cdna::f32x16 mma(cdna::bf16x8 a, cdna::bf16x8 b, cdna::f32x16 c) {
#if defined(__gfx950__)
    return __builtin_amdgcn_mfma_f32_32x32x16_bf16(a, b, c, 0, 0, 0);
#else
    // Another AMD target's device pass (or the host pass) never runs this; the dispatcher picks per target.
    (void)a;
    (void)b;
    return c;
#endif
  }
};

}  // namespace zyfa::arch::gfx950

#endif  // ZYFA_PLATFORM_HIP
