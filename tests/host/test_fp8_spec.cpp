// The FP8 executable specification (zyfa/host/fp8_spec.hpp): Lean P, per-block offsets, rounded row sum,
// invariants, descales, a hand-worked example, accuracy against fp64, and DESIGN.md's block-max-code finding.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>
#include <zyfa/zyfa.hpp>

#include "problem.hpp"

using namespace zyfa_test;
using zyfa::DType;
using zyfa::host::Fp8Recipe;

namespace {
const auto& kAll = zyfa::host::kAllFp8Recipes;  // the four of the specification and the peers

// Peaky rows: every query shares a direction with key 0 (an "attention sink" as in real LLM layers), so
// key 0 takes most of each row's probability and the rest is small.
Problem::Gen sink_q(std::uint64_t seed) {
  return [g = gaussian(seed)](std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t d) {
    return g(b, s, h, d) + ((d & 1) ? 1.0f : -1.0f);
  };
}
Problem::Gen sink_k(std::uint64_t seed) {
  return [g = gaussian(seed)](std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t d) {
    return g(b, s, h, d) + (s == 0 ? ((d & 1) ? 0.7f : -0.7f) : 0.0f);
  };
}

zyfa::AttentionParams row_params(std::int64_t seqlen_k, std::int64_t dv) {
  zyfa::AttentionParams p;
  p.seqlen_q = 1, p.seqlen_k = seqlen_k, p.head_dim_v = dv, p.head_dim_qk = 16;
  p.num_heads = p.num_heads_k = p.batch = 1;
  p.qkv_dtype = DType::e4m3fn;
  p.softmax_scale = 1.0f;
  p.scale_softmax_log2 = 1.0f;  // c = 1: the scores handed to fp8_row are the log2-domain logits t
  return p;
}
zyfa::host::HeadMatrix identity_v(std::int64_t n, std::int64_t dv) {
  zyfa::host::HeadMatrix v;
  v.rows = n, v.cols = dv;
  v.data.assign(static_cast<std::size_t>(n * dv), 0.0f);
  for (std::int64_t j = 0; j < n && j < dv; ++j) v.data[j * dv + j] = 1.0f;
  return v;
}
}  // namespace

TEST_CASE("Lean P code is exact at integer exponents and linear in between") {
  using zyfa::host::lean_p_code;
  for (int x = -6; x <= 8; ++x) {
    CAPTURE(x);
    const std::uint8_t c = lean_p_code(static_cast<float>(8 * x + zyfa::host::kLeanPCodeOfOne), 126);
    CHECK(zyfa::e4m3fn_to_float(c) == std::ldexp(1.0f, x));
    for (int k = 1; k < 8 && x < 8; ++k)  // x + k/8: the chord between 2^x and 2^(x+1)
      CHECK(zyfa::e4m3fn_to_float(lean_p_code(8.0f * x + 56 + k, 126)) == std::ldexp(1.0f + k / 8.0f, x));
    // with the top-binade offset (code of one = 120): 2^(x + 8), exact
    if (x <= 0) CHECK(zyfa::e4m3fn_to_float(lean_p_code(8.0f * x + 120, 126)) == std::ldexp(1.0f, x + 8));
  }
  CHECK(lean_p_code(52.5f, 126) == 52);  // half codes round to even
  CHECK(lean_p_code(53.5f, 126) == 54);
  CHECK(lean_p_code(-40.0f, 126) == 0);    // clamped below
  CHECK(lean_p_code(200.0f, 121) == 121);  // clamped above, never NaN (0x7F)
}

TEST_CASE("zyfa recipe: hand-worked row (one block, three keys)") {
  // t = {0, -1, -0.5} (log2 domain): m = 0, kb = 0, y = 8 t + K = {K, K-8, K-4}, s_blk = 2^-8.
  const auto p = row_params(3, 16);
  const auto v = identity_v(3, 16);
  zyfa::host::Fp8RowTrace tr;
  std::vector<double> probs;
  const auto r = zyfa::host::fp8_row(p, Fp8Recipe::zyfa, {0.0f, -1.0f, -0.5f}, v, &probs, &tr);
  const int K = zyfa::host::kBlockMaxCode;
  CHECK(tr.codes == std::vector<std::uint8_t>{std::uint8_t(K), std::uint8_t(K - 8), std::uint8_t(K - 4)});
  const float P0 = zyfa::e4m3fn_to_float(K), P1 = zyfa::e4m3fn_to_float(K - 8), P2 = zyfa::e4m3fn_to_float(K - 4);
  CHECK(P1 * 2 == P0);  // one binade apart: exact halving (Lean P is exact at integer exponent steps)
  const float l = (P0 + P1 + P2) * (1.0f / 256);
  CHECK(tr.l == l);
  CHECK(tr.block_sums == std::vector<float>{P0 + P1 + P2});
  CHECK(r.out[0] == (P0 / 256 / l) * 1.0f);
  CHECK(r.out[1] == (P1 / 256 / l));
  CHECK(r.out[2] == (P2 / 256 / l));
  for (int e = 3; e < 16; ++e) CHECK(r.out[e] == 0.0f);
  // Corrected LSE (default): key 0 (the block max, dmax = 0, kb = 0) counts exactly 2^8; the other two Lean P
  // values are divided by Lean P's mean overestimate and by the lift of code K: l2 = ((P1 + P2) f + 256) / 256.
  const float f = zyfa::host::kLeanPInvMeanBias * std::exp2(-static_cast<float>(K - 120) / 8.0f);
  const float l2 = std::fma(0.0f, 0.0f, ((P0 + P1 + P2 - P0) * f + 256.0f) * (1.0f / 256));
  CHECK(r.lse == ((0.0f + std::log2(l2)) * zyfa::kLn2));
  // exact 1 + 2^-1 + 2^-0.5 = 2.2071: the corrected LSE is within 1e-2 nats, the exact mode within 1e-6
  CHECK(std::fabs(r.lse - std::log(1.0 + 0.5 + std::sqrt(0.5))) < 1e-2);
  const auto rx = zyfa::host::fp8_row(p, Fp8Recipe::zyfa, {0.0f, -1.0f, -0.5f}, v, nullptr, nullptr, K,
                                      zyfa::host::Fp8LseMode::exact);
  CHECK(std::fabs(rx.lse - std::log(1.0 + 0.5 + std::sqrt(0.5))) < 1e-6);
  CHECK(rx.out == r.out);  // the LSE rule never touches the output
  const auto rm = zyfa::host::fp8_row(p, Fp8Recipe::zyfa, {0.0f, -1.0f, -0.5f}, v, nullptr, nullptr, K,
                                      zyfa::host::Fp8LseMode::mean_bias);
  CHECK(rm.lse == ((0.0f + std::log2(l) - ((K - 120) / 8.0f + zyfa::host::kLeanPMeanBiasLog2)) * zyfa::kLn2));
  CHECK(probs[0] == doctest::Approx(P0 / (P0 + P1 + P2)));
}

TEST_CASE("zyfa recipe: per-block power-of-two offset and running max across blocks") {
  // 192 keys = 3 blocks. Block 0 max 0; block 1 max 3 (the max grows: alpha = 2^-3, kb = 0);
  // block 2 max -5.3, 8.3 below the running max: kb = floor(8.3) = 8.
  std::vector<float> t(192);
  for (int j = 0; j < 192; ++j) t[j] = -0.01f * static_cast<float>(j % 64) - (j < 128 ? 1.0f : 6.0f);
  t[5] = 0.0f;
  t[64 + 7] = 3.0f;
  t[128 + 2] = -5.3f;
  const auto p = row_params(192, 8);
  zyfa::host::HeadMatrix v;
  v.rows = 192, v.cols = 8;
  v.data.assign(192 * 8, 1.0f);  // out = 1 exactly if the weights are consistent with l
  zyfa::host::Fp8RowTrace tr;
  std::vector<double> probs;
  const auto r = zyfa::host::fp8_row(p, Fp8Recipe::zyfa, t, v, &probs, &tr);
  REQUIRE(tr.block_shift.size() == 3);
  CHECK(tr.block_shift == std::vector<int>{0, 0, 8});
  const int K = zyfa::host::kBlockMaxCode;
  CHECK(tr.codes[5] == K);  // block max at code K (dmax = 0)
  CHECK(tr.codes[64 + 7] == K);
  // block 2: y = 8 * (-5.3 - 3) + 64 + K = K - 2.4 -> K - 2: the largest probability stays in the top binade
  CHECK(tr.codes[128 + 2] == K - 2);
  CHECK(tr.m == 3.0f);
  for (float o : r.out) CHECK(o == doctest::Approx(1.0).epsilon(1e-6));
  double sum = 0;
  for (double x : probs) sum += x;
  CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
  // the block-0 keys were scaled by alpha = 2^-3 relative to block 1: p(5) / p(64+7) = 2^-3 exactly
  CHECK(probs[5] / probs[64 + 7] == doctest::Approx(0.125).epsilon(1e-12));
}

TEST_CASE("FP8 spec invariants: no probability above 448 before the cast, rounded row sum = sum of fed values") {
  struct Kind {
    const char* name;
    Problem::Gen q, k;
  };
  const Kind kinds[] = {{"gaussian", gaussian(31), gaussian(32)},
                        {"peaky", gaussian(33, 6.0f), gaussian(34)},
                        {"sink", sink_q(35), sink_k(36)}};
  for (const Kind& kd : kinds) {
    CAPTURE(kd.name);
    Shape s;
    s.seqlen_q = 70, s.seqlen_k = 200, s.num_heads = 2, s.num_heads_k = 1, s.head_dim_qk = s.head_dim_v = 128,
    s.causal = true;
    Problem pr(s, DType::e4m3fn, kd.q, kd.k, gaussian(37));
    const auto k = zyfa::host::read_k_head(pr.params, 0, 0), v = zyfa::host::read_v_head(pr.params, 0, 0);
    const auto q = zyfa::host::read_q_head(pr.params, 0, 1);
    for (std::int64_t i = 0; i < s.seqlen_q; i += 3) {
      const std::int64_t n = zyfa::host::visible_keys(pr.params, i);
      const auto scores = zyfa::host::fp8_scores_row(pr.params, q.row(i), k, n);
      for (Fp8Recipe rc : kAll) {
        CAPTURE(zyfa::host::recipe_name(rc));
        zyfa::host::Fp8RowTrace tr;
        const auto r = zyfa::host::fp8_row(pr.params, rc, scores, v, nullptr, &tr);
        CHECK(tr.max_before_cast <= 448.0f);
        CHECK(tr.max_before_cast > 0.0f);
        for (std::uint8_t c : tr.codes) CHECK(c <= 0x7E);  // non-negative, finite (0x7F is NaN)
        // the fused Lean P form may pass the block max code by up to 1/8 before the clamp (numeric/lean_p.hpp)
        if (rc == Fp8Recipe::zyfa) CHECK(tr.max_code_input <= zyfa::host::kBlockMaxCode + 0.125f);
        for (float o : r.out) REQUIRE(std::isfinite(o));
        if (rc == Fp8Recipe::zyfa || rc == Fp8Recipe::zyfa_exact) {
          // every block sum is exactly the sum of the values of the codes fed to P.V, in any order
          for (std::size_t bi = 0; bi < tr.block_sums.size(); ++bi) {
            const std::int64_t j0 = tr.block_first_key[bi], j1 = std::min<std::int64_t>(j0 + 64, n);
            double exact = 0;
            float reversed = 0;
            for (std::int64_t j = j1 - 1; j >= j0; --j) {
              exact += zyfa::e4m3fn_to_float(tr.codes[j]);
              reversed += zyfa::e4m3fn_to_float(tr.codes[j]);
            }
            CHECK(tr.block_sums[bi] == exact);
            CHECK(tr.block_sums[bi] == reversed);
          }
          for (std::int64_t j = n; j < s.seqlen_k; ++j) CHECK(tr.codes[j] == 0);  // masked keys never fed
        }
      }
    }
  }
}

TEST_CASE("FP8 spec: descales far from 1 are honoured") {
  Shape s;
  s.seqlen_q = 33, s.seqlen_k = 90, s.num_heads = 2, s.num_heads_k = 2, s.causal = true;
  auto scaled = [](Problem::Gen g, float f) {
    return [g, f](std::int64_t b, std::int64_t r, std::int64_t h, std::int64_t d) { return g(b, r, h, d) * f; };
  };
  // Power-of-two scales with q_scale * k_scale = 1 give the same codes and the same fp32 logit factor c,
  // so the output must be exactly v_scale times the unscaled one.
  Problem plain(s, DType::e4m3fn, gaussian(41), gaussian(42), gaussian(43));
  Problem pow2(s, DType::e4m3fn, scaled(gaussian(41), 0x1p-12f), scaled(gaussian(42), 0x1p12f),
               scaled(gaussian(43), 0x1p16f));
  CHECK(pow2.q8 == plain.q8);
  CHECK(pow2.options.v_descale == plain.options.v_descale * 0x1p16f);
  for (Fp8Recipe rc : kAll) {
    zyfa::host::Fp8Output a, b;
    REQUIRE(zyfa::host::fp8_attention(plain.params, rc, &a).ok());
    REQUIRE(zyfa::host::fp8_attention(pow2.params, rc, &b).ok());
    for (std::size_t i = 0; i < a.out_f32.size(); ++i) CHECK(b.out_f32[i] == a.out_f32[i] * 0x1p16f);
    CHECK(a.lse == b.lse);
  }
  // Arbitrary descales (1e-5 .. 3e4): every recipe stays within FP8 accuracy of fp64 on the dequantized inputs.
  Problem far(s, DType::e4m3fn, scaled(gaussian(44), 3e-3f), scaled(gaussian(45), 7e2f), scaled(gaussian(46), 1.3e4f),
              1.0f / (3e-3f * 7e2f * 8.0f));
  CHECK(far.options.q_descale < 1e-4f);
  CHECK(far.options.v_descale > 10.0f);
  for (Fp8Recipe rc : kAll) {
    const auto e = zyfa::host::fp8_recipe_error(far.params, rc);
    CAPTURE(e.name);
    CHECK(e.rel_fro_error < 0.05);
    CHECK(e.max_abs_lse_error < 0.1);
  }
}

TEST_CASE("FP8 spec against fp64 at lengths 1, 8, 17, 63, 64, 65, 127, 129, 1000") {
  for (std::int64_t n : {1, 8, 17, 63, 64, 65, 127, 129, 1000}) {
    CAPTURE(n);
    Shape s;
    s.seqlen_q = s.seqlen_k = n, s.num_heads = 1, s.num_heads_k = 1, s.causal = true;
    Problem pr(s, DType::e4m3fn, gaussian(500 + n), gaussian(600 + n), gaussian(700 + n));
    for (Fp8Recipe rc : {Fp8Recipe::zyfa, Fp8Recipe::aiter_like}) {
      const auto e = zyfa::host::fp8_recipe_error(pr.params, rc);
      CAPTURE(e.name);
      CHECK(e.rel_fro_error < 0.05);
      CHECK(std::isfinite(e.mean_kl));
      if (n == 1) CHECK(e.rel_fro_error < 4e-3);  // one key: out = v[0] (only bf16 rounding)
    }
  }
}

TEST_CASE("FP8 spec: rows that see no key give exact zeros and -inf LSE") {
  Shape s;
  s.seqlen_q = 40, s.seqlen_k = 10, s.num_heads = 1, s.num_heads_k = 1, s.causal = true;
  Problem pr(s, DType::e4m3fn, gaussian(51), gaussian(52), gaussian(53));
  for (Fp8Recipe rc : kAll) {
    zyfa::host::Fp8Output o;
    REQUIRE(zyfa::host::fp8_attention(pr.params, rc, &o).ok());
    for (std::int64_t i = 0; i < 40; ++i) {
      REQUIRE(!std::isnan(o.lse[i]));
      CHECK((i < 30) == (o.lse[i] == -std::numeric_limits<float>::infinity()));
      for (std::int64_t e = 0; e < 64; ++e) {
        REQUIRE(std::isfinite(o.out_f32[i * 64 + e]));
        if (i < 30) CHECK(o.out_bf16[i * 64 + e] == 0);
      }
    }
  }
}

TEST_CASE("zyfa recipe error < aiter_like error on peaky (attention-sink) inputs") {
  Shape s;
  s.seqlen_q = s.seqlen_k = 512, s.num_heads = 2, s.num_heads_k = 1, s.head_dim_qk = s.head_dim_v = 128,
  s.causal = true;
  Problem pr(s, DType::e4m3fn, sink_q(61), sink_k(62), gaussian(63));
  const auto rows = zyfa::host::fp8_accuracy_report(pr.params);
  REQUIRE(rows.size() == 5);
  CHECK(rows[0].name == "aiter_like");
  CHECK(rows[2].name == "zyfa");
  MESSAGE("sink: zyfa / aiter_like rel. Frobenius = ", rows[2].rel_fro_error / rows[0].rel_fro_error);
  CHECK(rows[2].rel_fro_error < 0.7 * rows[0].rel_fro_error);
  CHECK(rows[3].rel_fro_error < 0.7 * rows[0].rel_fro_error);  // zyfa_exact
  CHECK(rows[2].mean_kl < rows[0].mean_kl);
  CHECK(rows[2].flushed_mass < rows[0].flushed_mass);
}

TEST_CASE("block max code finding (DESIGN.md): code 121 beats 120 for Lean P") {
  // Re-measures the finding behind kBlockMaxCode on Gaussian and attention-sink inputs.
  Shape s;
  s.seqlen_q = s.seqlen_k = 256, s.num_heads = 2, s.num_heads_k = 1, s.head_dim_qk = s.head_dim_v = 128,
  s.causal = true;
  Problem gauss(s, DType::e4m3fn, gaussian(71), gaussian(72), gaussian(73));
  Problem sink(s, DType::e4m3fn, sink_q(74), sink_k(75), gaussian(76));
  for (Problem* pr : {&gauss, &sink}) {
    const double e120 = zyfa::host::fp8_recipe_error(pr->params, Fp8Recipe::zyfa, 120).rel_fro_error;
    const double e121 = zyfa::host::fp8_recipe_error(pr->params, Fp8Recipe::zyfa, 121).rel_fro_error;
    MESSAGE("rel. Frobenius error, block max code 120: ", e120, "  121: ", e121);
    CHECK(e121 < 0.9 * e120);
  }
  CHECK(zyfa::host::kBlockMaxCode == 121);
}

TEST_CASE("fp8_probabilities: rows sum to 1 over visible keys and approach the fp64 probabilities") {
  Shape s;
  s.seqlen_q = 20, s.seqlen_k = 150, s.num_heads = 2, s.num_heads_k = 1, s.causal = true;
  Problem pr(s, DType::e4m3fn, gaussian(81), gaussian(82), gaussian(83));
  for (Fp8Recipe rc : kAll)
    for (std::int64_t i : {0, 7, 19}) {
      const auto pf = zyfa::host::fp8_probabilities(pr.params, rc, 0, 1, i);
      const auto pr64 = zyfa::host::reference_probabilities(pr.params, 0, 1, i);
      REQUIRE(pf.size() == 150);
      double sum = 0, tv = 0;
      for (std::int64_t j = 0; j < 150; ++j) {
        sum += pf[j];
        tv += std::fabs(pf[j] - pr64[j]);
        if (j > i + 130) CHECK(pf[j] == 0.0);
      }
      // aiter_like/scaled_p normalise by the unrounded row sum: their rows sum to 1 only approximately
      CHECK(sum == doctest::Approx(1.0).epsilon(rc == Fp8Recipe::zyfa || rc == Fp8Recipe::zyfa_exact ? 1e-6 : 0.05));
      CHECK(tv < 0.1);
    }
}

TEST_CASE("peer recipes: tiles, gains, AITER hd256's fast-exp branch") {
  using zyfa::host::peer_key_block;
  CHECK(peer_key_block(Fp8Recipe::aiter_asm_hd128, 128) == 128);
  CHECK(peer_key_block(Fp8Recipe::aiter_asm_hd256, 256) == 64);
  CHECK(peer_key_block(Fp8Recipe::aiter_ck, 64) == 64);
  CHECK(peer_key_block(Fp8Recipe::aiter_ck, 256) == 128);
  CHECK(peer_key_block(Fp8Recipe::fa3, 64) == 160);
  CHECK(peer_key_block(Fp8Recipe::fa3, 128) == 224);
  CHECK(peer_key_block(Fp8Recipe::fa3, 256) == 128);
  // One sink key at t = 0, then 127 keys at t = -10 (log2 domain): the second 64-key tile of aiter_asm_hd256
  // has (m_blk - m) - (log2 l + 0.5) = -10.5 <= -4, so it takes the fast exp: p = 2^(-10 - 0.058) exactly at
  // an integer exponent (Schraudolph's chord is exact there, times 2^-0.058).
  const std::int64_t n = 128;
  auto p = row_params(n, 16);
  p.head_dim_qk = 256;
  const auto v = identity_v(n, 16);
  std::vector<float> t(n, -10.0f);
  t[0] = 0.0f;
  zyfa::host::Fp8RowTrace tr;
  zyfa::host::fp8_row(p, Fp8Recipe::aiter_asm_hd256, t, v, nullptr, &tr);
  const float fast = std::ldexp(1.0f + (8388608.0f - 486400.0f) / 8388608.0f, -11);  // bits of (127-10-0.058)*2^23
  CHECK(tr.codes[64] == zyfa::float_to_e4m3fn(fast));
  CHECK(tr.codes[1] == zyfa::float_to_e4m3fn(std::exp2(-10.0f)));  // first tile: exact exp2, raw cast
  CHECK(tr.codes[0] == zyfa::float_to_e4m3fn(1.0f));
  // CK casts P * 448, FA3 P * 256: their largest code is 448 / 256; the raw-cast asm kernels' is 1.
  zyfa::host::fp8_row(p, Fp8Recipe::aiter_ck, t, v, nullptr, &tr);
  CHECK(tr.codes[0] == zyfa::float_to_e4m3fn(448.0f));
  zyfa::host::fp8_row(p, Fp8Recipe::fa3, t, v, nullptr, &tr);
  CHECK(tr.codes[0] == zyfa::float_to_e4m3fn(256.0f));
  // every peer's output on this row is close to the exact softmax (keys 0..15 of v are the identity)
  const double w = 1.0 / (1.0 + 127.0 * std::exp2(-10.0));
  for (Fp8Recipe rc : {Fp8Recipe::aiter_asm_hd128, Fp8Recipe::aiter_asm_hd256, Fp8Recipe::aiter_ck, Fp8Recipe::fa3}) {
    const auto r = zyfa::host::fp8_row(p, rc, t, v);
    CHECK(r.out[0] == doctest::Approx(w).epsilon(0.01));
    CHECK(r.lse == doctest::Approx(-std::log(w) * 1.0 + 0.0).epsilon(0.01));
  }
}

TEST_CASE("zyfa_v2: chord-corrected Lean P relative to each block's own max") {
  // t = {0, -1, -0.5}: y = {120, 112, 116}; f = frac(y / 8) = {0, 0, 1/2}; the correction moves only the
  // half-binade key: 116 - 2.745 * 1/4 = 115.31 -> code 115 (176, against 2^7.5 = 181.0; plain Lean P: 192).
  const auto p = row_params(3, 16);
  const auto v = identity_v(3, 16);
  zyfa::host::Fp8RowTrace tr;
  const auto r = zyfa::host::fp8_row(p, Fp8Recipe::zyfa_v2, {0.0f, -1.0f, -0.5f}, v, nullptr, &tr);
  CHECK(tr.codes == std::vector<std::uint8_t>{120, 112, 115});
  CHECK(zyfa::e4m3fn_to_float(115) == 176.0f);
  const float l = (256.0f + 128.0f + 176.0f) * (1.0f / 256);
  CHECK(tr.l == l);
  CHECK(r.out[2] == (176.0f / 256 / l));
  CHECK(r.lse == (0.0f + std::log2(l)) * zyfa::kLn2);
  // Two blocks: the second block's max (t = -1.3) lands exactly on code 120; its scale 2^-1.3 * 2^-8 is fp32.
  const std::int64_t n = 70;
  auto p2 = row_params(n, 16);
  const auto v2 = identity_v(n, 16);
  std::vector<float> t(n, -3.0f);
  t[0] = 0.0f;
  t[65] = -1.3f;
  const auto r2 = zyfa::host::fp8_row(p2, Fp8Recipe::zyfa_v2, t, v2, nullptr, &tr);
  CHECK(tr.codes[0] == 120);
  CHECK(tr.codes[65] == 120);
  CHECK(tr.codes[1] == 96);    // 3 binades below the block max: exact (f = 0)
  CHECK(tr.codes[64] == 106);  // 1.7 below its block max: y = 106.4, f = 0.3, 106.4 - 2.745 * 0.21 = 105.8
  const double exact_w0 = 1.0 / (1.0 + 62 * std::exp2(-3.0) + 4 * std::exp2(-3.0) + std::exp2(-1.3) + 0.0);
  CHECK(r2.out[0] == doctest::Approx(exact_w0).epsilon(0.03));
  // zyfa_v2 never exceeds code 120 and is never worse than the published zyfa recipe on the sink problem
  Shape sh;
  sh.seqlen_q = sh.seqlen_k = 300, sh.num_heads = 2, sh.num_heads_k = 1, sh.causal = true;
  Problem pr(sh, DType::e4m3fn, sink_q(5), sink_k(6), gaussian(7));
  const auto e1 = zyfa::host::fp8_recipe_error(pr.params, Fp8Recipe::zyfa);
  const auto e2 = zyfa::host::fp8_recipe_error(pr.params, Fp8Recipe::zyfa_v2);
  MESSAGE("sink: zyfa_v2 / zyfa rel. Frobenius = ", e2.rel_fro_error / e1.rel_fro_error);
  CHECK(e2.rel_fro_error < e1.rel_fro_error);
}
