// flash_attn_varlen_func on the host backend (zyfa/host/backend.hpp): every sequence of a packed batch gives bit for
// bit what flash_attn_func gives on that sequence alone (ragged lengths 1..5,000 in one batch, empty sequences,
// bottom-right causal per sequence, GQA), and validation names the argument.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>
#include <zyfa/zyfa.hpp>

namespace {

struct Packed {
  std::int64_t h = 2, hk = 1, d = 32;
  std::vector<std::int32_t> cu_q{0}, cu_k{0};
  std::vector<std::uint16_t> q, k, v, out;
  std::vector<float> lse;

  Packed(const std::vector<std::pair<int, int>>& lens, std::int64_t heads, std::int64_t heads_k, std::int64_t dim,
         std::uint32_t seed)
      : h(heads), hk(heads_k), d(dim) {
    for (auto [sq, sk] : lens) cu_q.push_back(cu_q.back() + sq), cu_k.push_back(cu_k.back() + sk);
    total_q = std::max<std::int64_t>(cu_q.back(), 1), total_k = std::max<std::int64_t>(cu_k.back(), 1);
    std::mt19937 rng(seed);
    std::normal_distribution<float> g(0.0f, 1.0f);
    auto fill = [&](std::vector<std::uint16_t>& x, std::int64_t n) {
      x.resize(static_cast<std::size_t>(n));
      for (auto& e : x) e = zyfa::float_to_bf16(g(rng));
    };
    fill(q, tq() * h * d);
    fill(k, tk() * hk * d);
    fill(v, tk() * hk * d);
    out.assign(q.size() / static_cast<std::size_t>(d) * static_cast<std::size_t>(d), 0xFFFF);  // NaN poison
    lse.assign(static_cast<std::size_t>(h * tq()), std::nanf(""));
  }
  std::int64_t total_q = 0, total_k = 0;  // fixed at construction (tests change cu_q/cu_k afterwards)
  std::int64_t tq() const { return total_q; }
  std::int64_t tk() const { return total_k; }
  std::int64_t batch() const { return static_cast<std::int64_t>(cu_q.size()) - 1; }
  zyfa::TensorRef ref(std::vector<std::uint16_t>& x, std::int64_t rows, std::int64_t heads) {
    return zyfa::TensorRef::contiguous(x.data(), zyfa::DType::bf16, 1, rows, heads, d);
  }
  zyfa::Status run(const zyfa::AttentionOptions& opt, std::int64_t max_q, std::int64_t max_k) {
    return zyfa::host::flash_attn_varlen_func(ref(q, tq(), h), ref(k, tk(), hk), ref(v, tk(), hk), ref(out, tq(), h),
                                              lse.data(), cu_q.data(), cu_k.data(), batch(), max_q, max_k, opt);
  }
};

// Every sequence of `p` (already run) against flash_attn_func on copies of that sequence alone: bit for bit.
void check_per_sequence(Packed& p, const zyfa::AttentionOptions& opt) {
  for (std::int64_t b = 0; b < p.batch(); ++b) {
    CAPTURE(b);
    const std::int64_t q0 = p.cu_q[b], sq = p.cu_q[b + 1] - q0, k0 = p.cu_k[b], sk = p.cu_k[b + 1] - k0;
    if (sq == 0) continue;
    const std::size_t dq = static_cast<std::size_t>(p.h * p.d), dk = static_cast<std::size_t>(p.hk * p.d);
    if (sk == 0) {  // no key: out 0, lse -inf
      for (std::size_t i = q0 * dq; i < (q0 + sq) * dq; ++i) CHECK(p.out[i] == 0);
      for (std::int64_t hh = 0; hh < p.h; ++hh)
        for (std::int64_t i = 0; i < sq; ++i) CHECK(p.lse[static_cast<std::size_t>(hh * p.tq() + q0 + i)] == -INFINITY);
      continue;
    }
    std::vector<std::uint16_t> q(p.q.begin() + q0 * dq, p.q.begin() + (q0 + sq) * dq);
    std::vector<std::uint16_t> k(p.k.begin() + k0 * dk, p.k.begin() + (k0 + sk) * dk);
    std::vector<std::uint16_t> v(p.v.begin() + k0 * dk, p.v.begin() + (k0 + sk) * dk);
    std::vector<std::uint16_t> o(q.size());
    std::vector<float> l(static_cast<std::size_t>(p.h * sq));
    auto r = [&](std::vector<std::uint16_t>& x, std::int64_t s, std::int64_t hh) {
      return zyfa::TensorRef::contiguous(x.data(), zyfa::DType::bf16, 1, s, hh, p.d);
    };
    REQUIRE(
        zyfa::host::flash_attn_func(r(q, sq, p.h), r(k, sk, p.hk), r(v, sk, p.hk), r(o, sq, p.h), l.data(), opt).ok());
    CHECK(std::memcmp(o.data(), p.out.data() + q0 * dq, o.size() * 2) == 0);
    for (std::int64_t hh = 0; hh < p.h; ++hh)
      for (std::int64_t i = 0; i < sq; ++i) {
        const float want = l[static_cast<std::size_t>(hh * sq + i)],
                    got = p.lse[static_cast<std::size_t>(hh * p.tq() + q0 + i)];
        CHECK(std::memcmp(&want, &got, 4) == 0);
      }
  }
}

}  // namespace

TEST_CASE("varlen host: ragged lengths 1..5000 in one batch match per-sequence calls bit for bit (causal and not)") {
  // (seqlen_q, seqlen_k): equal lengths 1..5000, an empty sequence, no keys, more queries than keys (causal: the
  // first rows see nothing), more keys than queries (prefix caching)
  const std::vector<std::pair<int, int>> lens = {{1, 1},     {0, 0},   {17, 17}, {5000, 5000}, {3, 0}, {64, 64},
                                                 {129, 129}, {40, 23}, {0, 7},   {9, 300},     {2, 2}};
  for (bool causal : {true, false}) {
    CAPTURE(causal);
    Packed p(lens, 2, 1, 32, causal ? 5u : 6u);
    zyfa::AttentionOptions opt;
    opt.causal = causal;
    const zyfa::Status s = p.run(opt, 5000, 5000);
    REQUIRE_MESSAGE(s.ok(), s.message);
    check_per_sequence(p, opt);
  }
}

TEST_CASE(
    "varlen host: FP8 (e4m3fn) inputs run the FP8 specification per sequence; rows past the last offset are "
    "untouched") {
  Packed p({{5, 9}, {33, 33}}, 4, 2, 16, 9);
  p.out.resize(p.out.size() + 3 * 4 * 16, 0x1234);  // three padding rows past cu_seqlens_q[batch]
  std::vector<std::uint8_t> q8(p.q.size()), k8(p.k.size()), v8(p.v.size());
  for (std::size_t i = 0; i < q8.size(); ++i) q8[i] = static_cast<std::uint8_t>((i * 37) % 0x70);
  for (std::size_t i = 0; i < k8.size(); ++i) k8[i] = static_cast<std::uint8_t>((i * 53) % 0x70);
  for (std::size_t i = 0; i < v8.size(); ++i)
    v8[i] = static_cast<std::uint8_t>((i * 11) % 0xF0 == 0x7F ? 0 : (i * 11) % 0xF0);
  zyfa::AttentionOptions opt;
  opt.causal = true;
  opt.q_descale = 0.5f, opt.k_descale = 0.25f, opt.v_descale = 2.0f;
  auto r8 = [&](std::vector<std::uint8_t>& x, std::int64_t s, std::int64_t hh) {
    return zyfa::TensorRef::contiguous(x.data(), zyfa::DType::e4m3fn, 1, s, hh, 16);
  };
  zyfa::TensorRef o = zyfa::TensorRef::contiguous(p.out.data(), zyfa::DType::bf16, 1, p.tq() + 3, 4, 16);
  std::vector<float> lse(static_cast<std::size_t>(4 * (p.tq() + 3)));
  const zyfa::Status s =
      zyfa::host::flash_attn_varlen_func(r8(q8, p.tq() + 3 - 3, 4), r8(k8, p.tk(), 2), r8(v8, p.tk(), 2),
                                         zyfa::TensorRef::contiguous(p.out.data(), zyfa::DType::bf16, 1, p.tq(), 4, 16),
                                         lse.data(), p.cu_q.data(), p.cu_k.data(), 2, 33, 33, opt);
  REQUIRE_MESSAGE(s.ok(), s.message);
  (void)o;
  for (std::size_t i = static_cast<std::size_t>(p.tq() * 4 * 16); i < p.out.size(); ++i) CHECK(p.out[i] == 0x1234);
  // sequence 1 against the fixed-length call
  std::vector<std::uint8_t> q1(q8.begin() + 5 * 64, q8.end()), k1(k8.begin() + 9 * 32, k8.end()),
      v1(v8.begin() + 9 * 32, v8.end());
  std::vector<std::uint16_t> o1(33 * 64);
  std::vector<float> l1(4 * 33);
  REQUIRE(zyfa::host::flash_attn_func(r8(q1, 33, 4), r8(k1, 33, 2), r8(v1, 33, 2),
                                      zyfa::TensorRef::contiguous(o1.data(), zyfa::DType::bf16, 1, 33, 4, 16),
                                      l1.data(), opt)
              .ok());
  CHECK(std::memcmp(o1.data(), p.out.data() + 5 * 64, o1.size() * 2) == 0);
  for (int hh = 0; hh < 4; ++hh)
    for (int i = 0; i < 33; ++i)
      CHECK(l1[static_cast<std::size_t>(hh * 33 + i)] == lse[static_cast<std::size_t>(hh * p.tq() + 5 + i)]);
}

TEST_CASE("varlen: validation names the argument") {
  Packed p({{4, 4}, {6, 6}}, 2, 2, 16, 1);
  zyfa::AttentionOptions opt;
  CHECK(p.run(opt, 6, 6).ok());
  CHECK(p.run(opt, 5, 6).message == "max_seqlen_q: 5 is less than sequence 1's length 6 (cu_seqlens_q)");
  CHECK(p.run(opt, 6, 11).message == "max_seqlen_k: 11 must be in [0, total_k = 10]");
  CHECK(p.run(opt, 0, 6).message == "max_seqlen_q: 0 must be in [1, total_q = 10]");
  p.cu_q = {0, 7, 6};
  CHECK(p.run(opt, 7, 6).message ==
        "cu_seqlens_q: entry 2 (6) is less than entry 1 (7); offsets must be non-decreasing");
  p.cu_q = {1, 4, 10};
  CHECK(p.run(opt, 6, 6).message == "cu_seqlens_q: entry 0 must be 0, got 1");
  p.cu_q = {0, 4, 10};
  p.cu_k = {0, 4, 11};
  CHECK(p.run(opt, 6, 7).message == "cu_seqlens_k: last entry (11) exceeds the packed length 10");
  p.cu_k = {0, 4, 10};
  zyfa::Status s =
      zyfa::host::flash_attn_varlen_func(p.ref(p.q, 10, 2), p.ref(p.k, 10, 2), p.ref(p.v, 10, 2), p.ref(p.out, 10, 2),
                                         p.lse.data(), nullptr, p.cu_k.data(), 2, 6, 6, opt);
  CHECK(s.message == "cu_seqlens_q: pointer is null");
  zyfa::TensorRef q2 = zyfa::TensorRef::contiguous(p.q.data(), zyfa::DType::bf16, 2, 5, 2, 16);
  zyfa::TensorRef o2 = zyfa::TensorRef::contiguous(p.out.data(), zyfa::DType::bf16, 2, 5, 2, 16);
  s = zyfa::host::flash_attn_varlen_func(q2, p.ref(p.k, 10, 2), p.ref(p.v, 10, 2), o2, nullptr, p.cu_q.data(),
                                         p.cu_k.data(), 2, 6, 6, opt);
  CHECK(s.code == zyfa::StatusCode::invalid_argument);
  CHECK(s.message.rfind("k: shape[0] (batch) is 1, expected 2 from q", 0) == 0);
}

TEST_CASE(
    "varlen: out or softmax_lse overlapping cu_seqlens is refused (the offsets are read while they are written)") {
  Packed p({{4, 4}, {6, 6}}, 2, 2, 16, 1);
  zyfa::AttentionOptions opt;
  // offsets placed inside the lse buffer ([h, total_q] = 20 floats; entries at floats 8..10)
  std::vector<float> lse_buf(32);
  auto* cu_in_lse = reinterpret_cast<std::int32_t*>(lse_buf.data() + 8);
  cu_in_lse[0] = 0;
  cu_in_lse[1] = 4;
  cu_in_lse[2] = 10;
  zyfa::Status s =
      zyfa::host::flash_attn_varlen_func(p.ref(p.q, 10, 2), p.ref(p.k, 10, 2), p.ref(p.v, 10, 2), p.ref(p.out, 10, 2),
                                         lse_buf.data(), cu_in_lse, p.cu_k.data(), 2, 6, 6, opt);
  CHECK(s.code == zyfa::StatusCode::invalid_argument);
  CHECK(s.message == "softmax_lse: overlaps cu_seqlens_q (their byte ranges intersect)");
  // offsets inside out's buffer
  std::vector<std::uint16_t> out_buf(10 * 2 * 16 + 16);
  auto* cu_in_out = reinterpret_cast<std::int32_t*>(out_buf.data() + 32);
  cu_in_out[0] = 0;
  cu_in_out[1] = 4;
  cu_in_out[2] = 10;
  s = zyfa::host::flash_attn_varlen_func(p.ref(p.q, 10, 2), p.ref(p.k, 10, 2), p.ref(p.v, 10, 2), p.ref(out_buf, 10, 2),
                                         nullptr, p.cu_q.data(), cu_in_out, 2, 6, 6, opt);
  CHECK(s.message == "out: overlaps cu_seqlens_k (their byte ranges intersect)");
}
