// zyfa/bf16/epilogue.hpp -- normalizes the O accumulator, writes out (bf16) and softmax_lse (fp32).
//
// out[row] = O[row] / l[row]; softmax_lse[row] = ln(sum_j exp(scale * s_j)) = (m * scale_log2 + log2(l)) * ln 2
// (natural log; m is the raw-score row max, scale_log2 = softmax_scale * log2(e), see online_softmax.hpp).
// A row that saw no key (l == 0) gets out = 0 exactly and lse = -inf (AttentionOptions::causal).
// A row whose l is NaN (NaN in q or in a key it sees, or fp32 logit overflow) gets NaN out and NaN lse, never a
// finite or zero answer (tests/gpu/test_flash_attn.cu, "small: NaN inputs give NaN rows").
#pragma once
#include <cstdint>

#include "../numeric/constants.hpp"
#include "../platform/platform.hpp"
#include "fwd_args.hpp"
#include "online_softmax.hpp"

namespace zyfa::bf16 {

/// float -> bf16 bit pattern, round to nearest even; NaN -> quiet NaN with x's sign (without the NaN select,
/// CUDA's canonical NaN 0x7FFFFFFF would round to 0x8000 = -0). Same results as numeric/bf16.hpp's float_to_bf16.
__device__ __forceinline__ std::uint32_t bf16_bits_rne(float x) {
  const std::uint32_t u = __builtin_bit_cast(std::uint32_t, x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (u >> 16) | 0x40u;
  return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}

/// Writes this thread's rows. `o_tile` points to out row 0 of the block (batch/head applied; bf16 bits,
/// `o_row_stride` in elements), `lse_tile` to softmax_lse of row 0 of the block (fp32, natural log; nullptr:
/// not written). Rows >= rows_valid and columns >= DV (the real head_dim_v; the tile may be padded) are skipped.
/// `scale_log2` = softmax_scale * log2(e).
template <int DV, class Tile, int Rows, int OC, bool Skip>
__device__ void store_output(float (&o)[Rows][OC], const OnlineSoftmax<Tile, Rows, Skip>& sm, std::uint16_t* o_tile,
                             std::int64_t o_row_stride, float* lse_tile, int rows_valid, float scale_log2, int warp,
                             int lane) {
#pragma unroll
  for (int r = 0; r < Rows; ++r) {
    const float l = Tile::row_sum(sm.l[r]);
    const bool no_key = l == 0.0f;  // NaN l is not "no key": it must propagate
    const float inv = no_key ? 0.0f : 1.0f / l;
    const int row = Tile::row_of(warp, lane, r);
    if (row >= rows_valid) continue;
    std::uint16_t* dst = o_tile + static_cast<std::int64_t>(row) * o_row_stride;
#pragma unroll
    for (int i = 0; i < OC; i += 2) {
      if (DV % 32 != 0 && Tile::col_of(lane, i) >= DV) continue;  // padding columns (head dim not a multiple of 32)
      const std::uint32_t packed = bf16_bits_rne(o[r][i] * inv) | (bf16_bits_rne(o[r][i + 1] * inv) << 16);
      *reinterpret_cast<std::uint32_t*>(dst + Tile::col_of(lane, i)) = packed;
    }
    if (lse_tile != nullptr && Tile::is_row_leader(lane)) {
      lse_tile[row] = no_key ? -__builtin_huge_valf() : (sm.m[r] * scale_log2 + zyfa::dev::log2f_fast(l)) * kLn2;
    }
  }
}

}  // namespace zyfa::bf16
