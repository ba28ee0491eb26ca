// examples/prefill/reference.hpp -- the example's own fp64 attention, an independent check of whichever
// backend ran (it shares no code with zyfa's kernels or its host specification).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace zyfa_example {

/// Shapes of one attention problem with contiguous BSHD tensors (sizes in elements).
struct Problem {
  std::int64_t batch = 0, seqlen_q = 0, seqlen_k = 0, num_heads = 0, num_heads_k = 0, head_dim_qk = 0, head_dim_v = 0;
  double softmax_scale = 0;  ///< multiplier of q·k (natural-log domain)
  bool causal = false;       ///< bottom-right aligned: query i sees key j iff j <= i + seqlen_k - seqlen_q
};

/// softmax(scale · q kᵀ + causal mask) v in fp64 by the textbook formula (max-subtracted exp, natural log).
/// q [batch, seqlen_q, num_heads, head_dim_qk], k [batch, seqlen_k, num_heads_k, head_dim_qk],
/// v [batch, seqlen_k, num_heads_k, head_dim_v], all contiguous float (values are used exactly).
/// Writes out [batch, seqlen_q, num_heads, head_dim_v] and lse [batch, num_heads, seqlen_q] (natural log).
/// Query head h uses key/value head h / (num_heads / num_heads_k). A row that sees no key gets out = 0 and
/// lse = -inf. Cost: batch·num_heads·seqlen_q·seqlen_k·(head_dim_qk + head_dim_v) multiply-adds.
inline void reference_attention_fp64(const Problem& p, const float* q, const float* k, const float* v,
                                     std::vector<double>* out, std::vector<double>* lse) {
  const std::int64_t B = p.batch, SQ = p.seqlen_q, SK = p.seqlen_k, H = p.num_heads, HK = p.num_heads_k;
  const std::int64_t DQ = p.head_dim_qk, DV = p.head_dim_v, group = H / HK;
  out->assign(static_cast<std::size_t>(B * SQ * H * DV), 0.0);
  lse->assign(static_cast<std::size_t>(B * H * SQ), -std::numeric_limits<double>::infinity());
  std::vector<double> s(static_cast<std::size_t>(SK)), acc(static_cast<std::size_t>(DV));
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h) {
      const std::int64_t hk = h / group;
      for (std::int64_t i = 0; i < SQ; ++i) {
        const std::int64_t last = p.causal ? std::min(SK - 1, i + SK - SQ) : SK - 1;  // last visible key
        if (last < 0) continue;                                                       // sees no key: zeros, -inf
        const float* qi = q + ((b * SQ + i) * H + h) * DQ;
        double m = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j <= last; ++j) {
          const float* kj = k + ((b * SK + j) * HK + hk) * DQ;
          double dot = 0;
          for (std::int64_t d = 0; d < DQ; ++d) dot += static_cast<double>(qi[d]) * kj[d];
          s[j] = dot * p.softmax_scale;
          m = std::max(m, s[j]);
        }
        double l = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (std::int64_t j = 0; j <= last; ++j) {
          const double e = std::exp(s[j] - m);
          l += e;
          const float* vj = v + ((b * SK + j) * HK + hk) * DV;
          for (std::int64_t d = 0; d < DV; ++d) acc[d] += e * vj[d];
        }
        double* o = out->data() + ((b * SQ + i) * H + h) * DV;
        for (std::int64_t d = 0; d < DV; ++d) o[d] = acc[d] / l;
        (*lse)[(b * H + h) * SQ + i] = m + std::log(l);
      }
    }
}

}  // namespace zyfa_example
