// Host backend (zyfa/host/backend.hpp), quantize helper and the accuracy report (zyfa/host/accuracy.hpp).
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <vector>
#include <zyfa/zyfa.hpp>

#include "problem.hpp"

using namespace zyfa_test;
using zyfa::DType;

TEST_CASE("host flash_attn_func, FP8: writes the zyfa recipe's bf16 output and fp32 LSE bit for bit") {
  Shape s;
  s.batch = 2, s.seqlen_q = 45, s.seqlen_k = 130, s.num_heads = 4, s.num_heads_k = 2, s.causal = true;
  Problem pr(s, DType::e4m3fn, gaussian(81), gaussian(82), gaussian(83));
  REQUIRE(zyfa::host::flash_attn_func(pr.tq(), pr.tk(), pr.tv(), pr.tout(), pr.lse.data(), pr.options).ok());
  zyfa::host::Fp8Output spec;
  REQUIRE(zyfa::host::fp8_attention(pr.params, zyfa::host::Fp8Recipe::zyfa, &spec).ok());
  CHECK(pr.out == spec.out_bf16);
  CHECK(pr.lse == spec.lse);
  // and it is close to fp64
  zyfa::host::ReferenceOutput ref;
  REQUIRE(zyfa::host::reference_attention(pr.params, &ref).ok());
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < ref.out.size(); ++i) {
    const double d = zyfa::bf16_to_float(pr.out[i]) - ref.out[i];
    err += d * d, norm += ref.out[i] * ref.out[i];
  }
  CHECK(std::sqrt(err / norm) < 0.05);
}

TEST_CASE("host flash_attn_func: validation errors are returned, nothing is written") {
  Shape s;
  Problem pr(s, DType::bf16, gaussian(84), gaussian(85), gaussian(86));
  zyfa::TensorRef k = pr.tk();
  k.shape[3] = 32;
  const zyfa::Status st = zyfa::host::flash_attn_func(pr.tq(), k, pr.tv(), pr.tout(), nullptr, pr.options);
  CHECK(st.code == zyfa::StatusCode::invalid_argument);
  CHECK(st.message.rfind("k: shape[3]", 0) == 0);
  for (std::uint16_t o : pr.out) CHECK(o == 0xFFFF);
}

TEST_CASE("quantize_e4m3fn: descale = amax / 448, codes saturate, errors name the argument") {
  std::vector<float> x = {0.5f, -3.0f, 1.0f, 2.99f, 0.0f};
  std::vector<std::uint8_t> c(x.size());
  float d = 0;
  REQUIRE(zyfa::host::quantize_e4m3fn(x.data(), x.size(), c.data(), &d).ok());
  CHECK(d == 3.0f / 448.0f);
  CHECK(c[1] == 0xFE);  // -448
  for (std::size_t i = 0; i < x.size(); ++i)
    CHECK(zyfa::e4m3fn_to_float(c[i]) * d == doctest::Approx(x[i]).epsilon(0.07));
  std::vector<float> zeros(4, 0.0f);
  REQUIRE(zyfa::host::quantize_e4m3fn(zeros.data(), 4, c.data(), &d).ok());
  CHECK(d == 1.0f);
  x[2] = std::nanf("");
  zyfa::Status st = zyfa::host::quantize_e4m3fn(x.data(), x.size(), c.data(), &d);
  CHECK(st.message.rfind("x[2] is", 0) == 0);
  st = zyfa::host::quantize_e4m3fn(nullptr, 1, c.data(), &d);
  CHECK(st.message.rfind("x:", 0) == 0);
  st = zyfa::host::quantize_e4m3fn(zeros.data(), 1, nullptr, &d);
  CHECK(st.message.rfind("codes:", 0) == 0);
  st = zyfa::host::quantize_e4m3fn(zeros.data(), 1, c.data(), nullptr);
  CHECK(st.message.rfind("descale:", 0) == 0);
}

TEST_CASE("accuracy report: all recipes, sane magnitudes, bf16 beats FP8 on Gaussian inputs, table prints") {
  Shape s;
  s.seqlen_q = s.seqlen_k = 200, s.num_heads = 2, s.num_heads_k = 1, s.head_dim_qk = s.head_dim_v = 128,
  s.causal = true;
  Problem p8(s, DType::e4m3fn, gaussian(91), gaussian(92), gaussian(93));
  const auto rows = zyfa::host::fp8_accuracy_report(p8.params);
  REQUIRE(rows.size() == 5);
  const char* names[5] = {"aiter_like", "scaled_p", "zyfa", "zyfa_exact", "bf16"};
  for (int r = 0; r < 5; ++r) {
    CAPTURE(names[r]);
    CHECK(rows[r].name == names[r]);
    CHECK(rows[r].rel_fro_error > 0);
    CHECK(rows[r].rel_fro_error < 0.05);
    CHECK(rows[r].max_abs_error >= rows[r].rel_fro_error * 0.1);
    CHECK(rows[r].mean_kl >= 0);
    CHECK(std::isfinite(rows[r].mean_kl));
    CHECK(rows[r].max_abs_lse_error < 0.1);
  }
  for (int r = 0; r < 4; ++r) CHECK(rows[4].rel_fro_error < rows[r].rel_fro_error);
  // the reported zyfa row equals fp8_recipe_error with the specification's constant
  CHECK(rows[2].rel_fro_error == zyfa::host::fp8_recipe_error(p8.params, zyfa::host::Fp8Recipe::zyfa).rel_fro_error);
  std::ostringstream os;
  zyfa::host::print_accuracy_table(os, rows, "### test");
  const std::string t = os.str();
  for (const char* n : names) CHECK(t.find(std::string("| ") + n + " |") != std::string::npos);
  CHECK(t.rfind("### test\n| recipe |", 0) == 0);
  // bf16 inputs: FP8 recipes include quantization of the inputs; bf16 row runs on the inputs as given
  Problem p16(s, DType::bf16, gaussian(91), gaussian(92), gaussian(93));
  const auto rows16 = zyfa::host::fp8_accuracy_report(p16.params);
  REQUIRE(rows16.size() == 5);
  CHECK(rows16[4].rel_fro_error < 4e-3);
  CHECK(rows16[2].rel_fro_error > rows[2].rel_fro_error);  // + input quantization error
  CHECK(rows16[2].rel_fro_error < 0.08);
}
