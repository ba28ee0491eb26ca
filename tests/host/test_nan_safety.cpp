// NaN and overflow in the FP8 specification (zyfa/host/fp8_spec.hpp) and the bf16 host path: a NaN e4m3fn
// code (0x7F/0xFF) in q or k, or a logit that overflows fp32, gives NaN output and LSE for exactly the rows
// it touches, in every recipe (no key silently dropped, no undefined float -> int conversion).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>
#include <zyfa/zyfa.hpp>

#include "problem.hpp"

using namespace zyfa_test;
using zyfa::DType;
using zyfa::host::Fp8Recipe;

namespace {
const auto& kRecipes = zyfa::host::kAllFp8Recipes;  // the four of the specification and the peers

// Every out element and the LSE of (b, h, i) are NaN (want_nan) or all finite (!want_nan).
void check_row(const zyfa::host::Fp8Output& o, const Shape& s, std::int64_t b, std::int64_t h, std::int64_t i,
               bool want_nan) {
  CAPTURE(b);
  CAPTURE(h);
  CAPTURE(i);
  const std::size_t base = static_cast<std::size_t>(((b * s.seqlen_q + i) * s.num_heads + h) * s.head_dim_v);
  for (std::int64_t e = 0; e < s.head_dim_v; ++e) {
    const float x = o.out_f32[base + e];
    if (want_nan) {
      CHECK(std::isnan(x));
      CHECK(std::isnan(zyfa::bf16_to_float(o.out_bf16[base + e])));
    } else {
      CHECK(std::isfinite(x));
    }
  }
  const float lse = o.lse[static_cast<std::size_t>((b * s.num_heads + h) * s.seqlen_q + i)];
  CHECK(std::isnan(lse) == want_nan);
}
}  // namespace

TEST_CASE("lean_p_code: a NaN code input gives the e4m3fn NaN code 0x7F, +-inf clamp") {
  using zyfa::host::lean_p_code;
  CHECK(lean_p_code(std::numeric_limits<float>::quiet_NaN(), 121) == 0x7F);
  CHECK(lean_p_code(-std::numeric_limits<float>::quiet_NaN(), 121) == 0x7F);
  CHECK(lean_p_code(std::numeric_limits<float>::infinity(), 121) == 121);
  CHECK(lean_p_code(-std::numeric_limits<float>::infinity(), 121) == 0);
}

TEST_CASE("FP8 spec: a NaN code in q makes exactly that query row NaN in every recipe") {
  Shape s;
  s.seqlen_q = s.seqlen_k = 130, s.num_heads = 2, s.num_heads_k = 1, s.head_dim_qk = s.head_dim_v = 32;
  s.causal = true;
  for (std::uint8_t nan_code : {std::uint8_t(0x7F), std::uint8_t(0xFF)}) {
    CAPTURE(int(nan_code));
    Problem pr(s, DType::e4m3fn, gaussian(901), gaussian(902), gaussian(903));
    // q [1, 130, 2, 32]: row 100 of head 1 (70 and 100 of head 0 stay clean), element 5
    pr.q8[static_cast<std::size_t>((100 * 2 + 1) * 32 + 5)] = nan_code;
    for (Fp8Recipe rc : kRecipes) {
      CAPTURE(zyfa::host::recipe_name(rc));
      zyfa::host::Fp8Output o;
      REQUIRE(zyfa::host::fp8_attention(pr.params, rc, &o).ok());
      check_row(o, s, 0, 1, 100, true);
      check_row(o, s, 0, 0, 100, false);
      check_row(o, s, 0, 1, 99, false);
      check_row(o, s, 0, 1, 129, false);
    }
    // the host backend (zyfa recipe) writes the same NaN row
    REQUIRE(zyfa::host::flash_attn_func(pr.tq(), pr.tk(), pr.tv(), pr.tout(), pr.lse.data(), pr.options).ok());
    for (std::int64_t e = 0; e < 32; ++e) {
      CHECK(std::isnan(zyfa::bf16_to_float(pr.out[static_cast<std::size_t>((100 * 2 + 1) * 32 + e)])));
      CHECK(std::isfinite(zyfa::bf16_to_float(pr.out[static_cast<std::size_t>((100 * 2 + 0) * 32 + e)])));
    }
    CHECK(std::isnan(pr.lse[static_cast<std::size_t>(1 * 130 + 100)]));
    CHECK(std::isfinite(pr.lse[static_cast<std::size_t>(1 * 130 + 99)]));
  }
}

TEST_CASE("FP8 spec: a NaN code in k makes exactly the rows that see that key NaN in every recipe") {
  Shape s;
  s.seqlen_q = s.seqlen_k = 150, s.num_heads = 2, s.num_heads_k = 1, s.head_dim_qk = s.head_dim_v = 32;
  s.causal = true;
  Problem pr(s, DType::e4m3fn, gaussian(911), gaussian(912), gaussian(913));
  const std::int64_t bad_key = 70;  // in the second 64-key block; causal rows i >= 70 see it
  pr.k8[static_cast<std::size_t>(bad_key * 32 + 3)] = 0x7F;
  for (Fp8Recipe rc : kRecipes) {
    CAPTURE(zyfa::host::recipe_name(rc));
    zyfa::host::Fp8Output o;
    REQUIRE(zyfa::host::fp8_attention(pr.params, rc, &o).ok());
    for (std::int64_t h = 0; h < 2; ++h)
      for (std::int64_t i : {0, 63, 69, 70, 71, 127, 128, 149}) check_row(o, s, 0, h, i, i >= bad_key);
  }
}

TEST_CASE("FP8 spec: all-NaN and +inf logits give NaN rows (no undefined kb), -inf logits of one key do not") {
  zyfa::AttentionParams p;
  p.seqlen_q = 1, p.seqlen_k = 130, p.head_dim_v = 8, p.head_dim_qk = 16;
  p.num_heads = p.num_heads_k = p.batch = 1;
  p.qkv_dtype = DType::e4m3fn;
  p.softmax_scale = 1.0f;
  p.scale_softmax_log2 = 1.0f;  // c = 1: the scores handed to fp8_row are the logits t
  zyfa::host::HeadMatrix v;
  v.rows = 130, v.cols = 8;
  v.data.assign(130 * 8, 1.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> t_nan(130, nan);
  std::vector<float> t_inf(130, -1.0f), t_first_block_nan(130, -1.0f), t_neg_inf(130, -1.0f);
  t_inf[77] = inf;
  for (int j = 0; j < 64; ++j) t_first_block_nan[j] = nan;
  t_neg_inf[3] = -inf;
  for (Fp8Recipe rc : kRecipes) {
    CAPTURE(zyfa::host::recipe_name(rc));
    for (const std::vector<float>* t : {&t_nan, &t_inf, &t_first_block_nan}) {
      zyfa::host::Fp8RowTrace tr;
      const auto r = zyfa::host::fp8_row(p, rc, *t, v, nullptr, &tr);
      for (float x : r.out) CHECK(std::isnan(x));
      CHECK(std::isnan(r.lse));
      for (int kb : tr.block_shift) CHECK((kb >= 0 && kb <= 255));
    }
    // one key at -inf (finite running max): weight 0, the row stays finite; out ~ 1 (all v rows are 1; aiter_like
    // and scaled_p divide rounded P by the unrounded row sum)
    const auto r = zyfa::host::fp8_row(p, rc, t_neg_inf, v);
    for (float x : r.out) CHECK(x == doctest::Approx(1.0).epsilon(0.05));
    CHECK(std::isfinite(r.lse));
  }
}

TEST_CASE("bf16 host path: finite inputs whose logits overflow fp32 give NaN rows (documented)") {
  // q = k = 2^60 * 1 in every dim (bf16-exact): q.k = 2^120 * 16 = 2^124 overflows after * softmax_scale 2^10
  Shape s;
  s.seqlen_q = s.seqlen_k = 4, s.num_heads = s.num_heads_k = 1, s.head_dim_qk = s.head_dim_v = 16;
  const auto big = [](std::int64_t, std::int64_t, std::int64_t, std::int64_t) { return std::ldexp(1.0f, 60); };
  Problem pr(s, DType::bf16, big, big, gaussian(921), 1024.0f);
  REQUIRE(zyfa::host::flash_attn_func(pr.tq(), pr.tk(), pr.tv(), pr.tout(), pr.lse.data(), pr.options).ok());
  for (std::uint16_t o : pr.out) CHECK(std::isnan(zyfa::bf16_to_float(o)));
  for (float l : pr.lse) CHECK(std::isnan(l));
}

TEST_CASE("NaN in v makes its output column NaN for the rows that see its key (FP8 recipes and bf16 path)") {
  Shape s;
  s.seqlen_q = s.seqlen_k = 80, s.num_heads = s.num_heads_k = 1, s.head_dim_qk = s.head_dim_v = 16;
  s.causal = true;
  const std::int64_t key = 65, col = 7;
  Problem pr(s, DType::e4m3fn, gaussian(931), gaussian(932), gaussian(933));
  pr.v8[static_cast<std::size_t>(key * 16 + col)] = 0xFF;
  for (Fp8Recipe rc : kRecipes) {
    CAPTURE(zyfa::host::recipe_name(rc));
    zyfa::host::Fp8Output o;
    REQUIRE(zyfa::host::fp8_attention(pr.params, rc, &o).ok());
    for (std::int64_t i : {0, 64, 65, 79})
      for (std::int64_t e = 0; e < 16; ++e) {
        CAPTURE(i);
        CAPTURE(e);
        CHECK(std::isnan(o.out_f32[static_cast<std::size_t>(i * 16 + e)]) == (i >= key && e == col));
      }
  }
  Problem pb(s, DType::bf16, gaussian(931), gaussian(932), gaussian(933));
  pb.v16[static_cast<std::size_t>(key * 16 + col)] = 0x7FC0;  // bf16 NaN
  pb.q16[static_cast<std::size_t>(3 * 16 + 2)] = 0xFFC0;      // and a NaN in query row 3
  REQUIRE(zyfa::host::flash_attn_func(pb.tq(), pb.tk(), pb.tv(), pb.tout(), pb.lse.data(), pb.options).ok());
  for (std::int64_t i : {0, 3, 64, 65, 79}) {
    CAPTURE(i);
    for (std::int64_t e = 0; e < 16; ++e)
      CHECK(std::isnan(zyfa::bf16_to_float(pb.out[static_cast<std::size_t>(i * 16 + e)])) ==
            (i == 3 || (i >= key && e == col)));
    CHECK(std::isnan(pb.lse[static_cast<std::size_t>(i)]) == (i == 3));
  }
}
