// zyfa/host/fp8_spec.hpp -- the FP8 attention algorithm, bit-exact, as an executable specification.
//
// docs/design/DESIGN.md "The FP8 algorithm (ZYFA numerics)" in code. The recipes run on the same e4m3fn
// inputs:
//   zyfa        Lean P + per-64-key-block power-of-two offset + rounded row sum + online softmax (default);
//   zyfa_exact  as zyfa but each probability is an exact fp32 exp2 cast to e4m3 (RNE) instead of Lean P;
//   zyfa_v2     the revised recipe (docs/fp8-accuracy.md): Lean P with a quadratic chord correction, each
//               64-key block's codes taken relative to the block's OWN max (which lands exactly on code 120 =
//               2^8), the block's fp32 scale 2^(m_blk - m_new - 8) applied to its P.V and row sum; no
//               per-element exponential (one exp2 per row and block);
//   aiter_like  two-pass idealisation: fp32 exp2(t - m) with the exact row max, P in [0, 1] cast straight to
//               e4m3 (small probabilities become subnormals or 0), row sum of the fp32 (unrounded) P;
//   scaled_p    as aiter_like but P * 256 is cast (two-pass idealisation of a scaled-P kernel).
// and the peers' recipes, as their kernels run them (online softmax over their key tiles; read from their
// sources, docs/fp8-peers.md; modelled to the fp32 rounding of the exponent argument, see "PEERS" below):
//   aiter_asm_hd128  AITER's hand-written gfx950 FP8 kernel for head_dim 128 (hsa/gfx950/fmha_v3_fwd/
//                    fwd_hd128_fp8*.co): 128-key tiles, running max, P = exp2(t - m) in [0, 1] cast raw to e4m3;
//   aiter_asm_hd256  the head_dim 256 kernel (fwd_hd256_fp8*.co): 64-key tiles, raw cast, and a fast-exp
//                    branch (bit-trick 2^x) for tiles whose largest probability is small against the row sum;
//   aiter_ck         AITER's Composable Kernel path (every other shape): P * 448 (e4m3's max) cast, row sum of
//                    the unscaled fp32 P, output scaled by v_descale / 448; 64-key tiles for head_dim <= 64,
//                    128 otherwise;
//   fa3              FlashAttention-3's FP8 forward (hopper/softmax.h, Max_offset = 8): P = exp2(t - m + 8) in
//                    [0, 256] cast to e4m3, row sum of the fp32 P, tiles of kBlockN keys (hopper/tile_size.h,
//                    FP8: 160 for head_dim <= 64, 128 for <= 96, 224 for <= 128, 160 for <= 192, else 128)
//                    visited from the last (diagonal) tile backwards.
//
// Notation, per (batch b, query head h, query row i); key/value head hk = h / (num_heads / num_heads_k):
//   q_i[d], k_j[d], v_j[d]: e4m3fn code VALUES (decoded exactly, descale not applied);
//   n = visible_keys(p, i) (causal bottom-right, see head_matrix.hpp); keys j >= n are masked (never read);
//   all arithmetic is IEEE fp32 with round-to-nearest-even unless stated, each line one rounding.
//
// STEP 1 (all recipes) -- logits in the log2 domain.
//   c   = ((q_descale * k_descale) * softmax_scale) * kLog2e                         [3 fp32 multiplies]
//   S_j = sum over d = 0, 1, ..., head_dim_qk-1 of q_i[d] * k_j[d], fp32, starting from +0.0f, adding in
//         increasing d. Every product is exact (two 4-bit significands), so an FMA gives the same result.
//   t_j = S_j * c     (the max, alpha and kb below are taken on t; Lean P and zyfa_exact make P from S_j itself)
//
// STEP 2 (zyfa, zyfa_exact) -- online softmax over key blocks of kKeyBlock = 64 keys: block B holds
// keys [64B, min(64B + 64, n)); blocks with no visible key are skipped. State: m = -inf, l = 0, acc[:] = 0.
//   m_blk  = max of t_j over the block                                                 [exact]
//   m_new  = max(m, m_blk)                                                             [exact]
//   alpha  = exp2f(m - m_new)           (0 for the first block, exactly 1 when the max did not grow)
//   dmax   = m_blk - m_new  (<= 0);     kb = (int)min(-dmax, 255)  (truncation = floor; kb = 0 when dmax
//            is NaN, which happens only when the block holds no usable logit, see NaN below)
//   s_blk  = 2^-(kb + kTopExponent)     (an exact power of two; the "per-block power-of-two offset":
//            adding 8*kb to every code of the block lifts its largest probability into the top e4m3
//            binade (codes kBlockMaxCode-7 .. kBlockMaxCode; exactly kBlockMaxCode when the block sets
//            the running max); s_blk takes that lift (and the constant 2^kTopExponent) back out. The
//            offset is taken relative to the running max m_new, not to m_blk, so that it is an integer
//            power of two: on gfx950 s_blk is the E8M0 scale operand of v_mfma_scale_f32_32x32x64_f8f6f4
//            and the accumulator needs no per-block rescale; elsewhere it multiplies P.V and l_blk.)
//   per key j of the block (ONE FMA from S_j: the published Lean P; FA3 and AITER form exp2's argument so too):
//     fused = |m_new| < kLeanPFusedMaxLogit (2^16) and c >= kLeanPFusedMinScale (2^-122; numeric/lean_p.hpp), per
//             row and block; then
//     zyfa (Lean P): b     = (float)(8*kb + kBlockMaxCode) - 8 * m_new             [8 m_new exact: one rounding]
//                    y_j   = fmaf(S_j, c8, b),  c8 = 8 * c (exact)                  [one rounding]
//                    not fused (logits of 2^16 or more in log2 units, or m_new = +-inf; never in practice):
//                    y_j   = (t_j - m_new) * 8 + (float)(8*kb + kBlockMaxCode)   [the two-step form]
//                    Fused, the block's largest y is <= kBlockMaxCode + 1/8 (the roundings of t and b each move
//                    y by <= 1/16 below 2^16), so its code is kBlockMaxCode and no code passes it: the clamp
//                    below only ever takes y < 0 to 0 (and the two-step form's y is never above kBlockMaxCode).
//                    y_j = min(max(y_j, 0), kBlockMaxCode)          [v_med3_f32]
//                    code_j = round-half-to-even(y_j) as an integer   [v_rndne_f32 + v_cvt_u32_f32;
//                    cvt.rni on NVIDIA]. The code is read as an e4m3fn code: an e4m3 code grows by 8 per
//                    doubling, so code = 8x + 56 is 2^x, exact at integer x, linear in between (Lean P).
//                    y_j is NaN when t_j is (see NaN below); then code_j = 0x7F (the e4m3fn NaN), NOT what
//                    the clamp + v_cvt_u32_f32 would give (0): a kernel must select 0x7F for NaN y_j.
//     zyfa_exact:    fused: x_j = fmaf(S_j, c, (float)(kb + kTopExponent) - m_new)  [two roundings, as above];
//                    not fused: x_j = (t_j - m_new) + (float)(kb + kTopExponent);  code_j = e4m3fn_rne(exp2f(x_j)).
//     P_j = e4m3fn value of code_j   (<= 448 by construction: Lean P codes <= kBlockMaxCode <= 126,
//                                    exact-exp2 values <= 2^kTopExponent = 256)
//   l_blk  = sum of P_j in key order, fp32. EXACT in any order: every P_j is a multiple of 2^-9 and
//            the sum is < 64 * 448 < 2^15, so it needs < 24 significant bits (the "rounded row sum":
//            the denominator is the sum of exactly the values fed to P.V).
//   pv[e]  = sum of P_j * v_j[e] in key order, fp32 (products exact)          for e < head_dim_v
//   acc[e] = fmaf(acc[e], alpha, pv[e] * s_blk)         (pv * s_blk exact unless it underflows)
//   l      = fmaf(l, alpha, l_blk * s_blk)
//   m      = m_new
// END: out[e] = (acc[e] / l) * v_descale;   n == 0: out = 0, lse = -inf.
//   LSE (natural log). zyfa_exact: lse = (m + log2f(l)) * kLn2. zyfa (l is a sum of Lean P values, which
//   overestimate the exponentials) by Fp8LseMode:
//     corrected (default)  a second row sum l2 replaces, per block, the Lean P value of the block's largest
//                          logit by its exact value and divides the other values by Lean P's mean overestimate:
//                            e_blk = exp2f(dmax + (float)(kb + kTopExponent))     [one exp2 per row and block]
//                            P_top = e4m3fn value of the block's largest code (y grows with S_j, so it is the
//                                    code of the key of the largest S_j; a NaN code, 0x7F, makes l2 NaN anyway)
//                            f     = kLeanPInvMeanBias * 2^-((kBlockMaxCode - 120) / 8)  [the codes' lift]
//                            l2    = fmaf(l2, alpha, ((l_blk - P_top) * f + e_blk) * s_blk)
//                          lse = (m + log2f(l2)) * kLn2;
//     exact                l2 = fmaf(l2, alpha, sum over the block of exp2f(d_j) in key order)  [one exp2
//                          per probability, for the LSE only]; lse = (m + log2f(l2)) * kLn2;
//     mean_bias            the earlier rule: lse = (m + log2f(l) - (kBlockMaxCode - 120) / 8 -
//                          kLeanPMeanBiasLog2) * kLn2 (kept to measure what the correction changed).
//   The output never uses l2.
//   The bf16 output is float_to_bf16(out[e]) (RNE).
//
// NaN (all recipes). t_j is NaN when q_i or k_j holds a NaN code (0x7F/0xFF); t_j - m is NaN when a logit
// overflows fp32 to +inf (S_j * c > ~3.4e38, then t_j = m = +inf) or every logit of the row (zyfa: of the
// block, with no earlier block) is -inf. Every max above ignores NaN (max(a, NaN) = a, as fmaxf and
// v_max_f32 do), and a NaN t_j - m makes P_j the e4m3fn NaN (0x7F: float_to_e4m3fn for the
// exp2 recipes, an explicit select for Lean P), so l, every out[e] and the LSE of that row are NaN in
// every recipe, as in the bf16 path (fp32_attention.hpp). NaN in v_j makes the out columns it touches NaN.
// No step has undefined behaviour for any input (kb is clamped to [0, 255] before any integer use).
//
// STEP 2 (zyfa_v2) -- as STEP 2 of zyfa, except (c = block_max_code, 120 by default):
//   r      = m_blk, or m_new when m_blk == -inf (a block of -inf logits then gives codes 0 and weight 0)
//   s_blk  = exp2f(r - m_new) * 2^-kTopExponent            (fp32; exactly 2^-8 when the block sets the max)
//   per key: y_j = min(max((t_j - r) * 8 + (float)c, 0), c)  (NaN stays NaN: code 0x7F);
//            u = y_j * 0.125 (exact);  f = u - floorf(u) (exact);
//            g = fmaf(-f, f, f);  y_j = fmaf(-kLeanPChordCorrection, g, y_j)
//            code_j = lean_p_code(y_j, c)        [the chord 1 + f of Lean P bent onto 2^f: exact at f = 0, 1/2, 1]
//   acc[e] = fmaf(acc[e], alpha, pv[e] * s_blk);  l = fmaf(l, alpha, l_blk * s_blk);
//   lse = (m + log2f(l)) * kLn2 (Fp8LseMode::exact: as for zyfa). Cost against zyfa: four VALU ops per
//   probability (the multiply by 1/8, fract, two FMAs), one exp2 per row and block, and the block scale is no longer a
//   power of two: a kernel scales the block's P.V (or the accumulator) by s_blk in fp32 instead of folding it into the
//   MFMA's E8M0 scale.
//
// STEP 2 (aiter_like, scaled_p) -- two passes over the row with the exact row max:
//   m = max t_j;  p_j = exp2f(t_j - m) * gain (gain 1 for aiter_like, 256 for scaled_p; exact multiply);
//   code_j = e4m3fn_rne(p_j) (saturating, never reached);  P_j = value(code_j);
//   l = sum of p_j (unrounded fp32, key order);  acc[e] = sum of P_j * v_j[e] (fp32, key order);
//   out[e] = (acc[e] / l) * v_descale;  lse = (m + log2f(l / gain)) * kLn2.
//
// PEERS (aiter_asm_hd128, aiter_asm_hd256, aiter_ck, fa3) -- online softmax over tiles of B keys
// (peer_key_block), tile T holding keys [B*T, min(B*T + B, n)), visited in increasing T (fa3: decreasing).
// State m = -inf, l = 0, acc[:] = 0; gain G = 1 (AITER asm), 448 (CK), 256 (FA3). Per tile:
//   m_blk = max t_j; m_new = max(m, m_blk); alpha = exp2f(m - m_new) (exactly 1 when m == m_new; 0 first);
//   fast  = aiter_asm_hd256 and (m_blk - m) - (log2f(l) + 0.5f) <= -4 (false on the first tile; the kernel
//           takes one decision per wave of 32 rows -- exact if any row asks for it -- this model per row);
//   per key: d_j = t_j - m_new;
//     fast:      y_j = fmaf(d_j, 2^23, kAiterFastExpBias); p_j = the fp32 whose bits are (uint32)y_j (0 when
//                y_j < 0): Schraudolph's 2^x, exact at integer d_j times 2^-0.058, linear in between;
//     otherwise: p_j = exp2f(d_j) * G   (exact multiply for G = 1, 256; one rounding for 448);
//   code_j = e4m3fn_rne(p_j); P_j = value(code_j); l_blk = sum p_j (fp32, unrounded, key order);
//   pv[e] = sum P_j v_j[e]; l = l * alpha + l_blk; acc[e] = acc[e] * alpha + pv[e]; m = m_new.
// END: out[e] = (acc[e] / l) * v_descale; lse = (m + log2f(l / G)) * kLn2.
// What is modelled to fp32 rounding only: the kernels form the exponent with one FMA on the raw logit
// (FA3: exp2f(S * c - (m_S * c - 8)); AITER: v_fma_f32(S, c, -m c)), here d_j = t_j - m_new on the rounded
// t_j (at most an ulp of t_j apart, 2^-20 relative for |t| < 8: far below e4m3's 2^-4); their exp2 is the
// hardware approximation (v_exp_f32, ex2.approx); their P.V sums run in the matrix unit's order (Hopper's
// FP8 tensor cores also keep fewer accumulator bits than fp32; not modelled).
//
// WHAT A GPU KERNEL CAN MATCH.
//   Bit-exactly, given the same S_j (hence t_j and m_new): kb, s_blk, every Lean P code_j and P_j, every l_blk (an
//   exact sum), and the block max. Hence the set of codes fed to the P.V matrix op is reproducible bit
//   for bit, and a GPU test can compare its P codes (e.g. in the emulator) with these.
//   Only to fp32 summation-order tolerance: S_j (the matrix op's internal accumulation order differs
//   from increasing d; products are exact, so the difference is only the rounding of partial sums),
//   hence t_j and m; pv/acc (MFMA/wgmma accumulation order; on gfx950 the scaled MFMA folds s_blk into
//   the matrix op); alpha and zyfa_exact's exp2 (v_exp_f32 / ex2.approx are not correctly rounded);
//   log2f; the final division (kernels may use a reciprocal). Bit-exactness of this host code itself
//   needs strict IEEE fp32 (no -ffast-math; -ffp-contract=off, which zyfa's tests use).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "../numeric/constants.hpp"
#include "../numeric/bf16.hpp"
#include "../numeric/e4m3.hpp"
#include "../numeric/lean_p.hpp"
#include "../params.hpp"
#include "../status.hpp"
#include "head_matrix.hpp"

namespace zyfa::host {

/// The FP8 softmax/P recipes of the specification (see the file comment).
enum class Fp8Recipe : std::uint8_t {
  aiter_like,
  scaled_p,
  zyfa,
  zyfa_exact,  // the specification's own four (order kept)
  aiter_asm_hd128,
  aiter_asm_hd256,
  aiter_ck,
  fa3,     // the peers, as their kernels run (see PEERS)
  zyfa_v2  // the revised zyfa recipe (STEP 2 (zyfa_v2))
};

/// Every recipe, in enum order.
inline constexpr Fp8Recipe kAllFp8Recipes[9] = {
    Fp8Recipe::aiter_like,      Fp8Recipe::scaled_p, Fp8Recipe::zyfa, Fp8Recipe::zyfa_exact, Fp8Recipe::aiter_asm_hd128,
    Fp8Recipe::aiter_asm_hd256, Fp8Recipe::aiter_ck, Fp8Recipe::fa3,  Fp8Recipe::zyfa_v2};

/// Lower-case name ("aiter_like", "scaled_p", "zyfa", "zyfa_exact", "aiter_asm_hd128", "aiter_asm_hd256",
/// "aiter_ck", "fa3", "zyfa_v2").
inline const char* recipe_name(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::aiter_like:
      return "aiter_like";
    case Fp8Recipe::scaled_p:
      return "scaled_p";
    case Fp8Recipe::zyfa:
      return "zyfa";
    case Fp8Recipe::zyfa_exact:
      return "zyfa_exact";
    case Fp8Recipe::aiter_asm_hd128:
      return "aiter_asm_hd128";
    case Fp8Recipe::aiter_asm_hd256:
      return "aiter_asm_hd256";
    case Fp8Recipe::aiter_ck:
      return "aiter_ck";
    case Fp8Recipe::fa3:
      return "fa3";
    case Fp8Recipe::zyfa_v2:
      return "zyfa_v2";
  }
  return "?";
}

/// True for the peer recipes (the PEERS section of the file comment).
inline constexpr bool is_peer_recipe(Fp8Recipe r) {
  return r == Fp8Recipe::aiter_asm_hd128 || r == Fp8Recipe::aiter_asm_hd256 || r == Fp8Recipe::aiter_ck ||
         r == Fp8Recipe::fa3;
}

/// Keys per tile of a peer recipe for head_dim_qk `d` (0 for the specification's own recipes): AITER asm 128
/// (hd128) / 64 (hd256) (hsa/gfx950/fmha_v3_fwd/fmha_fwd.csv, ts_kv); CK 64 for d <= 64, else 128 (CK's
/// FP8 tile table); FA3 per hopper/tile_size.h (FP8, causal, no paging, two MMA warpgroups).
inline constexpr int peer_key_block(Fp8Recipe r, std::int64_t d) {
  switch (r) {
    case Fp8Recipe::aiter_asm_hd128:
      return 128;
    case Fp8Recipe::aiter_asm_hd256:
      return 64;
    case Fp8Recipe::aiter_ck:
      return d <= 64 ? 64 : 128;
    case Fp8Recipe::fa3:
      return d <= 64 ? 160 : d <= 96 ? 128 : d <= 128 ? 224 : d <= 192 ? 160 : 128;
    default:
      return 0;
  }
}

/// How zyfa's LSE is formed (see END in the file comment); zyfa_exact and the peers ignore it.
enum class Fp8LseMode : std::uint8_t { corrected, exact, mean_bias };

/// AITER hd256's fast-exp constant: (127 - 0.0579834) * 2^23 = 1064866816 (fp32 0x4E7DE250), read from the
/// kernel's code; the -0.058 shift centres Schraudolph's chord on 2^x, as kLeanPMeanBiasLog2 does for Lean P.
inline constexpr float kAiterFastExpBias = 1064866816.0f;

/// Lean P's mean overestimate of 2^x in log2 units: the chord value 1 + f over 2^f, averaged over a
/// uniformly distributed fractional part f in [0, 1), is the integral of (1 + f) 2^-f = 1 / (2 ln^2 2)
/// = 1.040684; log2 of that is 0.057533. Subtracted from zyfa's LSE (not from its output, where any
/// uniform factor cancels against the rounded row sum). Measured effect (host specification, CPU; which
/// inputs is not recorded in the repository): max |LSE error| fell from 0.039-0.058 to 0.011-0.042 nats.
inline constexpr float kLeanPMeanBiasLog2 = 0.0575327f;
// kKeyBlock, kLeanPCodeOfOne, kTopExponent, kBlockMaxCode, kLeanPFusedMaxLogit, kLeanPFusedMinScale,
// kLeanPInvMeanBias and lean_p_lse_rest: numeric/lean_p.hpp,
// shared with the GPU kernels.
using ::zyfa::kBlockMaxCode;
using ::zyfa::kKeyBlock;
using ::zyfa::kLeanPCodeOfOne;
using ::zyfa::kLeanPFusedMaxLogit;
using ::zyfa::kLeanPFusedMinScale;
using ::zyfa::kLeanPInvMeanBias;
using ::zyfa::kTopExponent;
using ::zyfa::lean_p_lse_rest;
/// zyfa_v2's chord correction in code units: Lean P's chord 1 + f exceeds 2^f by at most 0.0858 (at f = 1/2);
/// 8 * 4 * (3/2 - sqrt 2) f (1 - f) removes it exactly at f = 0, 1/2, 1 and to within 0.04 code elsewhere.
inline constexpr float kLeanPChordCorrection = 2.7451660f;
/// zyfa_v2's block max code: the block's own max maps exactly to code 120 = 2^kTopExponent.
inline constexpr int kBlockMaxCodeV2 = 120;
// kLog2e and kLn2 (fp32): numeric/constants.hpp, shared with make_params and the kernels.

/// Lean P's conversion: `y` is in code units, y = 8*x + c0 for a wanted value 2^x * 2^((c0 - 56)/8)
/// (c0 = kLeanPCodeOfOne gives 2^x itself). Clamps y to [0, max_code] and rounds half to even; the result,
/// read as an e4m3fn code, is exactly 2^x (times the constant) at integer x in the normal range and
/// linear in between (a piecewise-linear 2^x). A NaN `y` gives 0x7F (the e4m3fn NaN), so that a NaN logit
/// propagates to the output as in the other recipes; `max_code` in [0, 126] (0x7F is NaN).
inline std::uint8_t lean_p_code(float y, int max_code) {
  if (std::isnan(y)) return 0x7F;  // the float -> integer conversion below is undefined for NaN
  y = std::min(std::max(y, 0.0f), static_cast<float>(max_code));
  return static_cast<std::uint8_t>(std::nearbyint(y));  // default rounding mode: to nearest, ties to even
}

/// STEP 1: S_j for j < n, the dot products of the stored e4m3 code values before the logit factor c (see the file
/// comment; t_j = S_j * c is formed by fp8_row). `q_row` [head_dim_qk] and `k` [seqlen_k, head_dim_qk] hold stored
/// e4m3 code values. Returns S [n].
inline std::vector<float> fp8_scores_row(const AttentionParams& p, const float* q_row, const HeadMatrix& k,
                                         std::int64_t n) {
  std::vector<float> s(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < n; ++j) {
    const float* kr = k.row(j);
    float acc = 0.0f;
    for (std::int64_t d = 0; d < p.head_dim_qk; ++d) acc += q_row[d] * kr[d];
    s[static_cast<std::size_t>(j)] = acc;
  }
  return s;
}

/// Optional record of what one row of the specification did, for tests and for kernels to compare with.
struct Fp8RowTrace {
  std::vector<std::uint8_t> codes;            ///< [seqlen_k] e4m3fn code of P_j fed to P.V (0 for masked keys)
  std::vector<float> block_sums;              ///< zyfa/zyfa_exact: l_blk per visited block (fp32, exact)
  std::vector<int> block_shift;               ///< zyfa/zyfa_exact: kb per visited block
  std::vector<std::int64_t> block_first_key;  ///< first key of each visited block
  float max_before_cast = 0;  ///< largest fp32 probability handed to the e4m3 cast (Lean P: value of the largest code)
  float max_code_input = -std::numeric_limits<float>::infinity();  ///< Lean P: largest y before clamping
  float m = -std::numeric_limits<float>::infinity();               ///< final running max (log2 domain)
  float l = 0;                                                     ///< final row sum
};

/// Output of one row: out [head_dim_v] fp32 before bf16 rounding (descale applied), lse (natural log; -inf
/// for a row that sees no key).
struct Fp8RowOutput {
  std::vector<float> out;
  float lse = 0;
};

/// STEPS 1 (t = S * c) and 2 for one query row, given S from fp8_scores_row (size n = visible keys; c =
/// p.scale_softmax_log2) and v [seqlen_k,
/// head_dim_v] (stored code values). If `probs` is not null it receives the effective attention
/// probabilities [seqlen_k] the result corresponds to: P_j times its block's scale and the later alphas,
/// divided by l (computed in double from the fp32 quantities; 0 for masked keys). `block_max_code`
/// exists to re-measure the kBlockMaxCode finding; -1 (default) is the specification's (kBlockMaxCode for zyfa,
/// kBlockMaxCodeV2 for zyfa_v2). `lse_mode`: zyfa's LSE
/// rule (file comment, END).
inline Fp8RowOutput fp8_row(const AttentionParams& p, Fp8Recipe recipe, const std::vector<float>& scores,
                            const HeadMatrix& v, std::vector<double>* probs = nullptr, Fp8RowTrace* trace = nullptr,
                            int block_max_code = -1, Fp8LseMode lse_mode = Fp8LseMode::corrected) {
  const std::int64_t n = static_cast<std::int64_t>(scores.size()), dv = p.head_dim_v;
  const float c = p.scale_softmax_log2, c8 = c * 8.0f;  // c8: exact (c is a normal fp32 below 2^125, validate.hpp)
  std::vector<float> t(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < n; ++j) t[j] = scores[j] * c;
  Fp8RowOutput r;
  if (block_max_code < 0) block_max_code = recipe == Fp8Recipe::zyfa_v2 ? kBlockMaxCodeV2 : kBlockMaxCode;
  block_max_code = std::min(std::max(block_max_code, 120), 126);
  r.out.assign(static_cast<std::size_t>(dv), 0.0f);
  if (probs) probs->assign(static_cast<std::size_t>(p.seqlen_k), 0.0);
  if (trace) *trace = Fp8RowTrace{}, trace->codes.assign(static_cast<std::size_t>(p.seqlen_k), 0);
  if (n == 0) {
    r.lse = -std::numeric_limits<float>::infinity();
    return r;
  }
  std::vector<float> acc(static_cast<std::size_t>(dv), 0.0f);
  std::vector<std::uint8_t> code(static_cast<std::size_t>(n), 0);
  float m = -std::numeric_limits<float>::infinity(), l = 0.0f, lse_bias = 0.0f;

  if (recipe == Fp8Recipe::aiter_like || recipe == Fp8Recipe::scaled_p) {
    const float gain = recipe == Fp8Recipe::scaled_p ? 256.0f : 1.0f;
    for (float tj : t) m = std::max(m, tj);
    for (std::int64_t j = 0; j < n; ++j) {
      const float pj = std::exp2(t[j] - m) * gain;
      code[j] = float_to_e4m3fn(pj);
      if (trace) trace->max_before_cast = std::max(trace->max_before_cast, pj);
      l += pj;
      const float P = e4m3fn_to_float(code[j]);
      const float* vr = v.row(j);
      for (std::int64_t e = 0; e < dv; ++e) acc[e] += P * vr[e];
    }
    for (std::int64_t e = 0; e < dv; ++e) r.out[e] = (acc[e] / l) * p.v_descale;
    r.lse = (m + std::log2(l / gain)) * kLn2;
    if (probs)
      for (std::int64_t j = 0; j < n; ++j) (*probs)[j] = static_cast<double>(e4m3fn_to_float(code[j])) / l;
  } else if (is_peer_recipe(recipe)) {
    const std::int64_t B = peer_key_block(recipe, p.head_dim_qk), nt = (n + B - 1) / B;
    const float gain = recipe == Fp8Recipe::aiter_ck ? kE4M3fnMax : recipe == Fp8Recipe::fa3 ? 256.0f : 1.0f;
    std::vector<float> pv(static_cast<std::size_t>(dv));
    std::vector<double> tile_alpha(static_cast<std::size_t>(nt), 1.0);  // alpha applied when tile T arrived
    std::vector<std::int64_t> order;
    for (std::int64_t T = 0; T < nt; ++T) order.push_back(recipe == Fp8Recipe::fa3 ? nt - 1 - T : T);
    for (std::int64_t T : order) {
      const std::int64_t j0 = T * B, j1 = std::min<std::int64_t>(j0 + B, n);
      float m_blk = -std::numeric_limits<float>::infinity();
      for (std::int64_t j = j0; j < j1; ++j) m_blk = std::max(m_blk, t[j]);
      const float m_new = std::max(m, m_blk);
      const bool fast = recipe == Fp8Recipe::aiter_asm_hd256 && (m_blk - m) - (std::log2(l) + 0.5f) <= -4.0f;
      const float alpha = m == m_new ? 1.0f : std::exp2(m - m_new);
      float l_blk = 0.0f;
      std::fill(pv.begin(), pv.end(), 0.0f);
      for (std::int64_t j = j0; j < j1; ++j) {
        const float d = t[j] - m_new;
        float pj;
        if (fast) {
          const float y = std::fma(d, 8388608.0f, kAiterFastExpBias);  // d * 2^23 is exact
          if (std::isnan(y)) {
            pj = y;
          } else {
            const std::uint32_t bits = y < 1.0f ? 0u : static_cast<std::uint32_t>(y);  // v_cvt_u32_f32: truncate
            std::memcpy(&pj, &bits, 4);
          }
        } else {
          pj = std::exp2(d) * gain;
        }
        code[j] = float_to_e4m3fn(pj);
        if (trace) trace->max_before_cast = std::max(trace->max_before_cast, pj);
        l_blk += pj;
        const float P = e4m3fn_to_float(code[j]);
        const float* vr = v.row(j);
        for (std::int64_t e = 0; e < dv; ++e) pv[e] += P * vr[e];
      }
      l = l * alpha + l_blk;
      for (std::int64_t e = 0; e < dv; ++e) acc[e] = acc[e] * alpha + pv[e];
      m = m_new;
      tile_alpha[static_cast<std::size_t>(T)] = alpha;
      if (trace) trace->block_first_key.push_back(j0);
    }
    for (std::int64_t e = 0; e < dv; ++e) r.out[e] = (acc[e] / l) * p.v_descale;
    r.lse = (m + std::log2(l / gain)) * kLn2;
    if (probs) {
      double later = 1.0;  // product of the alphas of the tiles visited after the current one
      for (std::size_t oi = order.size(); oi-- > 0;) {
        const std::int64_t T = order[oi], j1 = std::min<std::int64_t>(T * B + B, n);
        for (std::int64_t j = T * B; j < j1; ++j)
          (*probs)[j] = static_cast<double>(e4m3fn_to_float(code[j])) * later / l;
        later *= tile_alpha[static_cast<std::size_t>(T)];
      }
    }
  } else {
    const bool v2 = recipe == Fp8Recipe::zyfa_v2;
    const bool lean = recipe == Fp8Recipe::zyfa || v2;
    // zyfa's LSE row sum (file comment, END): the Lean P values of a block's non-top keys are scaled by
    // lse_rest = kLeanPInvMeanBias * 2^-((block_max_code - 120) / 8).
    const float lse_rest = lean_p_lse_rest(block_max_code);
    float l2 = 0.0f;
    std::vector<float> pv(static_cast<std::size_t>(dv));
    std::vector<double> blk_scale, blk_alpha;  // per visited block: s_blk, and alpha applied when it arrived
    std::vector<std::int64_t> blk_first;
    for (std::int64_t j0 = 0; j0 < n; j0 += kKeyBlock) {
      const std::int64_t j1 = std::min<std::int64_t>(j0 + kKeyBlock, n);
      float m_blk = -std::numeric_limits<float>::infinity();
      for (std::int64_t j = j0; j < j1; ++j) m_blk = std::max(m_blk, t[j]);
      const float m_new = std::max(m, m_blk);
      const float alpha = std::exp2(m - m_new);
      const float dmax = m_blk - m_new;
      // -dmax >= 0 (or NaN when m_blk and m_new are both -inf or both +inf: a block of NaN logits or an fp32
      // overflow; the row's output is NaN then). The comparisons map NaN to kb = 0 without an undefined
      // float -> int conversion; for every non-NaN value this is (int)min(-dmax, 255).
      const float neg_dmax = -dmax;
      const int kb = neg_dmax >= 255.0f ? 255 : neg_dmax >= 0.0f ? static_cast<int>(neg_dmax) : 0;
      const float ref = v2 && m_blk == -std::numeric_limits<float>::infinity() ? m_new : m_blk;
      const float s_blk =
          v2 ? std::exp2(ref - m_new) * std::ldexp(1.0f, -kTopExponent) : std::ldexp(1.0f, -(kb + kTopExponent));
      // The fused forms (one FMA from S_j) below 2^16 in log2 units; the two-step forms beyond (file comment).
      const bool fused = std::fabs(m_new) < kLeanPFusedMaxLogit && c >= kLeanPFusedMinScale;
      const float b_lean = static_cast<float>(8 * kb + block_max_code) - 8.0f * m_new;
      const float b_exact = static_cast<float>(kb + kTopExponent) - m_new;
      float l_blk = 0.0f;
      std::fill(pv.begin(), pv.end(), 0.0f);
      for (std::int64_t j = j0; j < j1; ++j) {
        const float d = t[j] - m_new;
        if (v2) {
          float y = (t[j] - ref) * 8.0f + static_cast<float>(block_max_code);
          if (trace) trace->max_code_input = std::max(trace->max_code_input, y);
          if (!std::isnan(y)) {  // clamp first: -inf logits give code 0, not a NaN fractional part
            y = std::min(std::max(y, 0.0f), static_cast<float>(block_max_code));
            const float u = y * 0.125f, f = u - std::floor(u);
            y = std::fma(-kLeanPChordCorrection, std::fma(-f, f, f), y);
          }
          code[j] = lean_p_code(y, block_max_code);
          if (trace) trace->max_before_cast = std::max(trace->max_before_cast, e4m3fn_to_float(code[j]));
        } else if (lean) {
          const float y =
              fused ? std::fma(scores[j], c8, b_lean) : d * 8.0f + static_cast<float>(8 * kb + block_max_code);
          if (trace) trace->max_code_input = std::max(trace->max_code_input, y);
          code[j] = lean_p_code(y, block_max_code);
          if (trace) trace->max_before_cast = std::max(trace->max_before_cast, e4m3fn_to_float(code[j]));
        } else {
          const float x = fused ? std::fma(scores[j], c, b_exact) : d + static_cast<float>(kb + kTopExponent);
          const float pj = std::exp2(x);
          if (trace) trace->max_before_cast = std::max(trace->max_before_cast, pj);
          code[j] = float_to_e4m3fn(pj);
        }
        const float P = e4m3fn_to_float(code[j]);
        l_blk += P;
        const float* vr = v.row(j);
        for (std::int64_t e = 0; e < dv; ++e) pv[e] += P * vr[e];
      }
      for (std::int64_t e = 0; e < dv; ++e) acc[e] = std::fma(acc[e], alpha, pv[e] * s_blk);
      l = std::fma(l, alpha, l_blk * s_blk);
      if (!v2 && lean && lse_mode == Fp8LseMode::corrected) {
        // P_top: the block's largest code, the code of its largest logit (y grows with S_j and t_j).
        std::uint8_t top_code = 0;
        for (std::int64_t j = j0; j < j1; ++j) top_code = std::max(top_code, code[j]);
        const float e_blk = std::exp2(dmax + static_cast<float>(kb + kTopExponent));
        const float P_top = e4m3fn_to_float(top_code);
        l2 = std::fma(l2, alpha, ((l_blk - P_top) * lse_rest + e_blk) * s_blk);
      } else if (lean && lse_mode == Fp8LseMode::exact) {
        float e_sum = 0.0f;
        for (std::int64_t j = j0; j < j1; ++j) e_sum += std::exp2(t[j] - m_new);
        l2 = std::fma(l2, alpha, e_sum);
      }
      m = m_new;
      blk_scale.push_back(s_blk);
      blk_alpha.push_back(alpha);
      blk_first.push_back(j0);
      if (trace) {
        trace->block_sums.push_back(l_blk);
        trace->block_shift.push_back(kb);
        trace->block_first_key.push_back(j0);
      }
    }
    for (std::int64_t e = 0; e < dv; ++e) r.out[e] = (acc[e] / l) * p.v_descale;
    if (lean && !v2 && lse_mode == Fp8LseMode::mean_bias) {
      lse_bias = static_cast<float>(block_max_code - 120) / 8.0f + kLeanPMeanBiasLog2;
      r.lse = (m + std::log2(l) - lse_bias) * kLn2;
    } else {
      r.lse = (m + std::log2(lean && !(v2 && lse_mode != Fp8LseMode::exact) ? l2 : l)) * kLn2;
    }
    if (probs) {
      double later = 1.0;  // product of the alphas of the blocks after the current one
      for (std::size_t bi = blk_scale.size(); bi-- > 0;) {
        const std::int64_t j1 = std::min<std::int64_t>(blk_first[bi] + kKeyBlock, n);
        for (std::int64_t j = blk_first[bi]; j < j1; ++j)
          (*probs)[j] = static_cast<double>(e4m3fn_to_float(code[j])) * blk_scale[bi] * later / l;
        later *= blk_alpha[bi];
      }
    }
  }
  if (trace) {
    std::copy(code.begin(), code.end(), trace->codes.begin());
    trace->m = m;
    trace->l = l;
  }
  return r;
}

/// Effective attention probabilities [seqlen_k] of query row i of (batch b, query head h) under `recipe`
/// (see fp8_row's `probs`; 0 for masked keys, all 0 if the row sees no key). For KL divergences against
/// reference_probabilities (reference.hpp). p: e4m3fn params in host memory.
inline std::vector<double> fp8_probabilities(const AttentionParams& p, Fp8Recipe recipe, std::int64_t b, std::int64_t h,
                                             std::int64_t i) {
  const std::int64_t hk = h / p.group_size();
  const HeadMatrix q = read_q_head(p, b, h), k = read_k_head(p, b, hk), v = read_v_head(p, b, hk);
  std::vector<double> probs;
  fp8_row(p, recipe, fp8_scores_row(p, q.row(i), k, visible_keys(p, i)), v, &probs);
  return probs;
}

/// Output of fp8_attention: out_f32 / out_bf16 [batch, seqlen_q, num_heads, head_dim_v] dense row-major
/// (out_bf16 = float_to_bf16(out_f32)), lse [batch, num_heads, seqlen_q] fp32 natural log.
struct Fp8Output {
  std::vector<float> out_f32;
  std::vector<std::uint16_t> out_bf16;
  std::vector<float> lse;
};

/// Runs `recipe` on params `p` whose tensors are in HOST memory (`lse_mode`: zyfa's LSE rule). Errors: `r` null; q/k/v
/// not e4m3fn (invalid_argument naming "q"). p.out / p.softmax_lse are not touched.
inline Status fp8_attention(const AttentionParams& p, Fp8Recipe recipe, Fp8Output* r,
                            Fp8LseMode lse_mode = Fp8LseMode::corrected) {
  if (r == nullptr) return Status::invalid("r: output pointer is null");
  if (p.qkv_dtype != DType::e4m3fn)
    return Status::invalid(std::string("q: the FP8 specification needs e4m3fn inputs, got ") + dtype_name(p.qkv_dtype));
  const std::int64_t B = p.batch, H = p.num_heads, sq = p.seqlen_q, dv = p.head_dim_v;
  r->out_f32.assign(static_cast<std::size_t>(B * sq * H * dv), 0.0f);
  r->out_bf16.assign(r->out_f32.size(), 0);
  r->lse.assign(static_cast<std::size_t>(B * H * sq), 0.0f);
  for_each_query_row(p, [&](std::int64_t b, std::int64_t h, std::int64_t i, const float* q_row, const HeadMatrix& k,
                            const HeadMatrix& v) {
    const Fp8RowOutput row =
        fp8_row(p, recipe, fp8_scores_row(p, q_row, k, visible_keys(p, i)), v, nullptr, nullptr, -1, lse_mode);
    const std::size_t o = static_cast<std::size_t>(((b * sq + i) * H + h) * dv);
    for (std::int64_t e = 0; e < dv; ++e) {
      r->out_f32[o + e] = row.out[e];
      r->out_bf16[o + e] = float_to_bf16(row.out[e]);
    }
    r->lse[static_cast<std::size_t>((b * H + h) * sq + i)] = row.lse;
  });
  return Status::success();
}

}  // namespace zyfa::host
