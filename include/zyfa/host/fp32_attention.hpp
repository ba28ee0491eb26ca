// zyfa/host/fp32_attention.hpp -- attention with fp32 arithmetic on the host: the host backend for bf16
// inputs, and the "bf16" yardstick of the accuracy report.
//
// Per (batch b, query head h, query row i), n = visible_keys(p, i), all fp32 with RNE:
//   c   = ((q_descale * k_descale) * softmax_scale) * kLog2e      (descales are 1 for bf16 inputs)
//   t_j = (sum over d in increasing order of q_i[d] * k_j[d]) * c    (log2 domain)
//   m   = max_j t_j  (exact row max, two passes);  p_j = exp2f(t_j - m);  l = sum_j p_j (key order)
//   acc[e] = sum_j p_j * v_j[e] (key order);  out[e] = (acc[e] / l) * v_descale;  lse = (m + log2f(l)) * ln 2
// A row that sees no key gives out = 0 and lse = -inf.
// Overflow: finite bf16 inputs whose logits overflow fp32 (|q.k * softmax_scale * log2(e)| > ~3.4e38) give
// t_j = +-inf. A +inf logit (or a row whose logits are all -inf) makes t_j - m = inf - inf = NaN, so that
// row's out and lse are NaN, as in every attention kernel that computes Q.K^T in fp32 (FlashAttention's
// too); a -inf next to finite logits gets weight 0. A NaN input gives NaN rows likewise.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "../params.hpp"
#include "head_matrix.hpp"
#include "../numeric/constants.hpp"  // kLog2e, kLn2
#include "fp8_spec.hpp"

namespace zyfa::host {

/// One query row in fp32 (see the file comment). `q_row` [head_dim_qk], `k` [seqlen_k, head_dim_qk], `v`
/// [seqlen_k, head_dim_v] hold stored values. Writes `out_row` [head_dim_v] (fp32, before bf16 rounding) and
/// `*lse` (natural log); `probs` (optional) receives p_j / l [seqlen_k], 0 for masked keys.
inline void fp32_attention_row(const AttentionParams& p, const float* q_row, const HeadMatrix& k, const HeadMatrix& v,
                               std::int64_t i, float* out_row, float* lse, std::vector<double>* probs = nullptr) {
  const std::int64_t n = visible_keys(p, i), dv = p.head_dim_v;
  const float c = p.scale_softmax_log2;  // ((q_descale * k_descale) * softmax_scale) * kLog2e, params.hpp
  if (probs) probs->assign(static_cast<std::size_t>(p.seqlen_k), 0.0);
  for (std::int64_t e = 0; e < dv; ++e) out_row[e] = 0.0f;
  if (n == 0) {
    *lse = -std::numeric_limits<float>::infinity();
    return;
  }
  std::vector<float> t(static_cast<std::size_t>(n));
  float m = -std::numeric_limits<float>::infinity();
  for (std::int64_t j = 0; j < n; ++j) {
    const float* kr = k.row(j);
    float s = 0.0f;
    for (std::int64_t d = 0; d < p.head_dim_qk; ++d) s += q_row[d] * kr[d];
    t[j] = s * c;
    m = std::max(m, t[j]);
  }
  float l = 0.0f;
  for (std::int64_t j = 0; j < n; ++j) {
    t[j] = std::exp2(t[j] - m);
    l += t[j];
    const float* vr = v.row(j);
    for (std::int64_t e = 0; e < dv; ++e) out_row[e] += t[j] * vr[e];
  }
  const float vd = v_descale_of(p);
  for (std::int64_t e = 0; e < dv; ++e) out_row[e] = (out_row[e] / l) * vd;
  *lse = (m + std::log2(l)) * kLn2;
  if (probs)
    for (std::int64_t j = 0; j < n; ++j) (*probs)[j] = static_cast<double>(t[j]) / l;
}

}  // namespace zyfa::host
