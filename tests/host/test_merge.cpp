// merge_attn_states on the host (zyfa/merge.hpp): two partial results over disjoint key sets merge into the
// one-pass result within fp32 rounding; -inf rows pass the other side through exactly; validation names arguments.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>
#include <zyfa/zyfa.hpp>

#include "problem.hpp"

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// fp64 attention of one query row over keys [k0, k1): out (rounded to fp32) and natural-log lse (fp32).
void attend_rows(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v, int d,
                 int k0, int k1, float* out, float* lse) {
  double m = -INFINITY;
  std::vector<double> s(static_cast<std::size_t>(k1 - k0));
  for (int j = k0; j < k1; ++j) {
    double acc = 0;
    for (int e = 0; e < d; ++e) acc += q[e] * k[static_cast<std::size_t>(j * d + e)];
    s[static_cast<std::size_t>(j - k0)] = acc / std::sqrt(double(d));
    m = std::max(m, s[static_cast<std::size_t>(j - k0)]);
  }
  double l = 0;
  std::vector<double> o(static_cast<std::size_t>(d), 0.0);
  for (int j = k0; j < k1; ++j) {
    const double p = std::exp(s[static_cast<std::size_t>(j - k0)] - m);
    l += p;
    for (int e = 0; e < d; ++e) o[static_cast<std::size_t>(e)] += p * v[static_cast<std::size_t>(j * d + e)];
  }
  for (int e = 0; e < d; ++e) out[e] = static_cast<float>(o[static_cast<std::size_t>(e)] / l);
  *lse = static_cast<float>(m + std::log(l));
}

zyfa::TensorRef f32_ref(float* p, std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t d) {
  zyfa::TensorRef t = zyfa::TensorRef::contiguous(p, zyfa::DType::fp32, b, s, h, d);
  return t;
}

}  // namespace

TEST_CASE("merge: two halves of the keys merge into the one-pass result within fp32 rounding (fp64 partials)") {
  const int S = 37, H = 3, D = 40, N = 300;  // rows, heads, head dim, keys
  std::mt19937 rng(7);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<float> oa(S * H * D), ob(S * H * D), ofull(S * H * D), om(S * H * D);
  std::vector<float> la(H * S), lb(H * S), lfull(H * S), lm(H * S);
  for (int h = 0; h < H; ++h) {
    std::vector<double> k(N * D), v(N * D);
    for (auto& x : k) x = g(rng) * 2.0;  // peaky rows
    for (auto& x : v) x = g(rng);
    for (int i = 0; i < S; ++i) {
      std::vector<double> q(D);
      for (auto& x : q) x = g(rng);
      const int split = 1 + (i * 13) % (N - 1);  // a different split per row
      const std::size_t o = static_cast<std::size_t>((i * H + h) * D), l = static_cast<std::size_t>(h * S + i);
      attend_rows(q, k, v, D, 0, split, &oa[o], &la[l]);
      attend_rows(q, k, v, D, split, N, &ob[o], &lb[l]);
      attend_rows(q, k, v, D, 0, N, &ofull[o], &lfull[l]);
    }
  }
  const zyfa::Status s =
      zyfa::host::merge_attn_states(f32_ref(oa.data(), 1, S, H, D), zyfa::LseRef::contiguous(la.data(), 1, H, S),
                                    f32_ref(ob.data(), 1, S, H, D), zyfa::LseRef::contiguous(lb.data(), 1, H, S),
                                    f32_ref(om.data(), 1, S, H, D), zyfa::LseRef::contiguous(lm.data(), 1, H, S));
  REQUIRE_MESSAGE(s.ok(), s.message);
  double max_out = 0, max_lse = 0;
  for (std::size_t i = 0; i < om.size(); ++i) max_out = std::max(max_out, double(std::fabs(om[i] - ofull[i])));
  for (std::size_t i = 0; i < lm.size(); ++i)
    max_lse = std::max(max_lse, double(std::fabs(lm[i] - lfull[i])) / std::max(1.0, double(std::fabs(lfull[i]))));
  CHECK(max_out < 4e-6);  // |out| <~ 3: a few fp32 ulps
  CHECK(max_lse < 4e-7);
  // the order of the two sides does not matter beyond rounding
  std::vector<float> om2(om.size()), lm2(lm.size());
  REQUIRE(zyfa::host::merge_attn_states(f32_ref(ob.data(), 1, S, H, D), zyfa::LseRef::contiguous(lb.data(), 1, H, S),
                                        f32_ref(oa.data(), 1, S, H, D), zyfa::LseRef::contiguous(la.data(), 1, H, S),
                                        f32_ref(om2.data(), 1, S, H, D), zyfa::LseRef::contiguous(lm2.data(), 1, H, S))
              .ok());
  for (std::size_t i = 0; i < om.size(); ++i) CHECK(std::fabs(om2[i] - om[i]) < 2e-6);
}

TEST_CASE("merge: host flash_attn_func on two key halves (bf16 out, [b, h, s] lse) merges into the full call") {
  using namespace zyfa_test;
  Shape s;
  s.batch = 2, s.seqlen_q = 20, s.seqlen_k = 96, s.num_heads = 4, s.num_heads_k = 2, s.head_dim_qk = s.head_dim_v = 32;
  Problem full(s, zyfa::DType::bf16, gaussian(11), gaussian(12), gaussian(13));
  REQUIRE(
      zyfa::host::flash_attn_func(full.tq(), full.tk(), full.tv(), full.tout(), full.lse.data(), full.options).ok());
  // halves: views into full's k/v (keys [0, 40) and [40, 96))
  auto half = [&](std::int64_t k0, std::int64_t n, std::vector<std::uint16_t>* out, std::vector<float>* lse) {
    zyfa::TensorRef k = full.tk(), v = full.tv();
    k.data = full.k16.data() + k0 * k.stride[1];
    v.data = full.v16.data() + k0 * v.stride[1];
    k.shape[1] = v.shape[1] = n;
    out->assign(full.out.size(), 0);
    lse->assign(full.lse.size(), 0.0f);
    zyfa::TensorRef o = full.tout();
    o.data = out->data();
    const zyfa::Status st = zyfa::host::flash_attn_func(full.tq(), k, v, o, lse->data(), full.options);
    REQUIRE_MESSAGE(st.ok(), st.message);
  };
  std::vector<std::uint16_t> o1, o2;
  std::vector<float> l1, l2;
  half(0, 40, &o1, &l1);
  half(40, 56, &o2, &l2);
  std::vector<float> om(full.out.size()), lm(full.lse.size());
  auto bf = [&](std::vector<std::uint16_t>& x) {
    return zyfa::TensorRef::contiguous(x.data(), zyfa::DType::bf16, 2, 20, 4, 32);
  };
  const zyfa::Status st = zyfa::host::merge_attn_states(
      bf(o1), zyfa::LseRef::contiguous(l1.data(), 2, 4, 20), bf(o2), zyfa::LseRef::contiguous(l2.data(), 2, 4, 20),
      f32_ref(om.data(), 2, 20, 4, 32), zyfa::LseRef::contiguous(lm.data(), 2, 4, 20));
  REQUIRE_MESSAGE(st.ok(), st.message);
  for (std::size_t i = 0; i < om.size(); ++i) {
    const float want = zyfa::bf16_to_float(full.out[i]);
    CHECK(std::fabs(om[i] - want) <= 8e-3f * std::max(1.0f, std::fabs(want)));  // bf16 partials: ~2^-8
  }
  for (std::size_t i = 0; i < lm.size(); ++i) CHECK(std::fabs(lm[i] - full.lse[i]) < 2e-5f);
}

TEST_CASE("merge: -inf rows pass the other side through exactly; both -inf give 0 and -inf; NaN propagates") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // rows: 0 a=-inf, 1 b=-inf, 2 both -inf, 3 NaN lse, 4 both finite
  std::vector<float> oa = {nan, 1.5f, 7.0f, 1.0f, 1.0f}, ob = {0.3f, nan, -7.0f, 2.0f, 3.0f};
  std::vector<float> la = {-kInf, 0.25f, -kInf, nan, 0.0f}, lb = {1.75f, -kInf, -kInf, 0.0f, 0.0f};
  std::vector<float> om(5, 99.0f), lm(5, 99.0f);
  auto ref = [](float* p) { return zyfa::TensorRef::contiguous(p, zyfa::DType::fp32, 1, 5, 1, 1); };
  REQUIRE(zyfa::host::merge_attn_states(ref(oa.data()), zyfa::LseRef::contiguous(la.data(), 1, 1, 5), ref(ob.data()),
                                        zyfa::LseRef::contiguous(lb.data(), 1, 1, 5), ref(om.data()),
                                        zyfa::LseRef::contiguous(lm.data(), 1, 1, 5))
              .ok());
  CHECK(om[0] == 0.3f);
  CHECK(lm[0] == 1.75f);
  CHECK(om[1] == 1.5f);
  CHECK(lm[1] == 0.25f);
  CHECK(om[2] == 0.0f);
  CHECK(!std::signbit(om[2]));
  CHECK(lm[2] == -kInf);
  CHECK(std::isnan(om[3]));
  CHECK(std::isnan(lm[3]));
  CHECK(om[4] == 2.0f);
  CHECK(lm[4] == doctest::Approx(std::log(2.0)).epsilon(1e-7));
  // merge_weights directly: +inf is NaN too
  CHECK(std::isnan(zyfa::merge_weights(kInf, 0.0f).lse));
}

TEST_CASE("merge: strided views (varlen lse [h, total], BHSD out) and in-place accumulation") {
  const int T = 6, H = 2, D = 16;
  std::vector<float> acc(T * H * D), b(T * H * D), la(H * T), lb(H * T);
  for (std::size_t i = 0; i < acc.size(); ++i) acc[i] = float(i % 7) * 0.5f, b[i] = float(i % 5) - 1.0f;
  for (int i = 0; i < H * T; ++i) la[i] = 0.1f * float(i), lb[i] = 0.3f - 0.05f * float(i);
  const std::vector<float> acc0 = acc, la0 = la;
  // acc as BHSD storage viewed as BSHD: [1, T, H, D] with strides {., D, T*D, 1}
  zyfa::TensorRef ta = zyfa::TensorRef::contiguous(acc.data(), zyfa::DType::fp32, 1, T, H, D);
  ta.stride[1] = D, ta.stride[2] = T * D;
  zyfa::TensorRef tb = zyfa::TensorRef::contiguous(b.data(), zyfa::DType::fp32, 1, T, H, D);
  zyfa::LseRef va{la.data(), {0, T, 1}}, vb{lb.data(), {0, T, 1}};
  const zyfa::Status s = zyfa::host::merge_attn_states(ta, va, tb, vb, ta, va);  // in place
  REQUIRE_MESSAGE(s.ok(), s.message);
  for (int i = 0; i < T; ++i)
    for (int h = 0; h < H; ++h) {
      const zyfa::MergeWeights w = zyfa::merge_weights(la0[h * T + i], lb[h * T + i]);
      CHECK(la[h * T + i] == w.lse);
      for (int d = 0; d < D; ++d)
        CHECK(acc[(h * T + i) * D + d] == zyfa::merge_value(w, acc0[(h * T + i) * D + d], b[(i * H + h) * D + d]));
    }
}

TEST_CASE("merge: validation names the argument") {
  std::vector<float> a(64), b(64), o(64), la(4), lb(4), lo(4);
  auto ref = [](float* p) { return zyfa::TensorRef::contiguous(p, zyfa::DType::fp32, 1, 2, 2, 16); };
  auto lse = [](float* p) { return zyfa::LseRef::contiguous(p, 1, 2, 2); };
  auto run = [&](zyfa::TensorRef ta, zyfa::LseRef va, zyfa::TensorRef tb, zyfa::LseRef vb, zyfa::TensorRef to,
                 zyfa::LseRef vo) { return zyfa::host::merge_attn_states(ta, va, tb, vb, to, vo); };
  CHECK(run(ref(a.data()), lse(la.data()), ref(b.data()), lse(lb.data()), ref(o.data()), lse(lo.data())).ok());
  CHECK(run(ref(a.data()), lse(la.data()), ref(b.data()), lse(lb.data()), ref(o.data()), zyfa::LseRef{}).ok());
  zyfa::TensorRef bad = ref(b.data());
  bad.shape[2] = 1;
  zyfa::Status s = run(ref(a.data()), lse(la.data()), bad, lse(lb.data()), ref(o.data()), lse(lo.data()));
  CHECK(s.code == zyfa::StatusCode::invalid_argument);
  CHECK(s.message == "out_b: shape[2] (num_heads) is 1, expected 2 from out_a");
  bad = ref(o.data());
  bad.dtype = zyfa::DType::e4m3fn;
  s = run(ref(a.data()), lse(la.data()), ref(b.data()), lse(lb.data()), bad, lse(lo.data()));
  CHECK(s.message == "out: dtype e4m3fn is not supported (bf16 or fp32)");
  s = run(ref(a.data()), zyfa::LseRef{}, ref(b.data()), lse(lb.data()), ref(o.data()), lse(lo.data()));
  CHECK(s.message == "lse_a: data pointer is null");
  zyfa::TensorRef shifted = ref(a.data() + 1);  // overlaps out_a without being it
  s = run(ref(a.data()), lse(la.data()), ref(b.data()), lse(lb.data()), shifted, lse(lo.data()));
  CHECK(s.message.rfind("out: overlaps out_a", 0) == 0);
  s = run(ref(a.data()), lse(la.data()), ref(b.data()), lse(lb.data()), ref(o.data()), lse(la.data() + 1));
  CHECK(s.message.rfind("lse: overlaps lse_a", 0) == 0);
  // outputs that overlap themselves (two heads on the same 16 elements... stride 8 < head_dim 16)
  zyfa::TensorRef self = ref(o.data());
  self.stride[2] = 8;
  s = run(ref(a.data()), lse(la.data()), ref(b.data()), lse(lb.data()), self, lse(lo.data()));
  CHECK(s.message.rfind("out: stride[2] is 8 elements, which makes elements overlap", 0) == 0);
  zyfa::LseRef lself = lse(lo.data());
  lself.stride[1] = lself.stride[2] = 1;
  s = run(ref(a.data()), lse(la.data()), ref(b.data()), lse(lb.data()), ref(o.data()), lself);
  CHECK(s.message.rfind("lse: stride[", 0) == 0);
  CHECK(s.message.find("which makes elements overlap") != std::string::npos);
  // in place on an out_a that overlaps itself: refused as out
  s = run(self, lse(la.data()), ref(b.data()), lse(lb.data()), self, lse(lo.data()));
  CHECK(s.message.rfind("out: stride[2] is 8 elements", 0) == 0);
  // strides addressing more than 2^60 elements (no overflow in the checks)
  zyfa::TensorRef huge = ref(a.data());
  huge.shape[0] = 0x7FFFFFFF;
  huge.stride[0] = std::int64_t(1) << 60;
  zyfa::MergeParams mp;
  s = zyfa::make_merge_params(huge, lse(la.data()), ref(b.data()), lse(lb.data()), ref(o.data()), lse(lo.data()), &mp);
  CHECK(s.message == "out_a: shape and strides address more than 2^60 elements");
}

TEST_CASE("TensorRef::contiguous saturates strides that overflow; make_params names them") {
  const std::int64_t m = 0x7FFFFFFF;
  std::vector<std::uint16_t> buf(64);
  const zyfa::TensorRef t = zyfa::TensorRef::contiguous(buf.data(), zyfa::DType::bf16, m, m, m, 16);
  CHECK(t.stride[1] == m * 16);
  CHECK(t.stride[0] == std::numeric_limits<std::int64_t>::max());
  zyfa::AttentionParams p;
  const zyfa::Status s = zyfa::make_params(t, t, t, t, nullptr, zyfa::AttentionOptions{}, &p);
  CHECK(s.code == zyfa::StatusCode::invalid_argument);
  CHECK(s.message.rfind("q: stride[0]", 0) == 0);
}
