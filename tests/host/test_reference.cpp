// fp64 reference attention (zyfa/host/reference.hpp) and the bf16 host backend (fp32 arithmetic):
// against a naive independent formula, causal alignment, edge lengths, huge logits, head-dim coverage, GQA.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>
#include <zyfa/zyfa.hpp>

#include "problem.hpp"

using namespace zyfa_test;
using zyfa::DType;

namespace {

// Naive attention, written independently of reference.hpp: long double, explicit [seqlen_q, seqlen_k]
// score matrix per head with the mask as a boolean matrix built from the bottom-right rule
// "key j is hidden from query i iff j - i > seqlen_k - seqlen_q", softmax as exp(s) / sum exp(s) after
// subtracting the row max, P.V as a matrix product. Reads inputs from the bf16 arrays directly.
struct Naive {
  std::vector<long double> out, lse;
};
Naive naive_attention(const Problem& pr) {
  const Shape& s = pr.shape;
  const long double scale = pr.params.softmax_scale;
  Naive r;
  r.out.assign(static_cast<std::size_t>(s.batch * s.seqlen_q * s.num_heads * s.head_dim_v), 0);
  r.lse.assign(static_cast<std::size_t>(s.batch * s.num_heads * s.seqlen_q), 0);
  // element value: bf16 bits, or e4m3fn code times the tensor's descale (w: 0 q, 1 k, 2 v)
  const bool fp8 = pr.dtype == DType::e4m3fn;
  auto at = [&](int w, std::int64_t idx) -> long double {
    if (!fp8) return zyfa::bf16_to_float((w == 0 ? pr.q16 : w == 1 ? pr.k16 : pr.v16)[idx]);
    const float d = w == 0 ? pr.options.q_descale : w == 1 ? pr.options.k_descale : pr.options.v_descale;
    return (long double)zyfa::e4m3fn_to_float((w == 0 ? pr.q8 : w == 1 ? pr.k8 : pr.v8)[idx]) * d;
  };
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.num_heads; ++h) {
      const std::int64_t hk = h * s.num_heads_k / s.num_heads;
      std::vector<long double> S(static_cast<std::size_t>(s.seqlen_q * s.seqlen_k));
      std::vector<bool> hidden(S.size());
      for (std::int64_t i = 0; i < s.seqlen_q; ++i)
        for (std::int64_t j = 0; j < s.seqlen_k; ++j) {
          long double acc = 0;
          for (std::int64_t d = 0; d < s.head_dim_qk; ++d)
            acc += at(0, ((b * s.seqlen_q + i) * s.num_heads + h) * s.head_dim_qk + d) *
                   at(1, ((b * s.seqlen_k + j) * s.num_heads_k + hk) * s.head_dim_qk + d);
          S[i * s.seqlen_k + j] = acc * scale;
          hidden[i * s.seqlen_k + j] = s.causal && (j - i > s.seqlen_k - s.seqlen_q);
        }
      for (std::int64_t i = 0; i < s.seqlen_q; ++i) {
        long double mx = -INFINITY, sum = 0;
        for (std::int64_t j = 0; j < s.seqlen_k; ++j)
          if (!hidden[i * s.seqlen_k + j]) mx = std::max(mx, S[i * s.seqlen_k + j]);
        std::vector<long double> P(static_cast<std::size_t>(s.seqlen_k), 0);
        for (std::int64_t j = 0; j < s.seqlen_k; ++j)
          if (!hidden[i * s.seqlen_k + j]) sum += (P[j] = std::exp(S[i * s.seqlen_k + j] - mx));
        r.lse[(b * s.num_heads + h) * s.seqlen_q + i] = sum > 0 ? mx + std::log(sum) : -INFINITY;
        for (std::int64_t e = 0; e < s.head_dim_v; ++e) {
          long double o = 0;
          for (std::int64_t j = 0; j < s.seqlen_k; ++j)
            if (P[j] != 0) o += P[j] / sum * at(2, ((b * s.seqlen_k + j) * s.num_heads_k + hk) * s.head_dim_v + e);
          r.out[((b * s.seqlen_q + i) * s.num_heads + h) * s.head_dim_v + e] = o;
        }
      }
    }
  return r;
}

zyfa::host::ReferenceOutput reference(const Problem& pr) {
  zyfa::host::ReferenceOutput r;
  const zyfa::Status st = zyfa::host::reference_attention(pr.params, &r);
  REQUIRE_MESSAGE(st.ok(), st.message);
  return r;
}

// Checks the fp64 reference against the naive formula: outputs to 1e-12 relative to max(1, max |out|), LSE to 1e-12,
// and rows that see no key as exact 0 / -inf. Returns the number of rows that see no key.
int check_against_naive(const Problem& pr) {
  const auto ref = reference(pr);
  const Naive nv = naive_attention(pr);
  REQUIRE(ref.out.size() == nv.out.size());
  double max_err = 0, max_out = 1;
  for (std::size_t i = 0; i < ref.out.size(); ++i) {
    REQUIRE(!std::isnan(ref.out[i]));
    max_err = std::max(max_err, std::fabs(ref.out[i] - static_cast<double>(nv.out[i])));
    max_out = std::max(max_out, std::fabs(ref.out[i]));
  }
  CHECK(max_err < 1e-12 * max_out);
  int empty_rows = 0;
  for (std::size_t i = 0; i < ref.lse.size(); ++i) {
    REQUIRE(!std::isnan(ref.lse[i]));
    if (std::isinf(static_cast<double>(nv.lse[i]))) {
      ++empty_rows;
      CHECK(ref.lse[i] == -std::numeric_limits<double>::infinity());
    } else {
      CHECK(std::fabs(ref.lse[i] - static_cast<double>(nv.lse[i])) < 1e-12);
    }
  }
  // rows that see no key: output exactly 0
  const Shape& s = pr.shape;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t i = 0; i < s.seqlen_q; ++i)
      if (s.causal && i + s.seqlen_k - s.seqlen_q < 0)
        for (std::int64_t h = 0; h < s.num_heads; ++h)
          for (std::int64_t e = 0; e < s.head_dim_v; ++e)
            CHECK(ref.out[((b * s.seqlen_q + i) * s.num_heads + h) * s.head_dim_v + e] == 0.0);
  return empty_rows;
}

}  // namespace

TEST_CASE("reference equals a naive long-double formula (GQA, MLA head dims, causal and not)") {
  for (bool causal : {false, true}) {
    Shape s;
    s.batch = 2, s.seqlen_q = 37, s.seqlen_k = 37, s.num_heads = 4, s.num_heads_k = 2;
    s.head_dim_qk = 192, s.head_dim_v = 128, s.causal = causal;
    Problem pr(s, DType::bf16, gaussian(1), gaussian(2), gaussian(3));
    CHECK(check_against_naive(pr) == 0);
  }
  Shape mqa;  // MQA: one key/value head
  mqa.seqlen_q = 9, mqa.seqlen_k = 23, mqa.num_heads = 3, mqa.num_heads_k = 1, mqa.causal = true;
  Problem pr(mqa, DType::bf16, gaussian(4, 2.0f), gaussian(5), gaussian(6));
  CHECK(check_against_naive(pr) == 0);
}

TEST_CASE("reference on FP8 inputs equals the naive formula on the dequantized values (descales applied)") {
  Shape s;
  s.seqlen_q = 21, s.seqlen_k = 50, s.num_heads = 2, s.num_heads_k = 1, s.causal = true;
  auto scaled = [](Problem::Gen g, float f) {
    return [g, f](std::int64_t b, std::int64_t r, std::int64_t h, std::int64_t d) { return g(b, r, h, d) * f; };
  };
  Problem pr(s, DType::e4m3fn, scaled(gaussian(17), 1e-3f), scaled(gaussian(18), 50.0f), scaled(gaussian(19), 7e3f),
             0.02f);
  CHECK(check_against_naive(pr) == 0);
}

TEST_CASE("bottom-right causal: seqlen_q > seqlen_k leaves the first rows with no key (exact zeros, -inf LSE)") {
  Shape s;
  s.seqlen_q = 20, s.seqlen_k = 7, s.num_heads = 2, s.num_heads_k = 1, s.causal = true;
  Problem pr(s, DType::bf16, gaussian(7), gaussian(8), gaussian(9));
  CHECK(check_against_naive(pr) == 13 * 2);  // rows 0..12 of both heads see nothing
  // row 13 sees exactly key 0: its output is v[0] exactly (up to the descale of 1)
  const auto ref = reference(pr);
  for (std::int64_t e = 0; e < s.head_dim_v; ++e)
    CHECK(ref.out[(13 * 2 + 0) * 64 + e] == doctest::Approx(zyfa::bf16_to_float(pr.v16[e])).epsilon(1e-15));
  // the bf16 host backend: the same rows are exact zeros and -inf, never NaN
  REQUIRE(zyfa::host::run_attention(pr.params).ok());
  for (std::int64_t h = 0; h < 2; ++h)
    for (std::int64_t i = 0; i < s.seqlen_q; ++i) {
      const float lse = pr.lse[h * s.seqlen_q + i];
      REQUIRE(!std::isnan(lse));
      CHECK((i < 13) == (lse == -std::numeric_limits<float>::infinity()));
      for (std::int64_t e = 0; e < 64; ++e) {
        const std::uint16_t o = pr.out[(i * 2 + h) * 64 + e];
        CHECK((o & 0x7F80) != 0x7F80);  // finite
        if (i < 13) CHECK(o == 0);
      }
    }
}

TEST_CASE("bottom-right causal: seqlen_q < seqlen_k (query i sees keys 0..i + seqlen_k - seqlen_q)") {
  Shape s;
  s.seqlen_q = 5, s.seqlen_k = 70, s.num_heads = 1, s.num_heads_k = 1, s.causal = true;
  Problem pr(s, DType::bf16, gaussian(10), gaussian(11), gaussian(12));
  CHECK(check_against_naive(pr) == 0);
  for (std::int64_t i = 0; i < 5; ++i) {
    const auto probs = zyfa::host::reference_probabilities(pr.params, 0, 0, i);
    for (std::int64_t j = 0; j < 70; ++j) CHECK((probs[j] > 0) == (j <= i + 65));
  }
  CHECK(zyfa::host::visible_keys(pr.params, 0) == 66);
}

TEST_CASE("lengths 1, 8, 17, 63, 64, 65, 127, 129, 1000: reference vs naive, fp32 backend vs reference") {
  for (std::int64_t n : {1, 8, 17, 63, 64, 65, 127, 129, 1000}) {
    CAPTURE(n);
    Shape s;
    s.seqlen_q = s.seqlen_k = n, s.num_heads = 1, s.num_heads_k = 1, s.causal = true;
    Problem pr(s, DType::bf16, gaussian(100 + n), gaussian(200 + n), gaussian(300 + n));
    if (n <= 129) CHECK(check_against_naive(pr) == 0);  // the naive O(n^2 d) long-double loop is slow at 1000
    const auto ref = reference(pr);
    REQUIRE(zyfa::host::run_attention(pr.params).ok());
    double err = 0, norm = 0;
    for (std::size_t i = 0; i < ref.out.size(); ++i) {
      const double d = zyfa::bf16_to_float(pr.out[i]) - ref.out[i];
      err += d * d, norm += ref.out[i] * ref.out[i];
    }
    CHECK(std::sqrt(err / norm) < 4e-3);  // bf16 output rounding (2^-9 relative) dominates
    for (std::size_t i = 0; i < ref.lse.size(); ++i) CHECK(pr.lse[i] == doctest::Approx(ref.lse[i]).epsilon(1e-5));
  }
}

TEST_CASE("logits of magnitude 1e5: no overflow, equal to the shift-invariant reference") {
  // Dim 63 of q holds 2^17 for every query and dim 63 of k holds 1 for every key: every logit of a row gets
  // the same +2^17 * scale (~16384 at scale 1/8; the raw dot products are ~1.3e5), which softmax ignores.
  Shape s;
  s.seqlen_q = 48, s.seqlen_k = 80, s.num_heads = 2, s.num_heads_k = 2, s.causal = true;
  auto base_q = gaussian(13), base_k = gaussian(14);
  auto q_shift = [&](std::int64_t b, std::int64_t r, std::int64_t h, std::int64_t d) {
    return d == 63 ? 131072.0f : base_q(b, r, h, d);
  };
  auto k_shift = [&](std::int64_t b, std::int64_t r, std::int64_t h, std::int64_t d) {
    return d == 63 ? 1.0f : base_k(b, r, h, d);
  };
  auto q_plain = [&](std::int64_t b, std::int64_t r, std::int64_t h, std::int64_t d) {
    return d == 63 ? 0.0f : base_q(b, r, h, d);
  };
  Problem big(s, DType::bf16, q_shift, k_shift, gaussian(15), 1.0f);
  Problem plain(s, DType::bf16, q_plain, k_shift, gaussian(15), 1.0f);
  const auto rb = reference(big), rp = reference(plain);
  for (std::size_t i = 0; i < rb.out.size(); ++i) {
    REQUIRE(std::isfinite(rb.out[i]));
    CHECK(rb.out[i] == doctest::Approx(rp.out[i]).epsilon(1e-9).scale(1));
  }
  for (std::size_t i = 0; i < rb.lse.size(); ++i)
    CHECK(rb.lse[i] - rp.lse[i] == doctest::Approx(131072.0).epsilon(1e-12));
  // fp32 host backend: finite, and equal to the plain problem up to fp32 resolution of ~1.3e5 logits (2^-7)
  REQUIRE(zyfa::host::run_attention(big.params).ok());
  double max_err = 0;
  for (std::size_t i = 0; i < rb.out.size(); ++i) {
    const float o = zyfa::bf16_to_float(big.out[i]);
    REQUIRE(std::isfinite(o));
    max_err = std::max(max_err, std::fabs(o - rp.out[i]));
  }
  CHECK(max_err < 0.05);
  for (float l : big.lse) CHECK(std::isfinite(l));
}

TEST_CASE("every head-dim element is used: signal only in the top dims changes the output") {
  struct Dims {
    std::int64_t qk, v;
  };
  for (Dims hd : {Dims{64, 64}, Dims{128, 128}, Dims{256, 256}, Dims{192, 128}}) {
    CAPTURE(hd.qk);
    Shape s;
    s.seqlen_q = s.seqlen_k = 8, s.num_heads = 1, s.num_heads_k = 1, s.head_dim_qk = hd.qk, s.head_dim_v = hd.v;
    const std::int64_t tq = hd.qk - 1, tv = hd.v - 1;  // top dims
    auto q = [&](std::int64_t, std::int64_t r, std::int64_t, std::int64_t d) { return d == tq ? float(r % 3) : 0.0f; };
    auto k = [&](std::int64_t, std::int64_t r, std::int64_t, std::int64_t d) { return d == tq ? float(r) : 0.0f; };
    auto v = [&](std::int64_t, std::int64_t r, std::int64_t, std::int64_t d) { return d == tv ? float(r) : 0.0f; };
    Problem pr(s, DType::bf16, q, k, v);
    const auto ref = reference(pr);
    // query row 0 has q = 0: uniform attention over 8 keys -> mean of v[:, top] = 3.5; row 1: weights e^{j/sqrt(d)}
    CHECK(ref.out[tv] == doctest::Approx(3.5));
    CHECK(ref.out[hd.v + tv] > 3.6);
    for (std::int64_t e = 0; e < tv; ++e) CHECK(ref.out[e] == 0.0);
    REQUIRE(zyfa::host::run_attention(pr.params).ok());
    CHECK(zyfa::bf16_to_float(pr.out[hd.v + tv]) == doctest::Approx(ref.out[hd.v + tv]).epsilon(4e-3));
    // the same for the FP8 specification
    Problem p8(s, DType::e4m3fn, q, k, v);
    zyfa::host::Fp8Output o8;
    REQUIRE(zyfa::host::fp8_attention(p8.params, zyfa::host::Fp8Recipe::zyfa, &o8).ok());
    CHECK(o8.out_f32[tv] == doctest::Approx(3.5).epsilon(0.05));
    CHECK(o8.out_f32[hd.v + tv] > 3.6);
  }
}

TEST_CASE("strided (non-contiguous) inputs and output are read and written through their strides") {
  // q/k/v as slices of a packed [b, s, 3, h, d] QKV buffer; out with a padded row stride.
  const std::int64_t S = 19, H = 2, D = 64;
  std::vector<std::uint16_t> qkv(static_cast<std::size_t>(S * 3 * H * D)),
      out(static_cast<std::size_t>(S * (H * D + 32)), 0xFFFF);
  auto g = gaussian(16);
  for (std::int64_t r = 0; r < S; ++r)
    for (std::int64_t w = 0; w < 3; ++w)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t d = 0; d < D; ++d) qkv[((r * 3 + w) * H + h) * D + d] = zyfa::float_to_bf16(g(w, r, h, d));
  auto view = [&](std::int64_t w) {
    zyfa::TensorRef t = zyfa::TensorRef::contiguous(qkv.data() + w * H * D, DType::bf16, 1, S, H, D);
    t.stride[1] = 3 * H * D;
    t.stride[0] = S * 3 * H * D;
    return t;
  };
  zyfa::TensorRef o = zyfa::TensorRef::contiguous(out.data(), DType::bf16, 1, S, H, D);
  o.stride[1] = H * D + 32;
  zyfa::AttentionOptions opt;
  opt.causal = true;
  REQUIRE(zyfa::host::flash_attn_func(view(0), view(1), view(2), o, nullptr, opt).ok());
  // dense copy of the same problem
  Shape s;
  s.seqlen_q = s.seqlen_k = S, s.num_heads = s.num_heads_k = H, s.causal = true;
  Problem dense(
      s, DType::bf16, [&](std::int64_t, std::int64_t r, std::int64_t h, std::int64_t d) { return g(0, r, h, d); },
      [&](std::int64_t, std::int64_t r, std::int64_t h, std::int64_t d) { return g(1, r, h, d); },
      [&](std::int64_t, std::int64_t r, std::int64_t h, std::int64_t d) { return g(2, r, h, d); });
  REQUIRE(zyfa::host::run_attention(dense.params).ok());
  for (std::int64_t r = 0; r < S; ++r) {
    for (std::int64_t c = 0; c < H * D; ++c) CHECK(out[r * (H * D + 32) + c] == dense.out[r * H * D + c]);
    for (std::int64_t c = H * D; c < H * D + 32; ++c) CHECK(out[r * (H * D + 32) + c] == 0xFFFF);  // padding untouched
  }
}
