// zyfa/arch/gfx942.hpp -- AMD CDNA3 (gfx942, MI300X) BF16 matrix op: two v_mfma_f32_32x32x8_bf16 (_1k)
// per k16 step, so the wave tile is the same as gfx950's.
//
// 32x32x8 layouts (docs/design/gfx950-facts.md section 1.2, general rule with E = K/2 = 4):
// A lane l holds row l%32,
// k = 4*(l/32) + 0..3; B lane l holds column l%32, the same k; C/D as 32x32x16. The k16 step's 8 elements
// per lane (k index 8*(l/32) + j of gfx950's layout) are fed as elements 0..3 to the first instruction and
// 4..7 to the second: A's and B's element j of lane half h always meet in the same instruction, so each
// product pairs the same k on both sides and the sum over all 16 k is the same dot product.
#pragma once
#include "../platform/platform.hpp"
#include "cdna_mfma_types.hpp"

#if ZYFA_PLATFORM_HIP

namespace zyfa::arch::gfx942 {

/// One k16 step of a 32x32 bf16 tile product on gfx942, same interface and lane operands as
/// gfx950::MfmaBf16_32x32x16 (A [32 x 16] bf16, B [16 x 32] bf16, c [32 x 32] fp32), as two
/// v_mfma_f32_32x32x8_bf16 (split as in the file comment). Only the gfx942 device pass executes it.
struct MfmaBf16_32x32x8x2 {
  /// Instruction name, for messages.
  static constexpr const char* kName = "2 x v_mfma_f32_32x32x8_bf16";
  __device__ static cdna::f32x16 mma(cdna::bf16x8 a, cdna::bf16x8 b, cdna::f32x16 c) {
#if defined(__gfx942__)
    const cdna::i16x4 a0 = __builtin_bit_cast(cdna::i16x4, __builtin_shufflevector(a, a, 0, 1, 2, 3));
    const cdna::i16x4 a1 = __builtin_bit_cast(cdna::i16x4, __builtin_shufflevector(a, a, 4, 5, 6, 7));
    const cdna::i16x4 b0 = __builtin_bit_cast(cdna::i16x4, __builtin_shufflevector(b, b, 0, 1, 2, 3));
    const cdna::i16x4 b1 = __builtin_bit_cast(cdna::i16x4, __builtin_shufflevector(b, b, 4, 5, 6, 7));
    c = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a0, b0, c, 0, 0, 0);
    return __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a1, b1, c, 0, 0, 0);
#else
    (void)a;
    (void)b;
    return c;
#endif
  }
};

}  // namespace zyfa::arch::gfx942

#endif  // ZYFA_PLATFORM_HIP
