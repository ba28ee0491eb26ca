// zyfa/numeric/lean_p.hpp -- the constants of zyfa's FP8 recipe (Lean P, per-64-key block scale, corrected LSE),
// shared by the host specification (host/fp8_spec.hpp, which documents the algorithm) and the GPU kernels.
#pragma once
#include <cmath>

#include "../platform/platform.hpp"

namespace zyfa {

/// Keys per P block (one 64-key block of P per online-softmax step; matches the FP8 MFMA's K = 64).
inline constexpr int kKeyBlock = 64;
/// e4m3fn code of 2^0 in Lean P (bias 7, mantissa 0: code 7 * 8 = 56).
inline constexpr int kLeanPCodeOfOne = 56;
/// Exponent of the top e4m3fn binade the per-block offset lifts probabilities to (code 120 = 2^8 = 256).
inline constexpr int kTopExponent = 8;
/// Lean P code of a block's largest probability when the block sets the running max (dmax = 0).
/// 120 puts it exactly at 2^8. docs/design/DESIGN.md's finding ("The FP8 algorithm"): at an exact binade
/// boundary Lean P has no overestimate while every other element is overestimated by 0-6% (+4.3% on
/// average), so an exact 120 under-weights the peak of peaky rows; 121 removed that bias in the first experiment.
/// Re-measured on the CPU with the host specification (2026-11-29; seqlen 2048 causal, hd 128, GQA 2:1,
/// per-tensor quantized inputs; zyfa's relative Frobenius error as a multiple of aiter_like's, bf16 output
/// vs fp64; numerics only, no GPU involved):
///   input kind            code 120   code 121   code 122
///   Gaussian                1.42       1.16       1.17
///   q x3 (peaky)            1.55       0.90       0.95
///   q x6 (very peaky)       1.45       0.91       0.94
///   attention sink          0.96       0.33       0.39
///   4 outlier channels      1.49       0.92       0.97
///   real: Gemma 3 270M L11  0.40       0.26       0.27   (seqlen 1024, hd 256, data/activations)
///   real: SmolLM2-135M L15  0.40       0.20       0.21   (seqlen 2048, hd 64)
/// The finding holds: 121 is best on every kind. tests/host/test_fp8_spec.cpp ("block max code
/// finding") re-checks 121 < 0.9 x 120 on every CI run. Must be <= 126 (0x7F is NaN). Codes 120..124 on the
/// real layers and on synthetic rows with and without sinks: docs/fp8-accuracy.md (tools/accuracy/study.py
/// blockcode); zyfa_v2, whose block max is exact, uses kBlockMaxCodeV2 = 120 instead.
inline constexpr int kBlockMaxCode = 121;
static_assert(kBlockMaxCode >= 120 && kBlockMaxCode <= 126,
              "the block max code must stay in the top binade, below NaN");
/// Lean P (and zyfa_exact's exponent) is ONE FMA from the unscaled score S while the running max satisfies
/// |m_new| < kLeanPFusedMaxLogit (log2 units): y = fma(S, 8c, 8 kb + kBlockMaxCode - 8 m_new). Below 2^16 the
/// roundings of t = S c and of the constant each move y by at most 1/16 of a code, so the block max still gets code
/// kBlockMaxCode and no code passes it; beyond (never in practice), the constant's rounding would reach whole codes
/// and the specification takes the two-step form (t - m_new) 8 + 8 kb + kBlockMaxCode instead (host/fp8_spec.hpp).
inline constexpr float kLeanPFusedMaxLogit = 65536.0f;
/// The fused form also needs c >= 2^-122 (c is a normal fp32, validate.hpp), so that a kernel may scale c by 2^-7
/// exactly (the saturating FMA's [0, 1] is y's [0, 128]); smaller factors take the two-step form.
inline constexpr float kLeanPFusedMinScale = 0x1p-122f;
/// 1 / 1.040684 = 2 ln^2 2: divides the non-top Lean P values of a block in the corrected LSE (Fp8LseMode).
inline constexpr float kLeanPInvMeanBias = 0.9609060278f;

/// The corrected LSE's factor for the non-top Lean P values of a block: kLeanPInvMeanBias * 2^-((block_max_code -
/// 120) / 8), fp32 (two fp32 operations, as the specification computes it; host code). `block_max_code` in [120, 126].
inline float lean_p_lse_rest(int block_max_code) {
  return kLeanPInvMeanBias * std::exp2(-static_cast<float>(block_max_code - 120) / 8.0f);
}

}  // namespace zyfa
