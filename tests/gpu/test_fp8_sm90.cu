// tests/gpu/test_fp8_sm90.cu -- the sm_90a FP8 kernel (include/zyfa/fp8/sm90/) against zyfa's FP8 specification
// (include/zyfa/host/fp8_spec.hpp) on an H100/H200. Built and run by bench/run_fp8_sm90.sh:
//   nvcc -std=c++17 -O2 -gencode=arch=compute_90a,code=sm_90a -Iinclude -I<doctest dir> tests/gpu/test_fp8_sm90.cu
// Every output element is compared (outputs NaN-poisoned beforehand, padding checked untouched); NaN never passes.
// Where the kernel and the specification can agree bit for bit (P codes, given the same fp32 logits) the inputs are
// built so that the logits are exact in any summation order and V makes every code visible in the output.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include <zyfa/host/fp8_spec.hpp>
#include <zyfa/zyfa.hpp>

namespace {

#define CUDA_OK(x) REQUIRE((x) == cudaSuccess)
/// LSE tolerance against the specification (nats) where the logits are exact in any summation order. The kernel's
/// block row sum l_blk is the ones column of the P.V wgmma: FP8 wgmma aligns the 32 products of a k32 step to the
/// largest and keeps about 14 bits, so l_blk can lose up to 2 * 32 * 2^-13 of the block's largest P per 64-key block
/// (about 1%); the specification's l_blk is exact. The output divides by the same l and P.V sums with the same
/// alignment (a tolerance on the output, bits on the codes).
constexpr double kLseTol = 2e-2;
/// LSE tolerance on random inputs: the logits also differ by summation order, so a logit at a rounding boundary of
/// y gives a code one step (1/8 of its P) away from the specification's. The corrected LSE cancels this for the
/// block's top key (P_top is the kernel's own code), not for the others: a key carrying a share w of a row's mass
/// moves l by w / 8, and rows that see few keys have large w (measured 2.4e-2 on a row of 11 keys). 0.05 covers
/// w <= 0.3 plus the 1% of l_blk; the recipe's own LSE error against fp64 is 2-3e-2.
constexpr double kLseTolRandom = 5e-2;
/// Relative Frobenius error against the specification on random inputs (see "random inputs").
constexpr double kFroTol = 1e-2;
std::mt19937& rng() {
  static std::mt19937 g(12345);
  return g;
}

struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(size_t bytes) { REQUIRE(cudaMalloc(&p, bytes < 16 ? 16 : bytes) == cudaSuccess); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

enum class Inputs {
  random,        ///< N(0, 1) quantized per tensor (descale = max|x| / 448)
  exact_logits,  ///< q, k in {+-0.5, ..., +-3.5}: every partial sum of S is exact; v one-hot: out shows every code
  v_ones,        ///< random q, k; V == 1: every output must be exactly 1.0
  strong_tail,   ///< one strong key per row and a long tail of weak keys; V == 1: exactly 1.0
  deep_blocks,   ///< exact logits; 64-key blocks at the row max, ~100 and ~200 binades below it (pattern 0 1 2 0'
                 ///< per four blocks); v one-hot: the far blocks take the scaled accumulator's rare path
};

struct Case {
  int batch = 1, sq = 128, sk = 128, h = 2, hk = 2, dqk = 128, dv = 128;
  bool causal = false;
  bool lse = true;
  int pad = 0;  ///< extra elements per (row, head) slot (multiple of 16): strided views
  Inputs inputs = Inputs::random;
  bool poison = false;      ///< NaN codes in K and V at keys some rows must not see (causal) and past seqlen_k
  int nan_q_row = -1;       ///< >= 0: a NaN code in q at this row (batch 0, head 0): that row's out and lse are NaN
  int nan_k_key = -1;       ///< >= 0: a NaN code in k at this key (batch 0, kv head 0): rows that see it are NaN
  int repeats = 1;          ///< GPU calls on the same buffers; Result::identical says whether all were bitwise equal
  float softmax_scale = 0;  ///< > 0: this softmax_scale instead of 1 / sqrt(head_dim_qk)
  zyfa::fp8::sm90::PMode mode = zyfa::fp8::sm90::PMode::lean_p;
};

std::string describe(const Case& c) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "b=%d sq=%d sk=%d h=%d hk=%d d=(%d,%d) causal=%d lse=%d pad=%d inputs=%d poison=%d %s",
                c.batch, c.sq, c.sk, c.h, c.hk, c.dqk, c.dv, c.causal, c.lse, c.pad, static_cast<int>(c.inputs),
                c.poison, c.mode == zyfa::fp8::sm90::PMode::lean_p ? "lean_p" : "exp2");
  return buf;
}

struct Result {
  std::vector<std::uint16_t> out;  // [b, sq, h, dv + pad] as stored (bf16 bits)
  std::vector<float> lse;          // [b, h, sq]
  zyfa::host::Fp8Output spec;
  int slot_q = 0, slot_o = 0;
  bool identical = true;  // Case::repeats calls gave the same out and lse bits
};

/// Runs one case on the GPU and through the specification. `sk_buf`: keys allocated (>= sk; extra rows poisoned).
Result run(const Case& c) {
  const int sk_buf = c.sk + (c.poison ? 64 : 0);
  const int slot_q = c.dqk + c.pad, slot_v = c.dv + c.pad, slot_o = c.dv + c.pad;
  std::vector<std::uint8_t> q(static_cast<size_t>(c.batch) * c.sq * c.h * slot_q, 0),
      k(static_cast<size_t>(c.batch) * sk_buf * c.hk * slot_q, 0),
      v(static_cast<size_t>(c.batch) * sk_buf * c.hk * slot_v, 0);
  float qd = 1, kd = 1, vd = 1;
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> half(-7, 7);
  auto qi = [&](int b, int s, int hh, int d) -> std::uint8_t& {
    return q[((static_cast<size_t>(b) * c.sq + s) * c.h + hh) * slot_q + d];
  };
  auto ki = [&](int b, int s, int hh, int d) -> std::uint8_t& {
    return k[((static_cast<size_t>(b) * sk_buf + s) * c.hk + hh) * slot_q + d];
  };
  auto vi = [&](int b, int s, int hh, int d) -> std::uint8_t& {
    return v[((static_cast<size_t>(b) * sk_buf + s) * c.hk + hh) * slot_v + d];
  };
  for (int b = 0; b < c.batch; ++b) {
    for (int s = 0; s < c.sq; ++s)
      for (int hh = 0; hh < c.h; ++hh)
        for (int d = 0; d < c.dqk; ++d) {
          float x = nd(rng()) * 64.0f;
          if (c.inputs == Inputs::exact_logits) x = 0.5f * half(rng());
          if (c.inputs == Inputs::strong_tail) x = (d == 0) ? 4.0f : 0.0f;
          if (c.inputs == Inputs::deep_blocks) x = 3.5f;
          qi(b, s, hh, d) = zyfa::float_to_e4m3fn(x);
        }
    for (int s = 0; s < sk_buf; ++s)
      for (int hh = 0; hh < c.hk; ++hh) {
        for (int d = 0; d < c.dqk; ++d) {
          float x = nd(rng()) * 64.0f;
          if (c.inputs == Inputs::exact_logits) x = 0.5f * half(rng());
          // strong_tail: key 0 has logit 4 * 448 * scale, the other keys 4 * (small) each
          if (c.inputs == Inputs::strong_tail) x = (d == 0) ? (s == 0 ? 448.0f : 0.5f * (s % 7)) : 0.0f;
          if (c.inputs == Inputs::deep_blocks) {
            // S = 3.5 (sum of k over the dims): all dims 3.5 (block pattern 0 and 3: the row max), the first half
            // only (1: ~100-120 binades below after the scale 1/sqrt(d) log2 e), none (2: ~200, s_blk = 0); the
            // last dim varies the logit by up to +-1.75 within the block
            const int pat = (s / 64) % 4;
            x = (pat == 2 || (pat == 1 && d >= c.dqk / 2)) ? 0.0f : 3.5f;
            if (d == c.dqk - 1) x = 0.5f * (s % 7 - 3);
          }
          ki(b, s, hh, d) = zyfa::float_to_e4m3fn(x);
        }
        for (int d = 0; d < c.dv; ++d) {
          float x = nd(rng()) * 64.0f;
          if (c.inputs == Inputs::exact_logits || c.inputs == Inputs::deep_blocks) x = (s % c.dv == d) ? 1.0f : 0.0f;
          if (c.inputs == Inputs::v_ones || c.inputs == Inputs::strong_tail) x = 1.0f;
          vi(b, s, hh, d) = zyfa::float_to_e4m3fn(x);
        }
      }
  }
  if (c.inputs == Inputs::random) qd = kd = vd = 1.0f / 64.0f;
  if (c.poison) {
    // NaN codes in K and V at the keys past seqlen_k (inside the buffers, outside the views: never read), and in V
    // (even columns) at the last key, which only the last query row sees when causal.
    for (int b = 0; b < c.batch; ++b)
      for (int hh = 0; hh < c.hk; ++hh) {
        for (int s = c.sk; s < sk_buf; ++s) {
          for (int d = 0; d < c.dqk; d += 3) ki(b, s, hh, d) = 0x7F;
          for (int d = 0; d < c.dv; d += 2) vi(b, s, hh, d) = 0xFF;
        }
        if (c.causal)
          for (int d = 0; d < c.dv; d += 2) vi(b, c.sk - 1, hh, d) = 0x7F;
      }
  }
  if (c.nan_q_row >= 0) qi(0, c.nan_q_row, 0, 5) = 0x7F;
  if (c.nan_k_key >= 0) ki(0, c.nan_k_key, 0, 7) = 0xFF;
  using zyfa::TensorRef;
  auto view = [&](void* p, int seq_buf, int heads, int dim, int slot) {
    TensorRef t = TensorRef::contiguous(p, zyfa::DType::e4m3fn, c.batch, seq_buf, heads, dim);
    t.stride[2] = slot;
    t.stride[1] = static_cast<std::int64_t>(heads) * slot;
    t.stride[0] = static_cast<std::int64_t>(seq_buf) * heads * slot;
    return t;
  };
  zyfa::AttentionOptions opt;
  opt.causal = c.causal;
  opt.q_descale = qd;
  opt.k_descale = kd;
  opt.v_descale = vd;
  if (c.softmax_scale > 0) opt.softmax_scale = c.softmax_scale;

  Result r;
  r.slot_q = slot_q;
  r.slot_o = slot_o;
  // Specification (host memory views; sk rows of the sk_buf-row buffers).
  {
    std::vector<std::uint16_t> hout(static_cast<size_t>(c.batch) * c.sq * c.h * slot_o);
    TensorRef tq = view(q.data(), c.sq, c.h, c.dqk, slot_q), tk = view(k.data(), sk_buf, c.hk, c.dqk, slot_q),
              tv = view(v.data(), sk_buf, c.hk, c.dv, slot_v);
    tk.shape[1] = tv.shape[1] = c.sk;
    TensorRef to = TensorRef::contiguous(hout.data(), zyfa::DType::bf16, c.batch, c.sq, c.h, c.dv);
    to.stride[2] = slot_o;
    to.stride[1] = static_cast<std::int64_t>(c.h) * slot_o;
    to.stride[0] = static_cast<std::int64_t>(c.sq) * c.h * slot_o;
    zyfa::AttentionParams hp;
    const zyfa::Status s = zyfa::make_params(tq, tk, tv, to, nullptr, opt, &hp);
    REQUIRE_MESSAGE(s.ok(), s.message);
    const auto recipe =
        c.mode == zyfa::fp8::sm90::PMode::lean_p ? zyfa::host::Fp8Recipe::zyfa : zyfa::host::Fp8Recipe::zyfa_exact;
    REQUIRE(zyfa::host::fp8_attention(hp, recipe, &r.spec).ok());
  }
  // GPU
  DeviceBuffer dq(q.size()), dk(k.size()), dv(v.size()), dout(static_cast<size_t>(c.batch) * c.sq * c.h * slot_o * 2),
      dlse(static_cast<size_t>(c.batch) * c.h * c.sq * 4);
  CUDA_OK(cudaMemcpy(dq.p, q.data(), q.size(), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dk.p, k.data(), k.size(), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dv.p, v.data(), v.size(), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(dout.p, 0xFF, static_cast<size_t>(c.batch) * c.sq * c.h * slot_o * 2));
  CUDA_OK(cudaMemset(dlse.p, 0xFF, static_cast<size_t>(c.batch) * c.h * c.sq * 4));
  TensorRef tq = view(dq.p, c.sq, c.h, c.dqk, slot_q), tk = view(dk.p, sk_buf, c.hk, c.dqk, slot_q),
            tv = view(dv.p, sk_buf, c.hk, c.dv, slot_v);
  tk.shape[1] = tv.shape[1] = c.sk;
  TensorRef to = TensorRef::contiguous(dout.p, zyfa::DType::bf16, c.batch, c.sq, c.h, c.dv);
  to.stride[2] = slot_o;
  to.stride[1] = static_cast<std::int64_t>(c.h) * slot_o;
  to.stride[0] = static_cast<std::int64_t>(c.sq) * c.h * slot_o;
  float* lse = c.lse ? static_cast<float*>(dlse.p) : nullptr;
  zyfa::Status st;
  if (c.mode == zyfa::fp8::sm90::PMode::lean_p) {
    st = zyfa::flash_attn_func(tq, tk, tv, to, lse, opt, nullptr);
  } else {
    zyfa::AttentionParams p;
    st = zyfa::make_params(tq, tk, tv, to, lse, opt, &p);
    if (st.ok()) st = zyfa::fp8::sm90::launch_builtin(p, nullptr, c.mode);
  }
  REQUIRE_MESSAGE(st.ok(), describe(c) << ": " << st.message);
  CUDA_OK(cudaDeviceSynchronize());
  r.out.resize(static_cast<size_t>(c.batch) * c.sq * c.h * slot_o);
  r.lse.resize(static_cast<size_t>(c.batch) * c.h * c.sq);
  CUDA_OK(cudaMemcpy(r.out.data(), dout.p, r.out.size() * 2, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(r.lse.data(), dlse.p, r.lse.size() * 4, cudaMemcpyDeviceToHost));
  std::vector<std::uint16_t> again_out(r.out.size());
  std::vector<float> again_lse(r.lse.size());
  for (int rep = 1; rep < c.repeats && r.identical; ++rep) {
    CUDA_OK(cudaMemset(dout.p, 0xFF, r.out.size() * 2));
    CUDA_OK(cudaMemset(dlse.p, 0xFF, r.lse.size() * 4));
    zyfa::Status s2 = zyfa::flash_attn_func(tq, tk, tv, to, lse, opt, nullptr);
    REQUIRE_MESSAGE(s2.ok(), s2.message);
    CUDA_OK(cudaMemcpy(again_out.data(), dout.p, r.out.size() * 2, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(again_lse.data(), dlse.p, r.lse.size() * 4, cudaMemcpyDeviceToHost));
    r.identical = again_out == r.out && std::memcmp(again_lse.data(), r.lse.data(), r.lse.size() * 4) == 0;
  }
  return r;
}

/// Compares every element with the specification: |gpu - spec| <= rel * |spec| + abs_tol (bf16 output: rel >= 2^-8),
/// padding untouched (still the 0xFFFF poison), LSE within lse_tol (-inf exactly where the specification has -inf).
/// Returns the number of bad elements (also reported).
void check(const Case& c, const Result& r, double rel, double abs_tol, double lse_tol, double* rel_fro = nullptr) {
  size_t bad = 0, bad_pad = 0, bad_lse = 0;
  double worst = 0, num = 0, den = 0;
  for (int b = 0; b < c.batch; ++b)
    for (int s = 0; s < c.sq; ++s)
      for (int hh = 0; hh < c.h; ++hh)
        for (int d = 0; d < r.slot_o; ++d) {
          const std::uint16_t got = r.out[((static_cast<size_t>(b) * c.sq + s) * c.h + hh) * r.slot_o + d];
          if (d >= c.dv) {
            bad_pad += got != 0xFFFF;
            continue;
          }
          const double ref = r.spec.out_f32[((static_cast<size_t>(b) * c.sq + s) * c.h + hh) * c.dv + d];
          const double g = zyfa::bf16_to_float(got), err = std::fabs(g - ref);
          if (std::isnan(ref)) {  // the specification's NaN rows: NaN here too, nothing else
            if (!std::isnan(g)) ++bad;
            continue;
          }
          num += (g - ref) * (g - ref);
          den += ref * ref;
          if (!(err <= rel * std::fabs(ref) + abs_tol)) {
            if (bad < 5)
              MESSAGE(describe(c) << ": out[" << b << "," << s << "," << hh << "," << d << "] gpu " << g << " spec "
                                  << ref);
            ++bad;
          }
          if (err > worst || std::isnan(err)) worst = err;
        }
  if (c.lse)
    for (size_t i = 0; i < r.lse.size(); ++i) {
      const double ref = r.spec.lse[i], g = r.lse[i];
      const bool ok = std::isnan(ref)   ? std::isnan(g)
                      : std::isinf(ref) ? (std::isinf(g) && g < 0)
                                        : std::fabs(g - ref) <= lse_tol;
      if (!ok && bad_lse < 3) MESSAGE(describe(c) << ": lse[" << i << "] gpu " << g << " spec " << ref);
      bad_lse += !ok;
    }
  const double fro = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  if (rel_fro) *rel_fro = fro;
  MESSAGE(describe(c) << ": max|err| " << worst << ", rel. Frobenius vs spec " << fro << ", bad " << bad << ", pad "
                      << bad_pad << ", lse bad " << bad_lse);
  CHECK(bad == 0);
  CHECK(bad_pad == 0);
  CHECK(bad_lse == 0);
}

TEST_CASE("constants shared with the specification") {
  CHECK(zyfa::fp8::sm90::kBlockMaxCode == zyfa::host::kBlockMaxCode);
  CHECK(zyfa::fp8::sm90::kTopExponent == zyfa::host::kTopExponent);
  CHECK(zyfa::host::kKeyBlock == zyfa::fp8::sm90::Fp8Config<128, 128, zyfa::fp8::sm90::PMode::lean_p>::kBlockN);
}

TEST_CASE("P codes bit for bit: exact logits, one-hot V (every code visible in the output)") {
  // S is exact in any order (products are multiples of 1/4, |S| < 2^11), so t_j and the codes must equal the
  // specification's; V one-hot (key j -> column j % 128) puts each P_j * s_blk * alpha / l in its own column: a code
  // off by one moves it by >= 1/16, far beyond the bf16 rounding (2^-9) and the ones-column row sum (2^-13).
  for (int dqk : {128, 192})
    for (bool causal : {false, true})
      for (int sk : {64, 100, 128}) {
        Case c;
        c.dqk = dqk;
        c.causal = causal;
        c.sq = 130;
        c.sk = sk;
        c.inputs = Inputs::exact_logits;
        check(c, run(c), 1.0 / 128, 1e-30, kLseTol);
      }
}

TEST_CASE("P codes bit for bit where rows pass 2^16 in log2 units (the specification's two-step form)") {
  // softmax_scale 1500: t = S * 1500 log2(e) passes 2^16 for |S| > 30, so with exact logits (|S| of a row's max
  // about 20-60) some rows take the fused form and others the two-step form, in the same warp and block.
  for (bool causal : {false, true}) {
    Case c;
    c.causal = causal;
    c.sq = 130;
    c.sk = 200;
    c.inputs = Inputs::exact_logits;
    c.softmax_scale = 1500.0f;
    check(c, run(c), 1.0 / 128, 1e-30, kLseTol);
  }
}

TEST_CASE("blocks 100 and 200 binades below the row max, then at it again (the accumulator's scale bookkeeping)") {
  // The kernel keeps acc scaled by 2^e of the last block (at most 2^98); a block more than 90 binades below the row
  // max folds by the two-operation path, one with s_blk = 0 contributes nothing, and the next block at the row max
  // must come back with the right weight: one-hot V shows every block's codes in the output at their weight.
  for (int dqk : {128, 192})
    for (bool causal : {false, true}) {
      Case c;
      c.dqk = dqk;
      c.causal = causal;
      c.sq = 70;
      c.sk = 512;
      c.inputs = Inputs::deep_blocks;
      check(c, run(c), 1.0 / 128, 1e-30, kLseTol);
    }
}

TEST_CASE("random inputs: shapes, tails, GQA/MQA, strides, causal and not") {
  struct S {
    int b, sq, sk, h, hk, dqk;
    bool causal;
    int pad;
  };
  const S shapes[] = {{1, 1, 1, 2, 2, 128, false, 0},      {1, 17, 17, 2, 1, 128, true, 0},
                      {2, 63, 65, 4, 2, 128, true, 0},     {1, 127, 129, 2, 2, 192, false, 0},
                      {1, 1000, 1000, 2, 1, 128, true, 0}, {1, 300, 1000, 6, 1, 128, true, 16},
                      {1, 1000, 300, 8, 8, 192, true, 0},  {2, 257, 513, 16, 1, 128, false, 32},
                      {1, 513, 257, 4, 2, 192, false, 16}, {1, 129, 129, 16, 2, 192, true, 0}};
  for (const S& s : shapes) {
    Case c;
    c.batch = s.b, c.sq = s.sq, c.sk = s.sk, c.h = s.h, c.hk = s.hk, c.dqk = s.dqk, c.causal = s.causal, c.pad = s.pad;
    c.lse = s.pad == 0;
    double fro = 0;
    // S differs from the specification's by summation order only: codes may flip where y is within that
    // difference of a rounding boundary (rare); bound per element 2^-5 of the largest |v| (a flip at the largest P
    // changes the output by at most P/8). P.V: FP8 wgmma keeps ~14 bits of each k32 step's products aligned to the
    // largest, so columns whose sum cancels lose relative accuracy (the specification sums exactly in fp32).
    check(c, run(c), 1.0 / 64, 7.0 / 32, kLseTolRandom, &fro);
    CHECK(fro < kFroTol);
  }
}

TEST_CASE("NaN codes in q or k make exactly the rows they reach NaN (out and lse), both P modes") {
  for (auto mode : {zyfa::fp8::sm90::PMode::lean_p, zyfa::fp8::sm90::PMode::exp2})
    for (bool causal : {false, true}) {
      Case c;
      c.sq = 200;
      c.sk = 200;
      c.causal = causal;
      c.mode = mode;
      c.nan_q_row = 17;
      c.nan_k_key = 150;  // causal: seen by rows >= 150 only
      const Result r = run(c);
      size_t spec_nan = 0;
      for (float x : r.spec.out_f32) spec_nan += std::isnan(x);
      CHECK(spec_nan > 0);
      check(c, r, 1.0 / 64, 7.0 / 32, kLseTolRandom);
    }
}

TEST_CASE("rows that see no key: out exactly 0, lse -inf") {
  Case c;
  c.sq = 300;
  c.sk = 100;
  c.causal = true;
  const Result r = run(c);
  check(c, r, 1.0 / 64, 7.0 / 32, kLseTolRandom);
  size_t nonzero = 0;
  for (int s = 0; s < 200; ++s)
    for (int hh = 0; hh < c.h; ++hh)
      for (int d = 0; d < c.dv; ++d) nonzero += r.out[(static_cast<size_t>(s) * c.h + hh) * r.slot_o + d] != 0;
  CHECK(nonzero == 0);
}

TEST_CASE("NaN codes in V/K at keys a row must not see never reach it") {
  // Poisoned run against the clean run on the same inputs: every row that sees no poisoned key is bitwise equal;
  // causal: the last row sees the last key's NaN V columns (NaN there, bitwise equal elsewhere).
  for (bool causal : {false, true})
    for (int sk : {150, 200, 256}) {
      Case c;
      c.sq = 200;
      c.sk = sk;
      c.causal = causal;
      const std::mt19937 saved = rng();
      const Result clean = run(c);
      rng() = saved;
      c.poison = true;
      const Result dirty = run(c);
      size_t differ = 0, want_nan_missing = 0;
      for (int s = 0; s < c.sq; ++s)
        for (int hh = 0; hh < c.h; ++hh)
          for (int d = 0; d < c.dv; ++d) {
            const size_t i = (static_cast<size_t>(s) * c.h + hh) * clean.slot_o + d;
            const bool sees_nan = causal && s == c.sq - 1 && d % 2 == 0;
            if (sees_nan)
              want_nan_missing += !std::isnan(zyfa::bf16_to_float(dirty.out[i]));
            else
              differ += clean.out[i] != dirty.out[i];
          }
      MESSAGE("poison causal=" << causal << " sk=" << sk << ": differing " << differ << ", NaN missing "
                               << want_nan_missing);
      CHECK(differ == 0);
      CHECK(want_nan_missing == 0);
    }
}

TEST_CASE("long context: V == 1 gives exactly 1.0 (seqlen_k 32,768; one strong key and a long tail)") {
  for (Inputs in : {Inputs::v_ones, Inputs::strong_tail}) {
    Case c;
    c.sq = 256;
    c.sk = 32768;
    c.h = 1;
    c.hk = 1;
    c.causal = true;
    c.inputs = in;
    const Result r = run(c);
    size_t not_one = 0;
    for (size_t i = 0; i < r.out.size(); ++i) not_one += r.out[i] != 0x3F80;  // bf16 1.0
    MESSAGE("inputs " << static_cast<int>(in) << ": elements != 1.0: " << not_one << " / " << r.out.size());
    CHECK(not_one == 0);
  }
}

TEST_CASE("2.2 million keys, all logits equal, V == 448: every output 448 (the scaled accumulator does not overflow)") {
  // q = 0: every logit is 0, every visible key gets the block max code; V = 448 (e4m3fn 0x7E) everywhere, so every
  // output is 448 within the accumulation's rounding. seqlen_q 128 (one tile), bottom-right causal: the first 64 rows'
  // last key tile is fully masked, the case that once moved the accumulator's scale to 2^98 and overflowed to inf
  // beyond about 2.1 million keys.
  const int sq = 128, sk = 2200000, d = 128;
  DeviceBuffer dq(static_cast<size_t>(sq) * d), dk(static_cast<size_t>(sk) * d), dv(static_cast<size_t>(sk) * d),
      dout(static_cast<size_t>(sq) * d * 2);
  CUDA_OK(cudaMemset(dq.p, 0x00, static_cast<size_t>(sq) * d));
  CUDA_OK(cudaMemset(dk.p, 0x00, static_cast<size_t>(sk) * d));
  CUDA_OK(cudaMemset(dv.p, 0x7E, static_cast<size_t>(sk) * d));
  CUDA_OK(cudaMemset(dout.p, 0xFF, static_cast<size_t>(sq) * d * 2));
  using zyfa::TensorRef;
  const TensorRef q = TensorRef::contiguous(dq.p, zyfa::DType::e4m3fn, 1, sq, 1, d);
  const TensorRef k = TensorRef::contiguous(dk.p, zyfa::DType::e4m3fn, 1, sk, 1, d);
  const TensorRef v = TensorRef::contiguous(dv.p, zyfa::DType::e4m3fn, 1, sk, 1, d);
  const TensorRef o = TensorRef::contiguous(dout.p, zyfa::DType::bf16, 1, sq, 1, d);
  for (bool causal : {true, false}) {
    zyfa::AttentionOptions opt;
    opt.causal = causal;
    const zyfa::Status st = zyfa::flash_attn_func(q, k, v, o, nullptr, opt, nullptr);
    REQUIRE_MESSAGE(st.ok(), st.message);
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<std::uint16_t> out(static_cast<size_t>(sq) * d);
    CUDA_OK(cudaMemcpy(out.data(), dout.p, out.size() * 2, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (std::uint16_t x : out) bad += !(std::fabs(zyfa::bf16_to_float(x) - 448.0f) <= 2.0f);  // bf16 ulp at 448
    MESSAGE("causal " << causal << ": outputs not within one bf16 ulp of 448: " << bad << " / " << out.size()
                      << " (first: " << zyfa::bf16_to_float(out[0]) << ")");
    CHECK(bad == 0);
  }
}

TEST_CASE("the exp2 ablation (PMode::exp2) against the zyfa_exact recipe") {
  for (int dqk : {128, 192})
    for (bool causal : {false, true}) {
      Case c;
      c.dqk = dqk;
      c.causal = causal;
      c.sq = 300;
      c.sk = 700;
      c.mode = zyfa::fp8::sm90::PMode::exp2;
      double fro = 0;
      // ex2.approx before the e4m3 rounding may flip a code at a rounding boundary (~2 ulp of fp32)
      check(c, run(c), 1.0 / 64, 7.0 / 32, kLseTolRandom, &fro);
      CHECK(fro < kFroTol);
    }
}

TEST_CASE("causal calls with at least one m-block pair per SM: the balanced pairs order (arch/sm90_work_order.hpp)") {
  // 16 heads of 17 m blocks = 136 pairs (8 per head, and the middle blocks of two heads each) >= 132 SMs of an
  // H100/H200.
  Case c;
  c.sq = c.sk = 2100;
  c.h = 16;
  c.hk = 4;
  c.causal = true;
  c.repeats = 3;
  double fro = 0;
  const Result r = run(c);
  CHECK(r.identical);
  check(c, r, 1.0 / 64, 7.0 / 32, kLseTolRandom, &fro);
  CHECK(fro < kFroTol);
  c.dqk = 192;  // bottom-right offset: unequal pairs
  c.sk = 2600;
  c.repeats = 1;
  check(c, run(c), 1.0 / 64, 7.0 / 32, kLseTolRandom, &fro);
  CHECK(fro < kFroTol);
}

TEST_CASE("causal calls whose pairs leave more than half the SMs a last pair: the dealt tail") {
  // 42 heads of 18 m blocks = 378 pairs: 2 rounds of 132 and 114 more (> 66), so the last round and those pairs go
  // out as single m blocks, heaviest first (arch/sm90_work_order.hpp, PairTail::dealt).
  Case c;
  c.sq = c.sk = 2200;
  c.h = 42;
  c.hk = 7;
  c.causal = true;
  c.repeats = 3;
  double fro = 0;
  const Result r = run(c);
  CHECK(r.identical);
  check(c, r, 1.0 / 64, 7.0 / 32, kLseTolRandom, &fro);
  CHECK(fro < kFroTol);
}

TEST_CASE("100 repeated runs are bitwise identical (out and lse)") {
  Case c;
  c.sq = 1000;
  c.sk = 1000;
  c.h = 4;
  c.hk = 2;
  c.causal = true;
  c.repeats = 100;
  const Result r = run(c);
  CHECK(r.identical);
}

TEST_CASE("errors are returned, not crashes") {
  std::vector<std::uint8_t> dummy(16);
  DeviceBuffer d(1 << 20);
  using zyfa::TensorRef;
  zyfa::AttentionOptions opt;
  auto t = [&](zyfa::DType dt, int s, int h, int dim) { return TensorRef::contiguous(d.p, dt, 1, s, h, dim); };
  DeviceBuffer o(1 << 20);
  auto out = [&](int s, int h, int dim) { return TensorRef::contiguous(o.p, zyfa::DType::bf16, 1, s, h, dim); };
  zyfa::Status s = zyfa::flash_attn_func(t(zyfa::DType::e4m3fn, 16, 1, 64), t(zyfa::DType::e4m3fn, 16, 1, 64),
                                         t(zyfa::DType::e4m3fn, 16, 1, 64), out(16, 1, 64), nullptr, opt, nullptr);
  CHECK(s.code == zyfa::StatusCode::unsupported);
  CHECK(s.message.find("head_dim") != std::string::npos);
  MESSAGE("head_dim 64: " << s.message);
  s = zyfa::flash_attn_func(t(zyfa::DType::e4m3fnuz, 16, 1, 128), t(zyfa::DType::e4m3fnuz, 16, 1, 128),
                            t(zyfa::DType::e4m3fnuz, 16, 1, 128), out(16, 1, 128), nullptr, opt, nullptr);
  CHECK(!s.ok());
  CHECK(s.message.rfind("q:", 0) == 0);
  MESSAGE("e4m3fnuz: " << s.message);
  TensorRef q = t(zyfa::DType::e4m3fn, 16, 1, 128);
  q.stride[1] = 136;  // not a multiple of 16 bytes
  q.stride[0] = 16 * 136;
  s = zyfa::flash_attn_func(q, t(zyfa::DType::e4m3fn, 16, 1, 128), t(zyfa::DType::e4m3fn, 16, 1, 128), out(16, 1, 128),
                            nullptr, opt, nullptr);
  CHECK(!s.ok());
  CHECK(s.message.rfind("q:", 0) == 0);
  MESSAGE("unaligned stride: " << s.message);
}

}  // namespace
