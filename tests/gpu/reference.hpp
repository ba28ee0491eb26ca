// tests/gpu/reference.hpp -- fp64 reference attention for the GPU tests (independent of the kernels).
//
// A second, independent fp64 reference (multithreaded, so the large cases stay fast); the library's own host
// executable specification (include/zyfa/host/reference.hpp) is compared with the GPU in the test case
// "small: every built-in head dim against the host executable specification". This one computes:
// out[b,i,h,:] = sum_j softmax_j(scale * q[b,i,h,:].k[b,j,hk,:]) v[b,j,hk,:], hk = h / (num_heads/num_heads_k),
// causal bottom-right (key j visible to query i iff j <= i + seqlen_k - seqlen_q); a row with no visible key
// gives out = 0 and lse = -inf. lse is the natural log of the softmax denominator (FlashAttention's).
// Inputs are bf16 bit patterns converted exactly to double; all arithmetic in double.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

namespace zyfa_test {

inline double bf16_to_double(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline std::uint16_t float_to_bf16(float f) {  // round to nearest even (finite inputs)
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

/// A host BSHD view: element (b, s, h, d) at data[b*sb + s*ss + h*sh + d].
struct HostView {
  const std::uint16_t* data;
  std::int64_t sb, ss, sh;
  double at(std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t d) const {
    return bf16_to_double(data[b * sb + s * ss + h * sh + d]);
  }
};

/// out: [b, sq, h, dv] contiguous doubles; lse: [b, h, sq]; abs_out: [b, sq, h, dv] = sum_j p_j |v_j| (the
/// scale of the rounding error of a bf16 P.V, used for the element-wise tolerance).
inline void reference_attention(const HostView& q, const HostView& k, const HostView& v, int batch, int seqlen_q,
                                int seqlen_k, int num_heads, int num_heads_k, int dqk, int dv, double scale,
                                bool causal, std::vector<double>& out, std::vector<double>& lse,
                                std::vector<double>& abs_out) {
  out.assign(static_cast<size_t>(batch) * seqlen_q * num_heads * dv, 0.0);
  abs_out.assign(out.size(), 0.0);
  lse.assign(static_cast<size_t>(batch) * num_heads * seqlen_q, 0.0);
  const int group = num_heads / num_heads_k;
  const int jobs = batch * num_heads;
  auto work = [&](int job0, int stride) {
    std::vector<double> s(seqlen_k);
    for (int job = job0; job < jobs; job += stride) {
      const int b = job / num_heads, h = job % num_heads, hk = h / group;
      for (int i = 0; i < seqlen_q; ++i) {
        const std::int64_t last =
            causal ? std::min<std::int64_t>(seqlen_k - 1, static_cast<std::int64_t>(i) + seqlen_k - seqlen_q)
                   : seqlen_k - 1;
        double* o = &out[((static_cast<size_t>(b) * seqlen_q + i) * num_heads + h) * dv];
        double* oa = &abs_out[((static_cast<size_t>(b) * seqlen_q + i) * num_heads + h) * dv];
        double& l = lse[(static_cast<size_t>(b) * num_heads + h) * seqlen_q + i];
        if (last < 0) {
          l = -std::numeric_limits<double>::infinity();
          continue;
        }
        double mx = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j <= last; ++j) {
          double acc = 0;
          for (int d = 0; d < dqk; ++d) acc += q.at(b, i, h, d) * k.at(b, j, hk, d);
          s[j] = acc * scale;
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (std::int64_t j = 0; j <= last; ++j) {
          s[j] = std::exp(s[j] - mx);
          sum += s[j];
        }
        for (std::int64_t j = 0; j <= last; ++j) {
          const double p = s[j] / sum;
          for (int d = 0; d < dv; ++d) {
            const double x = v.at(b, j, hk, d);
            o[d] += p * x;
            oa[d] += p * std::fabs(x);
          }
        }
        l = mx + std::log(sum);
      }
    }
  };
  const int nt = std::max(1, std::min<int>(jobs, static_cast<int>(std::thread::hardware_concurrency())));
  std::vector<std::thread> threads;
  for (int t = 0; t < nt; ++t) threads.emplace_back(work, t, nt);
  for (auto& t : threads) t.join();
}

}  // namespace zyfa_test
