// Validation: every precondition failure names its argument.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>
#include <random>
#include <zyfa/bf16/fwd_args.hpp>
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

// ---- one test per make_params error: status invalid_argument, message starting with the argument ----
namespace {
using zyfa::DType;
using zyfa::TensorRef;

// A valid bf16 GQA problem (b=2, seqlen_q=4, seqlen_k=8, heads 4/2, head dim 64) that each test breaks once.
struct Case {
  Buffers* buf;
  TensorRef q, k, v, o;
  zyfa::AttentionOptions opt;
  float* lse = nullptr;
  Case() : buf(new Buffers) {
    q = TensorRef::contiguous(buf->q, DType::bf16, 2, 4, 4, 64);
    k = TensorRef::contiguous(buf->k, DType::bf16, 2, 8, 2, 64);
    v = TensorRef::contiguous(buf->v, DType::bf16, 2, 8, 2, 64);
    o = TensorRef::contiguous(buf->o, DType::bf16, 2, 4, 4, 64);
  }
  ~Case() { delete buf; }
  Case(const Case&) = delete;
  Case& operator=(const Case&) = delete;
  void fp8() {
    for (TensorRef* t : {&q, &k, &v}) {
      const auto s = t->shape;
      *t = TensorRef::contiguous(t->data, DType::e4m3fn, s[0], s[1], s[2], s[3]);
    }
  }
  TensorRef& tensor(int w) { return w == 0 ? q : w == 1 ? k : w == 2 ? v : o; }
  // Runs make_params; checks it fails with a message starting with `prefix` and leaves params untouched.
  void expect_error(const std::string& prefix) {
    zyfa::AttentionParams p;
    p.batch = -12345;
    const zyfa::Status s = zyfa::make_params(q, k, v, o, lse, opt, &p);
    CHECK(s.code == zyfa::StatusCode::invalid_argument);
    CHECK_MESSAGE(s.message.rfind(prefix, 0) == 0, "message: ", s.message, " expected prefix: ", prefix);
    CHECK(p.batch == -12345);
  }
};
const char* const kNames[4] = {"q", "k", "v", "out"};
}  // namespace

TEST_CASE("make_params: the Case baseline is valid") {
  Case c;
  zyfa::AttentionParams p;
  CHECK(zyfa::make_params(c.q, c.k, c.v, c.o, nullptr, c.opt, &p).ok());
  c.fp8();
  c.opt.q_descale = 1e-6f;
  c.opt.k_descale = 3e4f;
  CHECK(zyfa::make_params(c.q, c.k, c.v, c.o, nullptr, c.opt, &p).ok());
}

TEST_CASE("make_params error: params pointer is null") {
  Case c;
  const zyfa::Status s = zyfa::make_params(c.q, c.k, c.v, c.o, nullptr, c.opt, nullptr);
  CHECK(s.code == zyfa::StatusCode::invalid_argument);
  CHECK(s.message.rfind("params:", 0) == 0);
}

TEST_CASE("make_params error: null data pointer") {
  for (int w = 0; w < 4; ++w) {
    Case c;
    c.tensor(w).data = nullptr;
    c.expect_error(std::string(kNames[w]) + ": data pointer is null");
  }
}

TEST_CASE("make_params error: non-positive size") {
  for (int w = 0; w < 4; ++w)
    for (int d = 0; d < 4; ++d)
      for (std::int64_t bad : {0, -3}) {
        Case c;
        c.tensor(w).shape[d] = bad;
        c.expect_error(std::string(kNames[w]) + ": shape[" + std::to_string(d) + "]");
      }
}

TEST_CASE("make_params error: size larger than 2^31-1") {
  Case c;
  c.k.shape[1] = std::int64_t(1) << 31;
  c.expect_error("k: shape[1] (seqlen_k) is 2147483648, larger than 2^31-1");
}

TEST_CASE("make_params error: last-dim stride not 1") {
  for (int w = 0; w < 4; ++w) {
    Case c;
    c.tensor(w).stride[3] = 2;
    c.expect_error(std::string(kNames[w]) + ": stride[3] must be 1");
  }
}

TEST_CASE("make_params error: misaligned data pointer") {
  for (int w = 0; w < 4; ++w) {
    Case c;
    c.tensor(w).data = static_cast<char*>(c.tensor(w).data) + 2;
    c.expect_error(std::string(kNames[w]) + ": data pointer must be 16-byte aligned");
  }
}

TEST_CASE("make_params error: non-positive stride of a dim with size > 1") {
  for (int w = 0; w < 4; ++w)
    for (int d = 0; d < 3; ++d) {
      Case c;
      c.tensor(w).stride[d] = d == 0 ? 0 : -64;
      c.expect_error(std::string(kNames[w]) + ": stride[" + std::to_string(d) + "] must be > 0");
    }
}

TEST_CASE("make_params error: stride not a multiple of 16 bytes") {
  Case c;
  c.v.stride[1] = 2 * 64 + 4;  // 264 bytes
  c.expect_error("v: stride[1] is 132 elements; it must be a multiple of 16 bytes");
}

TEST_CASE("make_params error: head_dim not a multiple of 16 bytes") {
  Case c;
  c.q.shape[3] = c.k.shape[3] = 60;
  c.expect_error("q: shape[3] (head_dim_qk) is 60");
}

TEST_CASE("make_params error: a bad head_dim of a contiguous tensor is reported as head_dim, not as a stride") {
  alignas(64) static std::uint16_t buf[4 * 12 * 2];
  const auto q = zyfa::TensorRef::contiguous(buf, DType::bf16, 1, 4, 2, 12);  // strides 24, 12, 1: 12 is bad too
  zyfa::AttentionParams p;
  const zyfa::Status s = zyfa::make_params(q, q, q, q, nullptr, {}, &p);
  CHECK(s.code == zyfa::StatusCode::invalid_argument);
  CHECK_MESSAGE(s.message.rfind("q: shape[3] (head_dim_qk) is 12", 0) == 0, s.message);
}

TEST_CASE("make_params error: strides addressing more than 2^60 elements") {
  Case c;
  c.q.stride[0] = std::int64_t(1) << 60;  // the largest stride accepted; with batch 2 the offsets pass 2^60
  c.expect_error("q: shape and strides address more than 2^60 elements");
}

TEST_CASE("make_params error: shape mismatch between tensors") {
  struct Mismatch {
    int w, d;
    std::int64_t value;
    const char* prefix;
  };
  const Mismatch cases[] = {
      {1, 0, 1, "k: shape[0] (batch) is 1, expected 2 from q"},
      {1, 3, 128, "k: shape[3] (head_dim_qk) is 128, expected 64 from q"},
      {2, 0, 1, "v: shape[0] (batch) is 1, expected 2 from q"},
      {2, 1, 7, "v: shape[1] (seqlen_k) is 7, expected 8 from k"},
      {2, 2, 1, "v: shape[2] (num_heads_k) is 1, expected 2 from k"},
      {3, 0, 1, "out: shape[0] (batch) is 1"},
      {3, 1, 5, "out: shape[1] (seqlen_q) is 5"},
      {3, 2, 2, "out: shape[2] (num_heads) is 2"},
      {3, 3, 128, "out: shape[3] (head_dim_v) is 128, expected 64 from v"},
  };
  for (const Mismatch& m : cases) {
    Case c;
    c.tensor(m.w).shape[m.d] = m.value;
    c.expect_error(m.prefix);
  }
}

TEST_CASE("make_params error: num_heads not a multiple of num_heads_k") {
  Case c;
  c.k.shape[2] = c.v.shape[2] = 3;
  c.expect_error("k: num_heads_k (3) must divide q's num_heads (4)");
}

TEST_CASE("make_params error: softmax_lse misaligned") {
  Case c;
  alignas(16) static float lse[64];
  c.lse = reinterpret_cast<float*>(reinterpret_cast<char*>(lse) + 2);
  c.expect_error("softmax_lse: pointer must be 4-byte aligned");
}

TEST_CASE("make_params error: q dtype not supported") {
  Case c;
  c.q.dtype = c.k.dtype = c.v.dtype = DType::fp32;
  c.expect_error("q: dtype fp32 is not supported");
}

TEST_CASE("make_params error: k or v dtype differs from q") {
  {
    Case c;
    c.fp8();
    c.k.dtype = DType::bf16;
    c.expect_error("k: dtype bf16 differs from q's e4m3fn");
  }
  {
    Case c;
    c.fp8();
    c.v.dtype = DType::bf16;
    c.expect_error("v: dtype bf16 differs from q's e4m3fn");
  }
}

TEST_CASE("make_params error: FP8 given as e4m3fnuz where e4m3fn is required") {
  Case c;
  c.fp8();
  c.q.dtype = c.k.dtype = c.v.dtype = DType::e4m3fnuz;
  c.expect_error("q: dtype e4m3fnuz given where e4m3fn");
}

TEST_CASE("make_params error: out dtype not bf16") {
  Case c;
  c.o.dtype = DType::e4m3fn;
  c.expect_error("out: dtype e4m3fn is not supported");
}

TEST_CASE("make_params error: softmax_scale not finite or not > 0") {
  for (float bad : {0.0f, -0.5f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    Case c;
    c.opt.softmax_scale = bad;
    c.expect_error("softmax_scale: must be finite and > 0");
  }
}

TEST_CASE("make_params error: FP8 descale not finite or not > 0") {
  const char* names[3] = {"q_descale", "k_descale", "v_descale"};
  for (int w = 0; w < 3; ++w)
    for (float bad : {0.0f, -1.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
      Case c;
      c.fp8();
      float* d[3] = {&c.opt.q_descale, &c.opt.k_descale, &c.opt.v_descale};
      *d[w] = bad;
      c.expect_error(std::string(names[w]) + ": must be finite and > 0");
    }
}

TEST_CASE("make_params error: descale other than 1 for bf16 inputs") {
  const char* names[3] = {"q_descale", "k_descale", "v_descale"};
  for (int w = 0; w < 3; ++w) {
    Case c;
    float* d[3] = {&c.opt.q_descale, &c.opt.k_descale, &c.opt.v_descale};
    *d[w] = 2.0f;
    c.expect_error(std::string(names[w]) + ": only FP8 inputs take a descale");
  }
}

TEST_CASE("needs_64bit_offsets: true once a byte offset passes 2^31-1") {
  Case c;
  zyfa::AttentionParams p;
  c.o.stride[0] = std::int64_t(1) << 30;  // batch 1 of out starts 2 GiB (bf16) in (out is the last buffer: no overlap)
  REQUIRE(zyfa::make_params(c.q, c.k, c.v, c.o, nullptr, c.opt, &p).ok());
  CHECK(p.needs_64bit_offsets());
}

// ---- scale factors: the fp32 product the kernels use must be finite and normal ----

TEST_CASE("make_params error: softmax_scale whose fp32 product with log2(e) is not finite or is subnormal") {
  for (float bad : {2.4e38f, 3e38f, 1e-45f, 1e-39f}) {  // 2.4e38 * 1.4427 overflows fp32; 1e-39 is subnormal
    CAPTURE(bad);
    Case c;
    c.opt.softmax_scale = bad;
    c.expect_error("softmax_scale: ");
  }
  for (float ok : {2e38f, 1e-37f}) {  // products 2.9e38 and 1.4e-37: finite and normal
    Case c;
    c.opt.softmax_scale = ok;
    zyfa::AttentionParams p;
    const zyfa::Status s = zyfa::make_params(c.q, c.k, c.v, c.o, nullptr, c.opt, &p);
    CHECK_MESSAGE(s.ok(), s.message);
  }
}

TEST_CASE("make_params error: FP8 q_descale * k_descale * softmax_scale * log2(e) not finite or not normal") {
  struct Bad {
    float qd, kd;
  };
  for (Bad b : {Bad{1e30f, 1e30f}, Bad{3e38f, 2.0f}, Bad{1e-20f, 1e-20f}, Bad{1e-30f, 1e-10f}}) {
    CAPTURE(b.qd);
    CAPTURE(b.kd);
    Case c;
    c.fp8();
    c.opt.q_descale = b.qd;
    c.opt.k_descale = b.kd;
    c.expect_error("q_descale/k_descale: ");
  }
  // large but representable: accepted, and the host FP8 path gives finite output
  Case c;
  c.fp8();
  c.opt.q_descale = 1e18f, c.opt.k_descale = 1e18f;
  zyfa::AttentionParams p;
  CHECK(zyfa::make_params(c.q, c.k, c.v, c.o, nullptr, c.opt, &p).ok());
}

TEST_CASE("make_params error: subnormal FP8 descale; messages print tiny values with %g") {
  const char* names[3] = {"q_descale", "k_descale", "v_descale"};
  for (int w = 0; w < 3; ++w) {
    Case c;
    c.fp8();
    float* d[3] = {&c.opt.q_descale, &c.opt.k_descale, &c.opt.v_descale};
    *d[w] = std::ldexp(1.0f, -130);  // subnormal (FLT_MIN = 2^-126)
    c.expect_error(std::string(names[w]) + ": 7.34684e-40 is subnormal");
  }
  Case c;
  c.opt.softmax_scale = -1e-20f;
  c.expect_error("softmax_scale: must be finite and > 0, got -1e-20");
}

// ---- aliasing ----

TEST_CASE("make_params error: out strides that make its elements overlap") {
  {
    Case c;  // out [2, 4, 4, 64]: head stride 32 < head_dim 64
    c.o.stride[2] = 32;
    c.expect_error("out: stride[2] is 32 elements, which makes elements overlap");
  }
  {
    Case c;  // row stride = head stride: rows and heads collide
    c.o.stride[1] = 64;
    c.expect_error("out: stride[1] is 64 elements, which makes elements overlap");
  }
  {
    Case c;  // batch stride smaller than the span of one batch (4 * 256 = 1024 elements)
    c.o.stride[0] = 512;
    c.expect_error("out: stride[0] is 512 elements, which makes elements overlap");
  }
  {
    // head_dim 16 with head stride 8 (a multiple of 16 bytes): every element but the first 8 is written twice
    alignas(64) static std::uint16_t q[4 * 2 * 16], k[4 * 2 * 16], v[4 * 2 * 16], o[4 * 2 * 16];
    auto tq = TensorRef::contiguous(q, DType::bf16, 1, 4, 2, 16),
         tk = TensorRef::contiguous(k, DType::bf16, 1, 4, 2, 16),
         tv = TensorRef::contiguous(v, DType::bf16, 1, 4, 2, 16),
         to = TensorRef::contiguous(o, DType::bf16, 1, 4, 2, 16);
    to.stride[2] = 8;
    zyfa::AttentionParams p;
    const zyfa::Status s = zyfa::make_params(tq, tk, tv, to, nullptr, {}, &p);
    CHECK(s.code == zyfa::StatusCode::invalid_argument);
    CHECK_MESSAGE(s.message.rfind("out: stride[2] is 8 elements, which makes elements overlap", 0) == 0, s.message);
  }
  {
    // allowed: transposed (BHSD) and padded layouts, and any stride of a size-1 dim
    Case c;
    c.o.stride[2] = 4 * 64, c.o.stride[1] = 64, c.o.stride[0] = 4 * 4 * 64;  // [b, h, s, d] in memory
    zyfa::AttentionParams p;
    CHECK(zyfa::make_params(c.q, c.k, c.v, c.o, nullptr, c.opt, &p).ok());
  }
  {
    Case c;
    c.o.shape[0] = c.q.shape[0] = c.k.shape[0] = c.v.shape[0] = 1;
    c.o.stride[0] = 8;  // size-1 dim: never used
    zyfa::AttentionParams p;
    const zyfa::Status s = zyfa::make_params(c.q, c.k, c.v, c.o, nullptr, c.opt, &p);
    CHECK_MESSAGE(s.ok(), s.message);
  }
}

TEST_CASE("make_params error: out overlapping q, k or v") {
  for (int w = 0; w < 3; ++w) {
    Case c;
    c.o.data = c.tensor(w).data;  // out written in place of an input (same size for q; larger than k/v)
    c.expect_error(std::string("out: overlaps ") + kNames[w]);
  }
  {
    Case c;  // partial overlap: out starts in the last 16 bytes of q
    c.o.data = reinterpret_cast<char*>(c.buf->q) + sizeof(c.buf->q) - 16;
    c.expect_error("out: overlaps q");
  }
  {
    Case c;  // out ending exactly where q starts: adjacent, no overlap
    alignas(64) static std::uint16_t both[2 * 4 * 4 * 64 * 2];
    c.o.data = both;
    c.q.data = both + 2 * 4 * 4 * 64;
    zyfa::AttentionParams p;
    CHECK(zyfa::make_params(c.q, c.k, c.v, c.o, nullptr, c.opt, &p).ok());
  }
  {
    Case c;  // q, k and v may alias each other (self-attention on one buffer)
    c.k.data = c.v.data;
    zyfa::AttentionParams p;
    CHECK(zyfa::make_params(c.q, c.k, c.v, c.o, nullptr, c.opt, &p).ok());
  }
}

TEST_CASE("make_params error: softmax_lse overlapping out, q, k or v") {
  for (int w = 0; w < 4; ++w) {
    Case c;
    c.lse = static_cast<float*>(c.tensor(w).data) + 4;  // inside the tensor
    c.expect_error(std::string("softmax_lse: overlaps ") + kNames[w]);
  }
  {
    // lse [2, 4, 4] = 32 floats = 128 bytes ending exactly at q: no overlap; one float later: overlap
    alignas(64) static std::uint16_t buf[64 + 2 * 4 * 4 * 64];
    Case c;
    c.q.data = buf + 64;
    c.lse = reinterpret_cast<float*>(buf + 64) - 32;
    zyfa::AttentionParams p;
    CHECK(zyfa::make_params(c.q, c.k, c.v, c.o, c.lse, c.opt, &p).ok());
    c.lse += 1;
    c.expect_error("softmax_lse: overlaps q");
  }
}

// ---- integer overflow ----

TEST_CASE("make_params error: a stride above 2^60 is rejected before stride * element size can overflow") {
  for (int d = 0; d < 3; ++d) {
    Case c;
    c.q.stride[d] = std::int64_t(1) << 62;  // * 2 bytes would be 2^63: signed overflow
    c.expect_error("q: stride[" + std::to_string(d) + "] is 4611686018427387904 elements, larger than 2^60");
  }
}

TEST_CASE("needs_64bit_offsets: batch * num_heads * seqlen_q * 4 does not wrap") {
  zyfa::AttentionParams p;  // not from make_params: only the sizes matter here (strides 0 keep the tensors tiny)
  p.batch = std::int64_t(1) << 30, p.num_heads = std::int64_t(1) << 30, p.seqlen_q = 4;  // lse: 2^64 bytes
  p.num_heads_k = 1, p.seqlen_k = 1, p.head_dim_qk = p.head_dim_v = 16;
  CHECK(p.needs_64bit_offsets());
  p.batch = 1, p.num_heads = 1;
  CHECK_FALSE(p.needs_64bit_offsets());
}

TEST_CASE("query_blocks: the launch grid size does not wrap (bf16/launch.hpp rejects > 2^31-1)") {
  zyfa::AttentionParams p;
  p.seqlen_q = std::numeric_limits<std::int32_t>::max(), p.batch = std::int64_t(1) << 20,
  p.num_heads = std::int64_t(1) << 20;
  // ceil((2^31-1) / 128) = 2^24; 2^24 * 2^20 * 2^20 = 2^64: the plain int64 product wraps to 0
  CHECK(p.query_blocks(128) > std::numeric_limits<std::int32_t>::max());
  CHECK(p.query_blocks(128) == std::numeric_limits<std::int64_t>::max());
  p.batch = 3, p.num_heads = 5, p.seqlen_q = 129;
  CHECK(p.query_blocks(128) == 2 * 3 * 5);
  CHECK(p.query_blocks(64) == 3 * 3 * 5);
  p.seqlen_q = 128;
  CHECK(p.query_blocks(128) == 15);
  CHECK(p.query_blocks(0) == 0);
  p.batch = 1, p.num_heads = 1 << 16, p.seqlen_q = std::int64_t(1) << 30;  // 2^23 * 2^16 = 2^39 blocks
  CHECK(p.query_blocks(128) == std::int64_t(1) << 39);
}

TEST_CASE(
    "scale_softmax_log2: one value for the host specification and the kernels, bit for bit (100k random scales)") {
  // The BF16 kernels' argument (bf16/fwd_args.hpp), the host specification (params.scale_softmax_log2) and the
  // formula ((q_descale * k_descale) * softmax_scale) * log2(e) in fp32 agree on every scale, bf16 and FP8.
  std::mt19937 gen(12345);
  std::uniform_real_distribution<float> log_scale(-12.0f, 4.0f), log_descale(-6.0f, 6.0f);
  std::vector<std::uint16_t> h(4 * 16 * 64, 0);
  std::vector<std::uint8_t> h8(4 * 16 * 64, 0);
  int mismatches = 0;
  for (int it = 0; it < 100000; ++it) {
    const bool fp8 = it % 2 == 1;
    zyfa::AttentionOptions opt;
    opt.softmax_scale = std::exp2(log_scale(gen));
    if (fp8) {
      opt.q_descale = std::exp2(log_descale(gen));
      opt.k_descale = std::exp2(log_descale(gen));
    }
    const auto dt = fp8 ? zyfa::DType::e4m3fn : zyfa::DType::bf16;
    void* in = fp8 ? static_cast<void*>(h8.data()) : static_cast<void*>(h.data());
    const auto t = zyfa::TensorRef::contiguous(in, dt, 1, 4, 4, 64);
    std::vector<std::uint16_t> o(4 * 4 * 64);
    const auto out = zyfa::TensorRef::contiguous(o.data(), zyfa::DType::bf16, 1, 4, 4, 64);
    zyfa::AttentionParams p;
    REQUIRE(zyfa::make_params(t, t, t, out, nullptr, opt, &p));
    const float expect = ((opt.q_descale * opt.k_descale) * *opt.softmax_scale) * zyfa::kLog2e;
    const zyfa::bf16::FwdArgs a = zyfa::bf16::make_fwd_args(p, 128);
    mismatches += zyfa::float_bits(p.scale_softmax_log2) != zyfa::float_bits(expect);
    if (!fp8) mismatches += zyfa::float_bits(a.scale_log2) != zyfa::float_bits(expect);
  }
  CHECK(mismatches == 0);
}

TEST_CASE("check_cu_seqlens: a null pointer or batch < 1 is an error naming the argument, never a read") {
  const std::int32_t cu[3] = {0, 4, 10};
  zyfa::Status s = zyfa::check_cu_seqlens("cu_seqlens_q", "max_seqlen_q", nullptr, 2, 10, 6);
  CHECK(!s);
  CHECK(s.message.rfind("cu_seqlens_q:", 0) == 0);
  s = zyfa::check_cu_seqlens("cu_seqlens_k", "max_seqlen_k", cu, -5, 10, 6);
  CHECK(!s);
  CHECK(s.message.rfind("cu_seqlens_k:", 0) == 0);
  CHECK(zyfa::check_cu_seqlens("cu_seqlens_q", "max_seqlen_q", cu, 2, 10, 6));
}

#include <zyfa/fp8/gfx950/attention.hpp>

TEST_CASE("gfx950 FP8 attention: kernel preconditions and the packed arguments") {
  alignas(64) static std::uint8_t q[2 * 40 * 6 * 192], k[2 * 70 * 2 * 192], v[2 * 70 * 2 * 128];
  alignas(64) static std::uint16_t o[2 * 40 * 6 * 128];
  alignas(64) static float lse[2 * 6 * 40];
  using zyfa::DType;
  zyfa::AttentionOptions opt;
  opt.causal = true;
  opt.q_descale = 0.5f, opt.k_descale = 0.25f, opt.v_descale = 3.0f;
  auto make = [&](DType dt, std::int64_t dqk, std::int64_t dv, zyfa::AttentionParams* p) {
    return zyfa::make_params(zyfa::TensorRef::contiguous(q, dt, 2, 40, 6, dqk),
                             zyfa::TensorRef::contiguous(k, dt, 2, 70, 2, dqk),
                             zyfa::TensorRef::contiguous(v, dt, 2, 70, 2, dv),
                             zyfa::TensorRef::contiguous(o, DType::bf16, 2, 40, 6, dv), lse, opt, p);
  };
  zyfa::AttentionParams p;
  REQUIRE(make(DType::e4m3fn, 128, 128, &p).ok());
  REQUIRE_MESSAGE(zyfa::fp8::gfx950::validate_fp8_attention(p).ok(),
                  zyfa::fp8::gfx950::validate_fp8_attention(p).message);
  const auto a = zyfa::fp8::gfx950::make_fp8_attention_args(p);
  CHECK(a.q == q);
  CHECK(a.lse == lse);
  CHECK(a.q_row_stride == 6 * 128);
  CHECK(a.q_batch_stride == 40 * 6 * 128);
  CHECK(a.k_head_stride == 128);
  CHECK(a.out_row_stride == 6 * 128);
  CHECK(a.seqlen_q == 40);
  CHECK(a.seqlen_k == 70);
  CHECK(a.num_heads == 6);
  CHECK(a.causal == 1);
  CHECK(a.scale_log2 == p.scale_softmax_log2);
  CHECK(a.v_descale == 3.0f);
  for (std::uint32_t g : {1u, 2u, 3u, 7u, 8u, 64u}) {
    const std::uint32_t m = zyfa::fp8::gfx950::group_magic(g);
    for (std::uint64_t h = 0; h < 4096; ++h) {
      const std::uint64_t hk = g == 1 ? h : (h * m) >> 32;  // the kernel: mul_hi(h, magic), magic 0 = group 1
      REQUIRE(hk == h / g);
    }
  }
  // the kernel's extra preconditions, each naming its argument
  zyfa::AttentionParams bad = p;
  bad.q = q + 8;
  CHECK(zyfa::fp8::gfx950::validate_fp8_attention(bad).message.rfind("q: pointer not 16-byte", 0) == 0);
  bad = p;
  bad.k_row_stride = 2 * 128 + 8;
  CHECK(zyfa::fp8::gfx950::validate_fp8_attention(bad).message.rfind("k: row stride", 0) == 0);
  bad = p;
  bad.v = v + 4;  // K and V are staged by dwordx4 LDS-DMA: 16-byte alignment
  CHECK(zyfa::fp8::gfx950::validate_fp8_attention(bad).message.rfind("v: pointer not 16-byte", 0) == 0);
  bad = p;
  bad.v_row_stride = 2 * 128 + 4;
  CHECK(zyfa::fp8::gfx950::validate_fp8_attention(bad).message.rfind("v: row stride", 0) == 0);
  bad = p;
  bad.out = o + 1;
  CHECK(zyfa::fp8::gfx950::validate_fp8_attention(bad).message.rfind("out: pointer", 0) == 0);
  bad = p;
  bad.qkv_dtype = DType::e4m3fnuz;
  CHECK(zyfa::fp8::gfx950::validate_fp8_attention(bad).code == zyfa::StatusCode::unsupported);
  // 64-bit base offsets: a tensor beyond 2^32 bytes is accepted when every stride fits 32 bits and 64 rows span
  // less than 2^32 bytes (the per-lane buffer offsets inside a 64-row block)
  bad = p;
  bad.q_batch_stride = 0xfffff000;    // batch 1 of q starts 4 GiB in
  bad.out_batch_stride = 0x7ffff000;  // batch 1 of out starts 4 GiB in (bf16)
  bad.k_head_stride = 0x80000000;     // K/V head 1 starts 2 GiB in
  CHECK(bad.needs_64bit_offsets());
  CHECK_MESSAGE(zyfa::fp8::gfx950::validate_fp8_attention(bad).ok(),
                zyfa::fp8::gfx950::validate_fp8_attention(bad).message);
  CHECK(zyfa::fp8::gfx950::make_fp8_attention_args(bad).q_batch_stride == 0xfffff000u);
  bad.q_batch_stride = std::int64_t(1) << 32;  // does not fit the 32-bit stride argument
  CHECK(zyfa::fp8::gfx950::validate_fp8_attention(bad).message.rfind("q: batch stride 4294967296", 0) == 0);
  CHECK(zyfa::fp8::gfx950::validate_fp8_attention(bad).code == zyfa::StatusCode::unsupported);
  bad = p;
  bad.k_row_stride = std::int64_t(1) << 26;  // 64 rows x 2^26 bytes = 2^32
  CHECK(zyfa::fp8::gfx950::validate_fp8_attention(bad).message.rfind("k: row stride", 0) == 0);
  bad.k_row_stride = (std::int64_t(1) << 26) - 16;
  CHECK(zyfa::fp8::gfx950::validate_fp8_attention(bad).ok());
  bad = p;
  bad.out_row_stride = std::int64_t(1) << 25;  // bf16: 64 rows x 2^26 bytes
  CHECK(zyfa::fp8::gfx950::validate_fp8_attention(bad).message.rfind("out: row stride", 0) == 0);
  // MLA (192, 128): its own kernel in the dispatch table, the same argument struct
  REQUIRE(make(DType::e4m3fn, 192, 128, &p).ok());
  REQUIRE_MESSAGE(zyfa::fp8::gfx950::validate_fp8_attention(p).ok(),
                  zyfa::fp8::gfx950::validate_fp8_attention(p).message);
  const char* mla = zyfa::fp8::gfx950::attention_config(192, 128);
  REQUIRE(mla != nullptr);
  const zyfa::fp8::gen::KernelEntry* e = zyfa::fp8::gen::find_kernel(zyfa::fp8::gfx950::kAttentionFamily, mla);
  REQUIRE(e != nullptr);
  CHECK(std::string(e->name) == "zyfa_fp8_fwd_d192_dv128_m32");
  CHECK(e->kernarg_size == sizeof(zyfa::fp8::gfx950::AttentionArgs));
  const zyfa::fp8::gen::KernelEntry* e128 =
      zyfa::fp8::gen::find_kernel(zyfa::fp8::gfx950::kAttentionFamily, zyfa::fp8::gfx950::attention_config(128, 128));
  REQUIRE(e128 != nullptr);
  CHECK(std::string(e128->name) == "zyfa_fp8_fwd_d128_m32");
  // 8 waves of 32 query rows per workgroup (the grid's x = ceil(seqlen_q / 256))
  CHECK(e128->workgroup_size == 512);
  CHECK(e->workgroup_size == 512);
  CHECK(zyfa::fp8::gfx950::kAttentionBlockM == 256);
  const auto am = zyfa::fp8::gfx950::make_fp8_attention_args(p);
  CHECK(am.q_row_stride == 6 * 192);
  CHECK(am.k_row_stride == 2 * 192);
  CHECK(am.v_row_stride == 2 * 128);
  CHECK(am.out_row_stride == 6 * 128);
  CHECK(am.scale_log2 == p.scale_softmax_log2);
  CHECK(zyfa::fp8::gfx950::attention_config(128, 192) == nullptr);
  CHECK(zyfa::fp8::gfx950::attention_config(192, 192) == nullptr);
  REQUIRE(make(DType::e4m3fn, 64, 64, &p).ok());
  const zyfa::Status s = zyfa::fp8::gfx950::validate_fp8_attention(p);
  CHECK(s.code == zyfa::StatusCode::unsupported);
  CHECK(s.message.find("head dims (64, 64)") != std::string::npos);
}
