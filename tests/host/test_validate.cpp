// Validation: every precondition failure names its argument.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>
#include <zyfa/zyfa.hpp>

namespace {
struct Buffers {
  alignas(64) std::uint16_t q[2 * 4 * 4 * 64], k[2 * 8 * 2 * 64], v[2 * 8 * 2 * 64], o[2 * 4 * 4 * 64];
};
}  // namespace

TEST_CASE("make_params accepts a valid GQA problem and resolves the default softmax_scale") {
  static Buffers b;
  using zyfa::DType;
  auto q = zyfa::TensorRef::contiguous(b.q, DType::bf16, 2, 4, 4, 64);
  auto k = zyfa::TensorRef::contiguous(b.k, DType::bf16, 2, 8, 2, 64);
  auto v = zyfa::TensorRef::contiguous(b.v, DType::bf16, 2, 8, 2, 64);
  auto o = zyfa::TensorRef::contiguous(b.o, DType::bf16, 2, 4, 4, 64);
  zyfa::AttentionParams p;
  zyfa::Status s = zyfa::make_params(q, k, v, o, nullptr, {}, &p);
  REQUIRE_MESSAGE(s.ok(), s.message);
  CHECK(p.group_size() == 2);
  CHECK(p.softmax_scale == doctest::Approx(0.125));
  CHECK(p.causal_offset() == 4);
  CHECK_FALSE(p.needs_64bit_offsets());

  k.shape[2] = 3;
  v.shape[2] = 3;
  s = zyfa::make_params(q, k, v, o, nullptr, {}, &p);
  CHECK(s.code == zyfa::StatusCode::invalid_argument);
  CHECK(s.message.rfind("k: num_heads_k", 0) == 0);
}
