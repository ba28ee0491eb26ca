// zyfa/bf16/online_softmax.hpp -- FlashAttention-2's online softmax on a thread's accumulator rows.
//
// Algorithm: Dao, "FlashAttention-2" (arXiv:2307.08691), Algorithm 1. Per query row the running max m (of
// the raw scores) and a thread-partial running sum l of exp2 values are kept; the scale is folded into the
// log2 domain: p = exp2(s * scale_log2 - m * scale_log2) with scale_log2 = softmax_scale * log2(e), one FMA
// per score. When m grows, l and the O accumulator are multiplied by exp2((m_old - m_new) * scale_log2).
// Rows that have seen no key yet keep m = -inf; the exponent base is then taken as 0 so that no
// (-inf) - (-inf) = NaN appears and every p is exp2(-inf) = 0.
// `Tile` supplies row_max/row_sum (cross-lane reductions over the lanes sharing a row) and exp2.
#pragma once
#include "../platform/platform.hpp"
#include "device_math.hpp"

namespace zyfa::bf16 {

/// Running max/sum of `Rows` query rows per thread (Tile::kRowsPerThread). SkipUnchangedRescale: rescale O
/// only when some row max of the warp grew (true), or after every key tile
/// (false: FlashAttention-2's behaviour, fewer live registers -- the hd256 tile on sm_90 needs it to not spill).
template <class Tile, int Rows, bool SkipUnchangedRescale = true>
struct OnlineSoftmax {
  float m[Rows];  ///< running max of the raw scores (not scaled), -inf before the first visible key
  float l[Rows];  ///< this thread's part of the running sum of exp2 values

  __device__ void init() {
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      m[r] = -__builtin_huge_valf();
      l[r] = 0.0f;
    }
  }

  /// Turns the raw scores `s` of one key tile (fp32, softmax_scale not applied; masked keys -inf) into
  /// unnormalized probabilities exp2(s * scale_log2 - m * scale_log2) (in place, fp32, relative to the new
  /// max) and rescales `o` to the new max. `scale_log2` = softmax_scale * log2(e).
  template <int SC, int OC>
  __device__ void update(float (&s)[Rows][SC], float (&o)[Rows][OC], float scale_log2) {
    float corr[Rows], base[Rows];
    bool grew = false;
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      // Four independent partial maxima: a dependency chain of SC/4 instead of SC (ncu on the H200 showed the
      // kernel stalling mostly on fixed-latency dependencies; the change measured within run-to-run noise).
      float part[4] = {m[r], s[r][0], s[r][1 % SC], s[r][2 % SC]};
#pragma unroll
      for (int i = 3; i < SC; ++i) part[i % 4] = fmax_(part[i % 4], s[r][i]);
      float mx = fmax_(fmax_(part[0], part[1]), fmax_(part[2], part[3]));
      mx = Tile::row_max(mx);
      base[r] = (mx == -__builtin_huge_valf()) ? 0.0f : mx * scale_log2;
      corr[r] = Tile::exp2(m[r] * scale_log2 - base[r]);  // exp2(-inf) = 0 on the first tile
      grew |= (mx != m[r]);
      m[r] = mx;
    }
    // Rescale O only when some row max of the warp grew (after the first key tiles it rarely does); the
    // branch is warp-uniform. Skipping is exact: an unchanged max gives corr == exp2(0) == 1.
    if (!SkipUnchangedRescale || Tile::warp_any(grew)) {
#pragma unroll
      for (int r = 0; r < Rows; ++r)
#pragma unroll
        for (int i = 0; i < OC; ++i) o[r][i] *= corr[r];
    }
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // four partial sums, fixed order: deterministic
#pragma unroll
      for (int i = 0; i < SC; ++i) {
        const float p = Tile::exp2(fma_(s[r][i], scale_log2, -base[r]));
        s[r][i] = p;
        sum[i % 4] += p;
      }
      l[r] = l[r] * corr[r] + ((sum[0] + sum[1]) + (sum[2] + sum[3]));
    }
  }
};

}  // namespace zyfa::bf16
