// zyfa/host/reference.hpp -- fp64 reference attention: the ground truth every other result is measured
// against (host memory, plain loops, no blocking, no online softmax).
//
// For each batch b, query head h (key/value head hk = h / (num_heads / num_heads_k)) and query row i:
//   s_j   = softmax_scale * q_descale * k_descale * sum_d q[b,i,h,d] k[b,j,hk,d]     (double, natural log)
//           for the visible keys j < visible_keys(p, i) (causal: bottom-right, decode.hpp);
//   m     = max_j s_j;   e_j = exp(s_j - m);   l = sum_j e_j          (shift-invariant: no overflow)
//   out   = v_descale * sum_j e_j v[b,j,hk,:] / l;    lse = m + ln(l)  (natural log)
// Stored q/k/v values are decoded per p.qkv_dtype (bf16 bits, or e4m3fn codes) and multiplied by the
// descales in double, so the reference for FP8 inputs is exact attention on the dequantized inputs.
// A row that sees no key: out = exactly 0, lse = -inf (never NaN), probabilities all 0.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "../params.hpp"
#include "../status.hpp"
#include "head_matrix.hpp"

namespace zyfa::host {

/// Result of reference_attention: out [batch, seqlen_q, num_heads, head_dim_v] and
/// lse [batch, num_heads, seqlen_q] (natural log), both dense row-major doubles.
struct ReferenceOutput {
  std::vector<double> out;
  std::vector<double> lse;
};

/// One query row of the fp64 reference. `q_row` [head_dim_qk] and `k` [seqlen_k, head_dim_qk],
/// `v` [seqlen_k, head_dim_v] hold stored (not yet descaled) values. Writes `out_row` [head_dim_v] and
/// `*lse`; if `probs` is not null it receives the attention probabilities [seqlen_k] (0 for keys the row
/// does not see; all 0 if it sees none). Computes in double throughout.
inline void reference_row(const AttentionParams& p, const float* q_row, const HeadMatrix& k, const HeadMatrix& v,
                          std::int64_t i, double* out_row, double* lse, std::vector<double>* probs) {
  const std::int64_t n = visible_keys(p, i), dqk = p.head_dim_qk, dv = p.head_dim_v;
  const double c = static_cast<double>(p.softmax_scale) * q_descale_of(p) * k_descale_of(p);
  std::vector<double> s(static_cast<std::size_t>(n));
  double m = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < n; ++j) {
    const float* kr = k.row(j);
    double acc = 0;
    for (std::int64_t d = 0; d < dqk; ++d) acc += static_cast<double>(q_row[d]) * kr[d];
    s[j] = acc * c;
    m = std::max(m, s[j]);
  }
  if (probs) probs->assign(static_cast<std::size_t>(p.seqlen_k), 0.0);
  for (std::int64_t d = 0; d < dv; ++d) out_row[d] = 0.0;
  if (n == 0) {
    *lse = -std::numeric_limits<double>::infinity();
    return;
  }
  double l = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    s[j] = std::exp(s[j] - m);
    l += s[j];
    const float* vr = v.row(j);
    for (std::int64_t d = 0; d < dv; ++d) out_row[d] += s[j] * vr[d];
  }
  const double vd = v_descale_of(p);
  for (std::int64_t d = 0; d < dv; ++d) out_row[d] = out_row[d] / l * vd;
  *lse = m + std::log(l);
  if (probs)
    for (std::int64_t j = 0; j < n; ++j) (*probs)[j] = s[j] / l;
}

/// fp64 reference attention on params `p` whose tensors live in HOST memory (p from make_params; q/k/v
/// bf16 or e4m3fn/e4m3fnuz). Fills `r->out` [batch, seqlen_q, num_heads, head_dim_v] and `r->lse`
/// [batch, num_heads, seqlen_q] (natural log, -inf for rows that see no key). p.out and p.softmax_lse are
/// neither read nor written. Errors: `r` null (invalid_argument naming "r").
inline Status reference_attention(const AttentionParams& p, ReferenceOutput* r) {
  if (r == nullptr) return Status::invalid("r: output pointer is null");
  const std::int64_t B = p.batch, H = p.num_heads, sq = p.seqlen_q, dv = p.head_dim_v;
  r->out.assign(static_cast<std::size_t>(B * sq * H * dv), 0.0);
  r->lse.assign(static_cast<std::size_t>(B * H * sq), 0.0);
  for_each_query_row(p, [&](std::int64_t b, std::int64_t h, std::int64_t i, const float* q_row, const HeadMatrix& k,
                            const HeadMatrix& v) {
    reference_row(p, q_row, k, v, i, &r->out[static_cast<std::size_t>(((b * sq + i) * H + h) * dv)],
                  &r->lse[static_cast<std::size_t>((b * H + h) * sq + i)], nullptr);
  });
  return Status::success();
}

/// fp64 attention probabilities of query row i of (batch b, query head h): [seqlen_k], summing to 1 over
/// the visible keys, 0 elsewhere (all 0 if the row sees no key). For KL divergences (accuracy.hpp).
inline std::vector<double> reference_probabilities(const AttentionParams& p, std::int64_t b, std::int64_t h,
                                                   std::int64_t i) {
  const std::int64_t hk = h / p.group_size();
  const HeadMatrix q = read_q_head(p, b, h), k = read_k_head(p, b, hk), v = read_v_head(p, b, hk);
  std::vector<double> out(static_cast<std::size_t>(p.head_dim_v)), probs;
  double lse = 0;
  reference_row(p, q.row(i), k, v, i, out.data(), &lse, &probs);
  return probs;
}

}  // namespace zyfa::host
