// Test helper: an attention problem that owns its host buffers (bf16 or e4m3fn inputs, bf16 out, fp32 lse).
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <vector>
#include <zyfa/zyfa.hpp>

namespace zyfa_test {

/// Problem sizes and options.
struct Shape {
  std::int64_t batch = 1, seqlen_q = 16, seqlen_k = 16, num_heads = 2, num_heads_k = 2, head_dim_qk = 64,
               head_dim_v = 64;
  bool causal = false;
};

/// Owns q/k/v/out/lse in host memory (dense BSHD). Inputs are given as float generators f(b, s, h, d);
/// bf16 problems round them to bf16, fp8 problems quantize each tensor per-tensor (quantize_e4m3fn).
struct Problem {
  Shape shape;
  zyfa::DType dtype = zyfa::DType::bf16;
  std::vector<std::uint16_t> q16, k16, v16, out;
  std::vector<std::uint8_t> q8, k8, v8;
  std::vector<float> lse;
  zyfa::AttentionOptions options;
  zyfa::AttentionParams params;

  using Gen = std::function<float(std::int64_t, std::int64_t, std::int64_t, std::int64_t)>;

  static std::vector<float> fill(std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t d, const Gen& g) {
    std::vector<float> x(static_cast<std::size_t>(b * s * h * d));
    std::size_t n = 0;
    for (std::int64_t ib = 0; ib < b; ++ib)
      for (std::int64_t is = 0; is < s; ++is)
        for (std::int64_t ih = 0; ih < h; ++ih)
          for (std::int64_t id = 0; id < d; ++id) x[n++] = g(ib, is, ih, id);
    return x;
  }

  Problem(const Shape& s, zyfa::DType dt, const Gen& gq, const Gen& gk, const Gen& gv,
          std::optional<float> softmax_scale = std::nullopt)
      : shape(s), dtype(dt) {
    const auto q = fill(s.batch, s.seqlen_q, s.num_heads, s.head_dim_qk, gq);
    const auto k = fill(s.batch, s.seqlen_k, s.num_heads_k, s.head_dim_qk, gk);
    const auto v = fill(s.batch, s.seqlen_k, s.num_heads_k, s.head_dim_v, gv);
    options.causal = s.causal;
    options.softmax_scale = softmax_scale;
    if (dt == zyfa::DType::bf16) {
      auto cvt = [](const std::vector<float>& x) {
        std::vector<std::uint16_t> y(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) y[i] = zyfa::float_to_bf16(x[i]);
        return y;
      };
      q16 = cvt(q), k16 = cvt(k), v16 = cvt(v);
    } else {
      q8.resize(q.size()), k8.resize(k.size()), v8.resize(v.size());
      REQUIRE(zyfa::host::quantize_e4m3fn(q.data(), q.size(), q8.data(), &options.q_descale).ok());
      REQUIRE(zyfa::host::quantize_e4m3fn(k.data(), k.size(), k8.data(), &options.k_descale).ok());
      REQUIRE(zyfa::host::quantize_e4m3fn(v.data(), v.size(), v8.data(), &options.v_descale).ok());
    }
    out.assign(static_cast<std::size_t>(s.batch * s.seqlen_q * s.num_heads * s.head_dim_v), 0xFFFF);  // NaN poison
    lse.assign(static_cast<std::size_t>(s.batch * s.num_heads * s.seqlen_q), std::nanf(""));
    const zyfa::Status st = zyfa::make_params(tq(), tk(), tv(), tout(), lse.data(), options, &params);
    REQUIRE_MESSAGE(st.ok(), st.message);
  }

  void* data(std::vector<std::uint16_t>& a, std::vector<std::uint8_t>& b) {
    return dtype == zyfa::DType::bf16 ? static_cast<void*>(a.data()) : static_cast<void*>(b.data());
  }
  zyfa::TensorRef tq() {
    return zyfa::TensorRef::contiguous(data(q16, q8), dtype, shape.batch, shape.seqlen_q, shape.num_heads,
                                       shape.head_dim_qk);
  }
  zyfa::TensorRef tk() {
    return zyfa::TensorRef::contiguous(data(k16, k8), dtype, shape.batch, shape.seqlen_k, shape.num_heads_k,
                                       shape.head_dim_qk);
  }
  zyfa::TensorRef tv() {
    return zyfa::TensorRef::contiguous(data(v16, v8), dtype, shape.batch, shape.seqlen_k, shape.num_heads_k,
                                       shape.head_dim_v);
  }
  zyfa::TensorRef tout() {
    return zyfa::TensorRef::contiguous(out.data(), zyfa::DType::bf16, shape.batch, shape.seqlen_q, shape.num_heads,
                                       shape.head_dim_v);
  }
};

/// Deterministic pseudo-random N(0, sigma^2) generator keyed by (seed, b, s, h, d).
inline Problem::Gen gaussian(std::uint64_t seed, float sigma = 1.0f) {
  return [seed, sigma](std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t d) {
    std::uint64_t x = seed * 0x9E3779B97F4A7C15ull ^ (static_cast<std::uint64_t>(b) << 48) ^
                      (static_cast<std::uint64_t>(s) << 24) ^ (static_cast<std::uint64_t>(h) << 16) ^
                      static_cast<std::uint64_t>(d);
    auto next = [&x]() {  // splitmix64
      x += 0x9E3779B97F4A7C15ull;
      std::uint64_t z = x;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      return z ^ (z >> 31);
    };
    const double u1 = (static_cast<double>(next() >> 11) + 0.5) / 9007199254740992.0;
    const double u2 = static_cast<double>(next() >> 11) / 9007199254740992.0;
    return static_cast<float>(sigma * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  };
}

}  // namespace zyfa_test
