// tests/gpu/test_flash_attn.cu -- GPU tests of zyfa::flash_attn_func (BF16) against the fp64 reference.
//
// Run on a machine with an NVIDIA GPU (bench/run_h200.sh builds and runs it on a GPU machine):
//   nvcc -std=c++17 -O2 -gencode=arch=compute_90a,code=sm_90a -Iinclude -I<dir with doctest/doctest.h> \
//        tests/gpu/test_flash_attn.cu -o test_flash_attn && ./test_flash_attn
// Test cases whose name starts with "small" are the subset run under compute-sanitizer (-tc='small*').
//
// Every case draws fresh random bf16 inputs (normal, sigma 1), poisons out and softmax_lse with NaN before the
// call, and checks EVERY element: |out - ref| <= kTolScale * A + kAtol with A = sum_j p_j |v_j| (per element,
// from the fp64 reference), and |lse - ref_lse| <= kLseAtol, where ref is fp64 attention on the same bf16
// inputs. Rows that see no key must give out == 0 exactly and lse == -inf.
// Tolerance derivation: the kernel rounds each probability to bf16 before P.V (relative error <= 2^-9, so the
// output moves by <= 2^-9 * A) and rounds the output to bf16 (<= 2^-9 * |out| <= 2^-9 * A); fp32 scores,
// ex2.approx and fp32 accumulation add ~1e-6 relative. Bound 2^-8 * A; kTolScale = 2^-7 gives a 2x margin.
// LSE is computed in fp32 from fp32 scores: kLseAtol = 2e-3.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <zyfa/bf16/sm90/launch_ws.hpp>
#include <zyfa/flash_attn.hpp>
#include <zyfa/head_dims.hpp>
#include <zyfa/host/reference.hpp>
#include <zyfa/numeric/bf16.hpp>
#include <zyfa/validate.hpp>

#include "reference.hpp"

namespace {

constexpr double kTolScale = 1.0 / 128, kAtol = 1e-5, kLseAtol = 2e-3;

#define CUDA_OK(x)                                                                  \
  do {                                                                              \
    cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) FAIL((std::string(#x) + ": " + cudaGetErrorString(e_))); \
  } while (0)

std::mt19937_64& rng() {
  static std::mt19937_64 g(std::random_device{}());
  return g;
}

struct Case {
  int batch = 1, seqlen_q = 128, seqlen_k = 128, heads = 4, heads_k = 4, dqk = 128, dv = 128;
  bool causal = false;
  bool with_lse = true;
  int pad = 0;  ///< extra elements per (row, head) slot: strided, non-contiguous views
  bool packed_qkv =
      false;  ///< q, k, v as slices of one [b, s, 3, h, d] tensor (needs seqlen_q == seqlen_k, equal dims)
  /// Real activations instead of random inputs: path prefix of <prefix>_{q,k,v}.npy (bf16 bits '<u2', BSHD,
  /// C order, shapes as this case's; bench/run_h200.sh unpacks data/activations/*/*.npy.gz to build-gpu/).
  const char* activations = nullptr;
  /// Keys whose K and V are poisoned with Inf/NaN (V: +Inf, NaN, -Inf in turn in two head-dim columns; K: NaN in
  /// one column for every other key): rows that do not see them must be unaffected.
  std::vector<int> poison_keys;
  /// >= 0: poison_keys only in this K/V head (every batch); -1: in every head.
  int poison_head_k = -1;
  /// > 0: K and V are views of seqlen_k rows into buffers of seqlen_k + poison_tail rows per batch; the extra rows
  /// (keys past seqlen_k, inside the last key tile) are NaN and must never be read into a result.
  int poison_tail = 0;
  /// Inputs built for O's fp32 headroom under lazy rescaling (ZYFA_SM90_RESCALE_THRESHOLD = T, log2 units,
  /// bf16/sm90/config_ws.hpp) instead of random ones: every query is e_0; the first and the last 128 keys (the tile
  /// a row visits first whichever way the key tiles are walked) are 0, every other key c * e_0 with the bf16 c whose
  /// log2-domain logit is closest to T + headroom_logit_over; V is positive, [0.975, 1) * 0.75 * FLT_MAX /
  /// (2^T * seqlen_k), inside the documented bound seqlen_k * max|v| * 2^T < FLT_MAX. Over -0.1: a kernel keeps the
  /// first tile's max and adds P = 2^(T - 0.1) per key, 0.55 * FLT_MAX in all at 1,280 keys, which must stay
  /// finite. Over +1: the max must move (P <= 1); a kernel that kept it past its threshold would add 2^(T + 1) per
  /// key, 1.17 * FLT_MAX in all, and overflow.
  bool headroom = false;
  float headroom_logit_over = -0.1f;
  /// nullptr: zyfa::flash_attn_func; else make_params + this launcher (a custom KernelConfig).
  zyfa::Status (*launcher)(const zyfa::AttentionParams&, zyfa::rt::stream_t) = nullptr;
};

zyfa::Status call(const Case& c, const zyfa::TensorRef& q, const zyfa::TensorRef& k, const zyfa::TensorRef& v,
                  const zyfa::TensorRef& out, float* lse, const zyfa::AttentionOptions& opt) {
  if (c.launcher == nullptr) return zyfa::flash_attn_func(q, k, v, out, lse, opt, nullptr);
  zyfa::AttentionParams p;
  if (zyfa::Status s = zyfa::make_params(q, k, v, out, lse, opt, &p); !s) return s;
  return c.launcher(p, nullptr);
}

std::string describe(const Case& c) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "b=%d sq=%d sk=%d h=%d hk=%d d=(%d,%d) causal=%d lse=%d pad=%d packed=%d%s%s", c.batch,
                c.seqlen_q, c.seqlen_k, c.heads, c.heads_k, c.dqk, c.dv, c.causal, c.with_lse, c.pad, c.packed_qkv,
                c.activations ? " real=" : "", c.activations ? c.activations : "");
  return buf;
}

struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(size_t bytes) { REQUIRE(cudaMalloc(&p, bytes) == cudaSuccess); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

struct Tensors {
  // host copies (full allocations) and views
  std::vector<std::uint16_t> hq, hk, hv;
  zyfa_test::HostView vq{}, vk{}, vv{};
  zyfa::TensorRef q, k, v, out;
  std::int64_t out_elems = 0, lse_elems = 0;
};

/// Reads a C-order '<u2' .npy file (format 1.0/2.0) and checks its element count.
std::vector<std::uint16_t> read_npy_u16(const std::string& path, size_t expect_elems) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  REQUIRE_MESSAGE(f != nullptr, "cannot open " << path << " (run bench/run_h200.sh, which unpacks it)");
  unsigned char magic[8];
  REQUIRE(std::fread(magic, 1, 8, f) == 8);
  REQUIRE(std::memcmp(magic, "\x93NUMPY", 6) == 0);
  std::uint32_t hlen = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    REQUIRE(std::fread(b, 1, 2, f) == 2);
    hlen = b[0] | (b[1] << 8);
  } else {
    unsigned char b[4];
    REQUIRE(std::fread(b, 1, 4, f) == 4);
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::uint32_t>(b[3]) << 24);
  }
  std::string header(hlen, ' ');
  REQUIRE(std::fread(&header[0], 1, hlen, f) == hlen);
  REQUIRE_MESSAGE(header.find("'<u2'") != std::string::npos, path << ": dtype must be <u2 (bf16 bits)");
  REQUIRE_MESSAGE(header.find("'fortran_order': False") != std::string::npos, path << ": must be C order");
  std::vector<std::uint16_t> data(expect_elems);
  REQUIRE_MESSAGE(std::fread(data.data(), 2, expect_elems, f) == expect_elems, path << ": too few elements");
  unsigned char extra;
  REQUIRE_MESSAGE(std::fread(&extra, 1, 1, f) == 0, path << ": more elements than the case's shape");
  std::fclose(f);
  return data;
}

std::vector<std::uint16_t> random_bf16(size_t n) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<std::uint16_t> x(n);
  for (auto& e : x) e = zyfa_test::float_to_bf16(nd(rng()));
  return x;
}

/// Runs one case: returns the number of failing elements (and prints the worst).
int run_case(const Case& c, int repeats_bitwise = 0) {
  INFO(describe(c));
  const int b = c.batch, sq = c.seqlen_q, sk = c.seqlen_k, h = c.heads, hk = c.heads_k, dqk = c.dqk, dv = c.dv;
  // Layouts (elements). Either separate tensors with per-slot padding, or one packed [b, s, 3, h, d].
  std::int64_t q_rs, q_hs, q_bs, k_rs, k_hs, k_bs, v_rs, v_hs, v_bs;
  size_t q_n, k_n, v_n;
  std::vector<std::uint16_t> host_all;
  std::int64_t k_off = 0, v_off = 0;
  if (c.packed_qkv) {
    REQUIRE((sq == sk && h == hk && dqk == dv));
    q_hs = k_hs = v_hs = dqk;
    q_rs = k_rs = v_rs = 3LL * h * dqk;
    q_bs = k_bs = v_bs = q_rs * sq;
    q_n = static_cast<size_t>(q_bs) * b;
    k_n = v_n = 0;
    k_off = static_cast<std::int64_t>(h) * dqk;
    v_off = 2LL * h * dqk;
  } else {
    q_hs = dqk + c.pad;
    q_rs = q_hs * h + c.pad;
    q_bs = q_rs * sq + c.pad;
    k_hs = dqk + c.pad;
    k_rs = k_hs * hk + c.pad;
    k_bs = k_rs * (sk + c.poison_tail) + c.pad;
    v_hs = dv + c.pad;
    v_rs = v_hs * hk + c.pad;
    v_bs = v_rs * (sk + c.poison_tail) + c.pad;
    q_n = static_cast<size_t>(q_bs) * b;
    k_n = static_cast<size_t>(k_bs) * b;
    v_n = static_cast<size_t>(v_bs) * b;
  }
  const size_t total = q_n + k_n + v_n;
  if (c.activations != nullptr) {
    REQUIRE((!c.packed_qkv && c.pad == 0));
    const std::string pre = c.activations;
    host_all = read_npy_u16(pre + "_q.npy", q_n);
    const auto hk_ = read_npy_u16(pre + "_k.npy", k_n), hv_ = read_npy_u16(pre + "_v.npy", v_n);
    host_all.insert(host_all.end(), hk_.begin(), hk_.end());
    host_all.insert(host_all.end(), hv_.begin(), hv_.end());
  } else {
    host_all = random_bf16(total);
  }
  if (!c.packed_qkv) {
    k_off = static_cast<std::int64_t>(q_n);
    v_off = static_cast<std::int64_t>(q_n + k_n);
  }
  if (c.headroom) {
    REQUIRE((!c.packed_qkv && sk > 256));
    const double log2e = 1.4426950408889634, scale_log2 = log2e / std::sqrt(static_cast<double>(dqk));
    const double t = static_cast<double>(ZYFA_SM90_RESCALE_THRESHOLD), target = t + c.headroom_logit_over;
    const std::uint16_t c_bits = zyfa_test::float_to_bf16(static_cast<float>(target / scale_log2));
    const double logit = zyfa_test::bf16_to_double(c_bits) * scale_log2;
    REQUIRE(std::fabs(logit - target) < 0.05);  // the bf16 rounding of c moves the logit by < 2^-8 relative
    const double v_max = 0.75 * FLT_MAX / (std::exp2(t) * sk);
    std::uniform_real_distribution<double> ud(0.975 * v_max, v_max);
    for (int bb = 0; bb < b; ++bb) {
      for (int s = 0; s < sq; ++s)
        for (int hh = 0; hh < h; ++hh)
          for (int d = 0; d < dqk; ++d) host_all[bb * q_bs + s * q_rs + hh * q_hs + d] = d == 0 ? 0x3F80 : 0;
      for (int j = 0; j < sk; ++j) {
        const bool low = j < 128 || j >= sk - 128;
        for (int hh = 0; hh < hk; ++hh) {
          for (int d = 0; d < dqk; ++d)
            host_all[k_off + bb * k_bs + j * k_rs + hh * k_hs + d] = (d == 0 && !low) ? c_bits : 0;
          for (int d = 0; d < dv; ++d)
            host_all[v_off + bb * v_bs + j * v_rs + hh * v_hs + d] =
                zyfa_test::float_to_bf16(static_cast<float>(ud(rng())));
        }
      }
    }
  }

  {  // poison: keys a row may not see, and rows past seqlen_k
    const std::uint16_t kPosInf = 0x7F80, kNegInf = 0xFF80, kNaN = 0x7FC0;
    const std::uint16_t vpoison[3] = {kPosInf, kNaN, kNegInf};
    for (int bb = 0; bb < b; ++bb)
      for (int hh = 0; hh < hk; ++hh) {
        const bool poisoned_head = c.poison_head_k < 0 || hh == c.poison_head_k;
        for (size_t pi = 0; poisoned_head && pi < c.poison_keys.size(); ++pi) {
          const std::int64_t j = c.poison_keys[pi];
          std::uint16_t* vr = &host_all[v_off + bb * v_bs + j * v_rs + hh * v_hs];
          vr[pi % dv] = vpoison[pi % 3];
          vr[(pi + 7) % dv] = kNaN;
          if (pi % 2 == 0) host_all[k_off + bb * k_bs + j * k_rs + hh * k_hs + 3] = kNaN;
        }
        for (int j = sk; j < sk + c.poison_tail; ++j) {
          for (int d = 0; d < dqk; ++d) host_all[k_off + bb * k_bs + j * k_rs + hh * k_hs + d] = kNaN;
          for (int d = 0; d < dv; ++d) host_all[v_off + bb * v_bs + j * v_rs + hh * v_hs + d] = kNaN;
        }
      }
  }
  DeviceBuffer d_in(total * 2);
  CUDA_OK(cudaMemcpy(d_in.p, host_all.data(), total * 2, cudaMemcpyHostToDevice));
  auto* base = static_cast<std::uint16_t*>(d_in.p);

  const size_t out_n = static_cast<size_t>(b) * sq * h * dv, lse_n = static_cast<size_t>(b) * h * sq;
  DeviceBuffer d_out(out_n * 2), d_lse(lse_n * 4);

  zyfa::TensorRef q, k, v, out;
  auto set = [](zyfa::TensorRef& t, void* p, int B, int S, int H, int D, std::int64_t bs, std::int64_t rs,
                std::int64_t hs) {
    t.data = p;
    t.dtype = zyfa::DType::bf16;
    t.shape[0] = B;
    t.shape[1] = S;
    t.shape[2] = H;
    t.shape[3] = D;
    t.stride[0] = bs;
    t.stride[1] = rs;
    t.stride[2] = hs;
    t.stride[3] = 1;
  };
  set(q, base, b, sq, h, dqk, q_bs, q_rs, q_hs);
  set(k, base + k_off, b, sk, hk, dqk, k_bs, k_rs, k_hs);
  set(v, base + v_off, b, sk, hk, dv, v_bs, v_rs, v_hs);
  out = zyfa::TensorRef::contiguous(d_out.p, zyfa::DType::bf16, b, sq, h, dv);
  zyfa::AttentionOptions opt;
  opt.causal = c.causal;
  float* lse = c.with_lse ? static_cast<float*>(d_lse.p) : nullptr;

  // Poison: bf16 NaN (0x7FC0 pairs) and fp32 NaN.
  CUDA_OK(cudaMemset(d_out.p, 0x7F, out_n * 2));
  CUDA_OK(cudaMemset(d_lse.p, 0xFF, lse_n * 4));
  zyfa::Status st = call(c, q, k, v, out, lse, opt);
  REQUIRE_MESSAGE(st.ok(), st.message);
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<std::uint16_t> h_out(out_n);
  std::vector<float> h_lse(lse_n);
  CUDA_OK(cudaMemcpy(h_out.data(), d_out.p, out_n * 2, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(h_lse.data(), d_lse.p, lse_n * 4, cudaMemcpyDeviceToHost));

  // Reference on the same bf16 values.
  std::vector<double> ref, ref_lse, ref_abs;
  const zyfa_test::HostView vq{host_all.data(), q_bs, q_rs, q_hs};
  const zyfa_test::HostView vk{host_all.data() + k_off, k_bs, k_rs, k_hs};
  const zyfa_test::HostView vv{host_all.data() + v_off, v_bs, v_rs, v_hs};
  zyfa_test::reference_attention(vq, vk, vv, b, sq, sk, h, hk, dqk, dv, 1.0 / std::sqrt(static_cast<double>(dqk)),
                                 c.causal, ref, ref_lse, ref_abs);
  int bad = 0;
  double worst = 0, max_abs = 0;
  size_t worst_i = 0;
  for (size_t i = 0; i < out_n; ++i) {
    const double got = zyfa_test::bf16_to_double(h_out[i]);
    const size_t row = i / dv;  // (b, s, h) flattened
    const int bb = static_cast<int>(row / (static_cast<size_t>(sq) * h));
    const int s = static_cast<int>((row / h) % sq);
    const int hh = static_cast<int>(row % h);
    const bool empty = std::isinf(ref_lse[(static_cast<size_t>(bb) * h + hh) * sq + s]);
    const double err = std::isfinite(ref[i]) ? std::fabs(got - ref[i]) : 0.0;
    const double tol = kAtol + kTolScale * ref_abs[i];
    // A row that sees an Inf/NaN key (poison tests) is non-finite in the reference: the kernel must give NaN
    // there, or the same infinity.
    const bool ref_finite = std::isfinite(ref[i]);
    const bool nonfinite_ok = std::isnan(ref[i]) ? std::isnan(got) : got == ref[i];
    const bool ok = empty ? (h_out[i] == 0) : ref_finite ? (std::isfinite(got) && err <= tol) : nonfinite_ok;
    if (!ok) ++bad;
    if (empty || !ref_finite) continue;  // checked above; no error ratio to report
    if (!(err <= max_abs)) max_abs = err;
    const double ratio = err / tol;
    if (!(ratio <= worst)) {
      worst = ratio;
      worst_i = i;
    }
  }
  int bad_lse = 0;
  double max_lse = 0;
  if (c.with_lse) {
    for (size_t i = 0; i < lse_n; ++i) {
      const bool empty = std::isinf(ref_lse[i]);
      const bool ok = std::isnan(ref_lse[i]) ? std::isnan(h_lse[i])
                      : empty                ? (std::isinf(h_lse[i]) && h_lse[i] < 0)
                                             : (std::fabs(h_lse[i] - ref_lse[i]) <= kLseAtol);
      if (!ok) ++bad_lse;
      if (std::isfinite(ref_lse[i]) && !(std::fabs(h_lse[i] - ref_lse[i]) <= max_lse))
        max_lse = std::fabs(h_lse[i] - ref_lse[i]);
    }
  }
  std::printf("case %-80s max|err| %.3g (worst %.2f of tol at %zu)  max|lse err| %.3g  bad %d/%zu lse-bad %d\n",
              describe(c).c_str(), max_abs, worst, worst_i, max_lse, bad, out_n, bad_lse);
  CHECK(bad == 0);
  CHECK(bad_lse == 0);

  // Determinism: the same inputs `repeats_bitwise` more times, bitwise identical out and lse.
  int differ = 0;
  for (int r = 0; r < repeats_bitwise; ++r) {
    CUDA_OK(cudaMemset(d_out.p, 0x7F, out_n * 2));
    CUDA_OK(cudaMemset(d_lse.p, 0xFF, lse_n * 4));
    st = call(c, q, k, v, out, lse, opt);
    REQUIRE(st.ok());
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<std::uint16_t> o2(out_n);
    std::vector<float> l2(lse_n);
    CUDA_OK(cudaMemcpy(o2.data(), d_out.p, out_n * 2, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(l2.data(), d_lse.p, lse_n * 4, cudaMemcpyDeviceToHost));
    if (std::memcmp(o2.data(), h_out.data(), out_n * 2) != 0) ++differ;
    if (c.with_lse && std::memcmp(l2.data(), h_lse.data(), lse_n * 4) != 0) ++differ;
  }
  if (repeats_bitwise > 0) std::printf("  %d repeated runs: %d differ bitwise\n", repeats_bitwise, differ);
  CHECK(differ == 0);
  return bad + bad_lse;
}

// THE built-in list (include/zyfa/head_dims.hpp).
#define ZYFA_TEST_HEAD_DIMS_(QK, V) {QK, V},
const int kHeadDims[][2] = {ZYFA_BUILTIN_HEAD_DIMS(ZYFA_TEST_HEAD_DIMS_)};
#undef ZYFA_TEST_HEAD_DIMS_

}  // namespace

TEST_CASE("small: built-in head dims, causal and not, tails") {
  for (auto& hd : kHeadDims)
    for (bool causal : {false, true}) {
      Case c;
      c.batch = 1;
      c.heads = 2;
      c.heads_k = 1;
      c.seqlen_q = 65;
      c.seqlen_k = 65;
      c.dqk = hd[0];
      c.dv = hd[1];
      c.causal = causal;
      run_case(c);
    }
}

TEST_CASE("small: causal seqlen_q > seqlen_k (rows that see no key)") {
  Case c;
  c.heads = 2;
  c.heads_k = 2;
  c.seqlen_q = 150;
  c.seqlen_k = 17;
  c.causal = true;
  run_case(c);
}

TEST_CASE("every built-in shape, causal and non-causal, GQA, random inputs") {
  for (auto& hd : kHeadDims)
    for (bool causal : {false, true}) {
      Case c;
      c.batch = 2;
      c.heads = 4;
      c.heads_k = 2;
      c.seqlen_q = 1000;
      c.seqlen_k = 1000;
      c.dqk = hd[0];
      c.dv = hd[1];
      c.causal = causal;
      run_case(c);
    }
}

TEST_CASE("lengths 1, 17, 63, 65, 129, 1000 (square and mixed), causal and not") {
  const int lens[] = {1, 17, 63, 65, 129, 1000};
  for (int sq : lens)
    for (int sk : {1, 17, 65, 129, 1000}) {
      if (sq * static_cast<long>(sk) > 200000 && sq != sk) continue;  // keep the fp64 reference short
      for (bool causal : {false, true}) {
        Case c;
        c.heads = 2;
        c.heads_k = 1;
        c.seqlen_q = sq;
        c.seqlen_k = sk;
        c.causal = causal;
        run_case(c);
      }
    }
}

TEST_CASE("causal seqlen_q < seqlen_k and seqlen_q > seqlen_k (also 8,192 and 8,197 keys), every head dim") {
  struct Shape {
    int seqlen_q, seqlen_k, heads_k;
  };
  // 8,192 / 8,197 keys: rows that see thousands of keys, with and without a tail tile.
  const Shape shapes[] = {{300, 129, 2}, {129, 300, 2}, {300, 8192, 1}, {300, 8197, 1}};
  for (auto& hd : kHeadDims)
    for (const Shape& sh : shapes) {
      Case c;
      c.heads = 2;
      c.heads_k = sh.heads_k;
      c.dqk = hd[0];
      c.dv = hd[1];
      c.causal = true;
      c.seqlen_q = sh.seqlen_q;
      c.seqlen_k = sh.seqlen_k;
      run_case(c);
    }
}

TEST_CASE("FlashAttention's own test shapes (the seqlen pairs of its tests), every head dim, causal and not, MHA/MQA") {
  // flash-attention tests/test_flash_attn.py, test_flash_attn_output's (seqlen_q, seqlen_k) list (2048 x 2048 left
  // out to keep the fp64 reference short; 1024 x 1024 covers full tiles)
  const int pairs[][2] = {{1, 147},   {113, 203}, {128, 217},   {113, 211},   {108, 256},
                          {256, 512}, {512, 256}, {1024, 1024}, {1023, 1024}, {1024, 1023}};
  int i = 0;
  for (auto& hd : kHeadDims)
    for (bool causal : {false, true})
      for (auto& sp : pairs) {
        Case c;
        c.dqk = hd[0];
        c.dv = hd[1];
        c.causal = causal;
        c.seqlen_q = sp[0];
        c.seqlen_k = sp[1];
        c.heads = 3;
        c.heads_k = (i++ % 2 == 0) ? 3 : 1;  // MHA and MQA in turn
        c.batch = sp[0] * sp[1] <= 65536 ? 2 : 1;
        run_case(c);
      }
}

TEST_CASE("GQA and MQA") {
  for (int hk : {1, 2, 8}) {
    Case c;
    c.heads = 8;
    c.heads_k = hk;
    c.seqlen_q = 257;
    c.seqlen_k = 300;
    c.causal = true;
    run_case(c);
    c.causal = false;
    c.dqk = 192;
    c.dv = 128;
    run_case(c);
  }
}

TEST_CASE("strided views: padded strides and a packed QKV tensor; no LSE") {
  Case c;
  c.batch = 2;
  c.heads = 3;
  c.heads_k = 3;
  c.seqlen_q = 200;
  c.seqlen_k = 200;
  c.pad = 8;
  c.causal = true;
  run_case(c);
  c.dqk = c.dv = 64;
  c.pad = 0;
  c.packed_qkv = true;
  run_case(c);
  c.with_lse = false;
  c.dqk = c.dv = 256;
  run_case(c);
}

TEST_CASE("many (batch x heads) blocks: grid beyond 65,535") {
  Case c;
  c.batch = 700;
  c.heads = 100;
  c.heads_k = 100;
  c.seqlen_q = 3;
  c.seqlen_k = 5;
  c.dqk = c.dv = 64;
  c.causal = true;
  run_case(c);
}

TEST_CASE("100 repeated runs are bitwise identical (out and lse)") {
  Case c;
  c.batch = 2;
  c.heads = 4;
  c.heads_k = 2;
  c.seqlen_q = 1000;
  c.seqlen_k = 1000;
  c.causal = true;
  run_case(c, 100);
}

TEST_CASE(
    "real activations: SmolLM2-135M layer 15 (hd64, GQA 9:3, 2048 tokens), Gemma 3 270M layer 11 (hd256, MQA 4:1)") {
  // data/activations/*/meta.json: causal, softmax_scale = 1/sqrt(head_dim) (the default) for both layers.
  Case c;
  c.causal = true;
  c.seqlen_q = c.seqlen_k = 2048;
  c.heads = 9;
  c.heads_k = 3;
  c.dqk = c.dv = 64;
  c.activations = "build-gpu/activations/smollm2-135m_layer15";
  run_case(c);
  c.seqlen_q = c.seqlen_k = 1024;
  c.heads = 4;
  c.heads_k = 1;
  c.dqk = c.dv = 256;
  c.activations = "build-gpu/activations/gemma3-270m_layer11";
  run_case(c);
}

TEST_CASE("small: custom head dims through bf16::launch<KernelConfig> (examples/custom_head_dim)") {
  for (bool causal : {false, true}) {
    Case c;
    c.heads = 4;
    c.heads_k = 2;
    c.seqlen_q = 100;
    c.seqlen_k = 130;
    c.dqk = c.dv = 96;
    c.causal = causal;
    c.launcher = &zyfa::bf16::launch<zyfa::bf16::KernelConfig<96, 96, 128, 64, 4>>;
    run_case(c);
    c.dqk = 160;
    c.dv = 64;
    c.launcher = &zyfa::bf16::launch<zyfa::bf16::KernelConfig<160, 64, 128, 64, 4>>;
    run_case(c);
  }
}

TEST_CASE("small: head dims that are not multiples of 32 (80, 96, 112: Phi and others) on padded tiles") {
  // The configurations of tests/gpu/builtin_kernels.hip (compiled without spills in CI).
  struct Custom {
    int d;
    zyfa::Status (*launcher)(const zyfa::AttentionParams&, zyfa::rt::stream_t);
  };
  const Custom customs[] = {{80, &zyfa::bf16::launch<zyfa::bf16::KernelConfig<80, 80, 128, 64, 4>>},
                            {96, &zyfa::bf16::launch<zyfa::bf16::KernelConfig<96, 96, 128, 64, 4>>},
                            {112, &zyfa::bf16::launch<zyfa::bf16::KernelConfig<112, 112, 128, 32, 4>>}};
  for (const Custom& cu : customs)
    for (bool causal : {false, true})
      for (int sq : {1, 65, 300}) {
        Case c;
        c.heads = 4;
        c.heads_k = 2;
        c.seqlen_q = sq;
        c.seqlen_k = 257;
        c.dqk = c.dv = cu.d;
        c.causal = causal;
        c.pad = 8;  // strided: the padding columns of the tile must come from zero-fill, not from the next head
        c.poison_tail = 7;
        c.launcher = cu.launcher;
        run_case(c);
      }
}

TEST_CASE("small: Inf/NaN in K and V at keys a row must not see never reach it (every head dim, causal tiles, tails)") {
  // Smallest case first: seqlen 2, causal, V[1] = +Inf: row 0 sees only key 0 and must give V[0] exactly (the
  // tolerance check, since p = 1); row 1 is non-finite exactly as the fp64 reference.
  for (auto& hd : kHeadDims) {
    Case c;
    c.heads = c.heads_k = 1;
    c.seqlen_q = c.seqlen_k = 2;
    c.dqk = hd[0];
    c.dv = hd[1];
    c.causal = true;
    c.poison_keys = {1};
    run_case(c);
    // NaN at key 100 must not reach rows 0..99 of the block; keys 100, 110 and 129 lie in the parts of their V tiles
    // that different producer warps scan (key % 16 = 4, 14, 1 for 128-key tiles)
    c.seqlen_q = c.seqlen_k = 130;
    c.poison_keys = {100, 110, 129};
    run_case(c);
    c.seqlen_q = 70;  // seqlen_q < seqlen_k, GQA, keys past seqlen_k poisoned too
    c.seqlen_k = 300;
    c.heads = 4;
    c.heads_k = 2;
    c.poison_keys = {250, 260, 299};
    c.poison_tail = 20;
    run_case(c);
    c.causal = false;  // non-causal: only the keys past seqlen_k are unseen
    c.poison_keys = {};
    run_case(c);
  }
}

TEST_CASE("Inf/NaN at keys of one head among many: only the CTAs that meet them compute their tiles again") {
  // The sm_90a kernel's first pass does not scan V; a CTA whose output comes out non-finite computes all of its
  // work tiles again, with the scan, and stores them over the first pass's. With one poisoned K/V head among eight,
  // batch 2 and 1,024 tokens, most CTAs never take the second pass and the others redo tiles of clean heads too:
  // every element of every head is checked against the reference (run_case).
  for (auto& hd : kHeadDims) {
    Case c;
    c.batch = 2;
    c.heads = c.heads_k = 8;
    c.seqlen_q = c.seqlen_k = 1024;
    c.dqk = hd[0];
    c.dv = hd[1];
    c.causal = true;
    c.poison_keys = {300, 517, 1000};
    c.poison_head_k = 5;
    run_case(c);
  }
}

TEST_CASE("small: every built-in head dim against the host executable specification (zyfa::host)") {
  // The same inputs through zyfa::host::reference_attention (include/zyfa/host/reference.hpp, fp64, the library's
  // own specification) and through the GPU kernel. Bound per element: |gpu - ref| <= 2^-7 * max_j |v_j| + 1e-5,
  // the tolerance of this file with A = sum_j p_j |v_j| replaced by its upper bound max_j |v_j|; lse <= kLseAtol.
  const int b = 1, sq = 200, sk = 300, h = 4, hk = 2;
  for (auto& hd : kHeadDims)
    for (bool causal : {false, true}) {
      const int dqk = hd[0], dv = hd[1];
      std::vector<std::uint16_t> hq(b * sq * h * dqk), hkk(b * sk * hk * dqk), hv(b * sk * hk * dv),
          hout(b * sq * h * dv);
      std::normal_distribution<float> nd;
      for (auto* t : {&hq, &hkk, &hv})
        for (auto& x : *t) x = zyfa::float_to_bf16(nd(rng()));
      double vmax = 0;
      for (auto x : hv) vmax = std::max(vmax, std::fabs(static_cast<double>(zyfa::bf16_to_float(x))));
      using zyfa::TensorRef;
      zyfa::AttentionOptions opt;
      opt.causal = causal;
      zyfa::AttentionParams hp;
      REQUIRE(zyfa::make_params(TensorRef::contiguous(hq.data(), zyfa::DType::bf16, b, sq, h, dqk),
                                TensorRef::contiguous(hkk.data(), zyfa::DType::bf16, b, sk, hk, dqk),
                                TensorRef::contiguous(hv.data(), zyfa::DType::bf16, b, sk, hk, dv),
                                TensorRef::contiguous(hout.data(), zyfa::DType::bf16, b, sq, h, dv), nullptr, opt, &hp)
                  .ok());
      zyfa::host::ReferenceOutput ref;
      REQUIRE(zyfa::host::reference_attention(hp, &ref).ok());

      DeviceBuffer dq(hq.size() * 2), dk(hkk.size() * 2), dvb(hv.size() * 2), dout(hout.size() * 2),
          dlse(b * h * sq * 4);
      CUDA_OK(cudaMemcpy(dq.p, hq.data(), hq.size() * 2, cudaMemcpyHostToDevice));
      CUDA_OK(cudaMemcpy(dk.p, hkk.data(), hkk.size() * 2, cudaMemcpyHostToDevice));
      CUDA_OK(cudaMemcpy(dvb.p, hv.data(), hv.size() * 2, cudaMemcpyHostToDevice));
      CUDA_OK(cudaMemset(dout.p, 0xFF, hout.size() * 2));  // NaN poison
      CUDA_OK(cudaMemset(dlse.p, 0xFF, b * h * sq * 4));
      const zyfa::Status st = zyfa::flash_attn_func(TensorRef::contiguous(dq.p, zyfa::DType::bf16, b, sq, h, dqk),
                                                    TensorRef::contiguous(dk.p, zyfa::DType::bf16, b, sk, hk, dqk),
                                                    TensorRef::contiguous(dvb.p, zyfa::DType::bf16, b, sk, hk, dv),
                                                    TensorRef::contiguous(dout.p, zyfa::DType::bf16, b, sq, h, dv),
                                                    static_cast<float*>(dlse.p), opt, nullptr);
      REQUIRE_MESSAGE(st.ok(), st.message);
      std::vector<float> hl(b * h * sq);
      CUDA_OK(cudaMemcpy(hout.data(), dout.p, hout.size() * 2, cudaMemcpyDeviceToHost));
      CUDA_OK(cudaMemcpy(hl.data(), dlse.p, hl.size() * 4, cudaMemcpyDeviceToHost));
      const double tol = vmax / 128 + 1e-5;
      std::size_t bad = 0, bad_lse = 0;
      double worst = 0;
      for (std::size_t i = 0; i < hout.size(); ++i) {
        const double got = zyfa::bf16_to_float(hout[i]), err = std::fabs(got - ref.out[i]);
        if (!(err <= tol)) ++bad;  // NaN fails
        worst = std::max(worst, err);
      }
      for (std::size_t i = 0; i < hl.size(); ++i) {
        const double r = ref.lse[i], g = hl[i];
        const bool ok = std::isinf(r) ? (std::isinf(g) && g < 0) : std::fabs(g - r) <= kLseAtol;
        if (!ok) ++bad_lse;
      }
      MESSAGE("host spec d=(" << dqk << "," << dv << ") causal=" << causal << ": max|err| " << worst << " (tol " << tol
                              << "), bad " << bad << "/" << hout.size() << ", lse bad " << bad_lse);
      CHECK(bad == 0);
      CHECK(bad_lse == 0);
    }
}

TEST_CASE("small: NaN inputs give NaN rows, never zeros or finite garbage") {
  // causal, seqlen 100, one head, hd 128: a NaN in k at key 40 poisons exactly rows 40..99 (the rows that see
  // it); a NaN in q at row 7 poisons exactly row 7. Every other row stays finite. LSE follows the same rows.
  const int s = 100, d = 128;
  for (int which = 0; which < 2; ++which) {
    std::vector<std::uint16_t> hq(s * d), hk(s * d), hv(s * d);
    std::normal_distribution<float> nd;
    for (auto* t : {&hq, &hk, &hv})
      for (auto& x : *t) x = zyfa::float_to_bf16(nd(rng()));
    const std::uint16_t nan_bits = 0x7FC0;
    if (which == 0)
      hk[40 * d + 5] = nan_bits;
    else
      hq[7 * d + 9] = nan_bits;
    DeviceBuffer dq(s * d * 2), dk(s * d * 2), dv(s * d * 2), dout(s * d * 2), dlse(s * 4);
    CUDA_OK(cudaMemcpy(dq.p, hq.data(), s * d * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dk.p, hk.data(), s * d * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dv.p, hv.data(), s * d * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(dout.p, 0, s * d * 2));  // zeros: a row left unwritten or zeroed would look finite
    auto t = [&](void* p) { return zyfa::TensorRef::contiguous(p, zyfa::DType::bf16, 1, s, 1, d); };
    zyfa::AttentionOptions opt;
    opt.causal = true;
    const zyfa::Status st =
        zyfa::flash_attn_func(t(dq.p), t(dk.p), t(dv.p), t(dout.p), static_cast<float*>(dlse.p), opt, nullptr);
    REQUIRE_MESSAGE(st.ok(), st.message);
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<std::uint16_t> ho(s * d);
    std::vector<float> hl(s);
    CUDA_OK(cudaMemcpy(ho.data(), dout.p, s * d * 2, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(hl.data(), dlse.p, s * 4, cudaMemcpyDeviceToHost));
    int wrong_rows = 0;
    for (int i = 0; i < s; ++i) {
      const bool expect_nan = which == 0 ? i >= 40 : i == 7;
      int nan_count = 0;
      for (int c = 0; c < d; ++c) nan_count += std::isnan(zyfa::bf16_to_float(ho[i * d + c])) ? 1 : 0;
      const bool ok = expect_nan ? (nan_count == d && std::isnan(hl[i])) : (nan_count == 0 && std::isfinite(hl[i]));
      if (!ok && wrong_rows++ < 4)
        MESSAGE("case " << which << " row " << i << ": " << nan_count << " NaN of " << d << ", lse " << hl[i]);
    }
    CHECK_MESSAGE(wrong_rows == 0, (which == 0 ? "NaN in k" : "NaN in q") << ": " << wrong_rows << " rows wrong");
  }
}

TEST_CASE("small: O's fp32 headroom under lazy rescaling: finite inside the documented bound, rescaled past it") {
  // Case::headroom: seqlen_k * max|v| * 2^threshold = 0.75 * FLT_MAX; logits just under the threshold keep the first
  // tile's max (O near 0.55 * FLT_MAX), one log2 unit over it must move the max (else O overflows).
  for (const auto& hd : kHeadDims)
    for (const bool causal : {false, true})
      for (const float over : {-0.1f, 1.0f}) {
        Case c;
        c.seqlen_q = 128;
        c.seqlen_k = 1280;
        c.heads = 2;
        c.heads_k = 1;
        c.dqk = hd[0];
        c.dv = hd[1];
        c.causal = causal;
        c.headroom = true;
        c.headroom_logit_over = over;
        CHECK(run_case(c) == 0);
      }
}

TEST_CASE("small: errors are returned, not crashes") {
  DeviceBuffer buf(1 << 20);
  // q/k/v may alias one another; out must not overlap them (make_params), so it gets the buffer's second half.
  auto t = [&](int s, int h, int d) { return zyfa::TensorRef::contiguous(buf.p, zyfa::DType::bf16, 1, s, h, d); };
  auto o_at = [&](int s, int h, int d) {
    return zyfa::TensorRef::contiguous(static_cast<char*>(buf.p) + (1 << 19), zyfa::DType::bf16, 1, s, h, d);
  };
  zyfa::AttentionOptions opt;
  // head dim pair not built in
  zyfa::Status s =
      zyfa::flash_attn_func(t(16, 2, 96), t(16, 2, 96), t(16, 2, 96), o_at(16, 2, 96), nullptr, opt, nullptr);
  CHECK(s.code == zyfa::StatusCode::unsupported);
  CHECK(s.message.find("head_dim") != std::string::npos);
  // FP8 at a head dim no FP8 kernel is built for (the FP8 kernels: (128, 128) and (192, 128))
  zyfa::TensorRef q8 = zyfa::TensorRef::contiguous(buf.p, zyfa::DType::e4m3fn, 1, 16, 2, 64);
  zyfa::TensorRef o = o_at(16, 2, 64);
  s = zyfa::flash_attn_func(q8, q8, q8, o, nullptr, opt, nullptr);
  CHECK(s.code == zyfa::StatusCode::unsupported);
  // invalid argument from make_params
  zyfa::TensorRef bad = t(16, 2, 128);
  bad.data = nullptr;
  s = zyfa::flash_attn_func(bad, t(16, 2, 128), t(16, 2, 128), o_at(16, 2, 128), nullptr, opt, nullptr);
  CHECK(s.code == zyfa::StatusCode::invalid_argument);
  CHECK(s.message.rfind("q", 0) == 0);
}

namespace {
/// Deterministic bf16 test values k/64 (k in [-128, 127], exact in bf16) from an element index: the same function
/// on the device (fill) and the host (reference), so a multi-GB tensor needs no host copy.
__host__ __device__ inline std::uint16_t hash_bf16(std::uint64_t i, std::uint64_t salt) {
  std::uint64_t z = i + salt * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  const float f = static_cast<float>(static_cast<int>(z & 0xFF) - 128) / 64.0f;
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<std::uint16_t>(u >> 16);  // exact: f has at most 8 significant bits
}
__global__ void fill_hash(std::uint16_t* p, std::uint64_t n, std::uint64_t salt) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
    p[i] = hash_bf16(i, salt);
}
double hash_val(std::uint64_t i, std::uint64_t salt) { return zyfa_test::bf16_to_double(hash_bf16(i, salt)); }
}  // namespace

TEST_CASE("large: K and V of more than 2^31 elements (seqlen_q 16, seqlen_k 600,000, 32 heads, hd128)") {
  // Contiguous BSHD, batch 1, inputs from hash_bf16. The fp64 reference covers three (head, row) pairs, head 31 holding
  // the largest offsets (a full reference would take minutes of host time).
  const std::int64_t sq = 16, sk = 600000, h = 32, d = 128;
  const std::uint64_t nq = sq * h * d, nk = static_cast<std::uint64_t>(sk) * h * d;
  REQUIRE(nk > (1ull << 31));
  DeviceBuffer dq(nq * 2), dk(nk * 2), dv(nk * 2), dout(nq * 2), dlse(sq * h * 4);
  fill_hash<<<1024, 256>>>(static_cast<std::uint16_t*>(dq.p), nq, 1);
  fill_hash<<<4096, 256>>>(static_cast<std::uint16_t*>(dk.p), nk, 2);
  fill_hash<<<4096, 256>>>(static_cast<std::uint16_t*>(dv.p), nk, 3);
  CUDA_OK(cudaDeviceSynchronize());
  for (bool causal : {false, true}) {
    CUDA_OK(cudaMemset(dout.p, 0x7F, nq * 2));
    zyfa::AttentionOptions opt;
    opt.causal = causal;
    auto t = [&](void* p, std::int64_t s) { return zyfa::TensorRef::contiguous(p, zyfa::DType::bf16, 1, s, h, d); };
    const zyfa::Status st = zyfa::flash_attn_func(t(dq.p, sq), t(dk.p, sk), t(dv.p, sk), t(dout.p, sq),
                                                  static_cast<float*>(dlse.p), opt, nullptr);
    REQUIRE_MESSAGE(st.ok(), st.message);
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<std::uint16_t> ho(nq);
    std::vector<float> hl(sq * h);
    CUDA_OK(cudaMemcpy(ho.data(), dout.p, nq * 2, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(hl.data(), dlse.p, sq * h * 4, cudaMemcpyDeviceToHost));
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    int bad = 0;
    double worst = 0;
    const std::int64_t pairs[3][2] = {{h - 1, 0}, {h - 1, sq - 1}, {0, 7}};
    for (const auto& pr : pairs) {
      const std::int64_t hh = pr[0], i = pr[1];
      const std::int64_t last = causal ? i + sk - sq : sk - 1;
      std::vector<double> sc(last + 1);
      double mx = -INFINITY;
      for (std::int64_t j = 0; j <= last; ++j) {
        double acc = 0;
        for (std::int64_t c = 0; c < d; ++c)
          acc += hash_val((i * h + hh) * d + c, 1) * hash_val((static_cast<std::uint64_t>(j) * h + hh) * d + c, 2);
        sc[j] = acc * scale;
        mx = std::max(mx, sc[j]);
      }
      double l = 0;
      std::vector<double> o(d, 0.0), a(d, 0.0);
      for (std::int64_t j = 0; j <= last; ++j) {
        const double p = std::exp(sc[j] - mx);
        l += p;
        for (std::int64_t c = 0; c < d; ++c) {
          const double vv = hash_val((static_cast<std::uint64_t>(j) * h + hh) * d + c, 3);
          o[c] += p * vv;
          a[c] += p * std::fabs(vv);
        }
      }
      for (std::int64_t c = 0; c < d; ++c) {
        const double got = zyfa_test::bf16_to_double(ho[(i * h + hh) * d + c]);
        const double err = std::fabs(got - o[c] / l), tol = kAtol + kTolScale * a[c] / l;
        if (!(err <= tol)) ++bad;
        worst = std::max(worst, err / tol);
      }
      if (!(std::fabs(hl[hh * sq + i] - (mx + std::log(l))) <= kLseAtol)) ++bad;
    }
    MESSAGE("seqlen_k 600000 causal=" << causal << ": worst " << worst << " of tol, bad " << bad);
    CHECK(bad == 0);
  }
}

namespace {
/// Runs the sm_90a pipeline with tile schedule S for a built-in pair; `unsupported` when it does not apply.
template <zyfa::bf16::sm90ws::WsSchedule S>
zyfa::Status ws_schedule_launcher(const zyfa::AttentionParams& p, zyfa::rt::stream_t stream) {
  bool launched = false;
  zyfa::Status s = zyfa::Status::unsupported("head dims not built in");
#define ZYFA_TEST_WS_(DQK, DV)                    \
  if (p.head_dim_qk == DQK && p.head_dim_v == DV) \
    s = zyfa::bf16::sm90ws::launch_builtin_ws<DQK, DV, S>(p, stream, &launched);
  ZYFA_BUILTIN_HEAD_DIMS(ZYFA_TEST_WS_)
#undef ZYFA_TEST_WS_
  if (s.ok() && !launched) return zyfa::Status::unsupported("the sm_90a pipeline does not apply on this device");
  return s;
}
}  // namespace

TEST_CASE("sm_90a tile schedules (snake order, one CTA per tile for long causal calls)") {
  using zyfa::bf16::sm90ws::WsSchedule;
  for (auto launcher : {&ws_schedule_launcher<WsSchedule::persistent_snake>,
                        &ws_schedule_launcher<WsSchedule::tile_grid_long_causal>}) {
    for (auto& hd : kHeadDims) {
      Case c;
      c.launcher = launcher;
      c.dqk = hd[0];
      c.dv = hd[1];
      c.causal = true;
      c.batch = 2;
      c.heads = 4;
      c.heads_k = 2;
      c.seqlen_q = c.seqlen_k = 1000;
      run_case(c);
      c.batch = 1;
      c.seqlen_q = 300;  // rows that see no key
      c.seqlen_k = 129;
      run_case(c);
      c.seqlen_q = 129;
      c.seqlen_k = 300;
      c.poison_keys = {200, 250, 299};
      c.poison_tail = 9;
      run_case(c);
    }
    Case c;  // long enough for one CTA per tile (seqlen_q > 4096), bitwise repeatable
    c.launcher = launcher;
    c.causal = true;
    c.heads = c.heads_k = 2;
    c.seqlen_q = c.seqlen_k = 4500;
    run_case(c, 3);
  }
}

TEST_CASE("causal calls with at least one m-block pair per SM: the persistent grid's balanced pairs (sm_90a)") {
  // 3 x 9 = 27 (batch, head)s of 17 m blocks (128-row tiles) or 11 (hd64: 192-row tiles): 230 or 149 pairs, the
  // middle blocks of the odd counts paired across (batch, head)s and the last one alone, >= 132 SMs of an H100/H200:
  // the sm_90a kernel takes the pairs order (launch_ws.hpp, WsOrder::causal_pairs; hd256 keeps the single-tile order).
  for (auto& hd : kHeadDims) {
    Case c;
    c.dqk = hd[0];
    c.dv = hd[1];
    c.causal = true;
    c.batch = 3;
    c.heads = 9;
    c.heads_k = 3;
    c.seqlen_q = c.seqlen_k = 2100;
    run_case(c, hd[0] == 128 ? 3 : 0);
    if (hd[0] != 128) continue;
    c.seqlen_k = 2500;  // bottom-right offset: unequal pairs
    run_case(c);
    c.seqlen_k = 1500;  // rows that see no key
    c.poison_keys = {1000, 1499};
    run_case(c);
  }
}

TEST_CASE("causal calls whose pairs leave more than half the SMs a last pair: the dealt tail (sm_90a)") {
  // 3 x 14 = 42 (batch, head)s of 2,200 rows: 18 m blocks of 128 rows (378 pairs: 2 rounds of 132 and 114 more) or
  // 12 of 192 rows (hd64: 252 pairs, 1 round and 120 more). More than 66 pairs after the full rounds: the last round
  // and those pairs go out as single m blocks, heaviest first (arch/sm90_work_order.hpp, PairTail::dealt).
  for (auto& hd : kHeadDims) {
    Case c;
    c.dqk = hd[0];
    c.dv = hd[1];
    c.causal = true;
    c.batch = 3;
    c.heads = 14;
    c.heads_k = 7;
    c.seqlen_q = c.seqlen_k = 2200;
    run_case(c, hd[0] == 128 ? 3 : 0);
    if (hd[0] != 128) continue;
    c.seqlen_k = 2700;  // bottom-right offset: unequal pairs
    c.poison_keys = {2699};
    run_case(c);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Variable-length batches (zyfa::flash_attn_varlen_func): every element of out and softmax_lse bit for bit against
// fixed-length calls on each sequence's rows of the same packed buffers.

namespace {

enum class VarlenPath {
  dispatched,  ///< zyfa::flash_attn_varlen_func vs zyfa::flash_attn_func per sequence
  ws,          ///< sm90ws::launch_builtin_ws (must launch: an sm_90a device) vs zyfa::flash_attn_func per sequence
  portable,    ///< bf16::launch_builtin<DQK, DV> (the mma.sync kernel) for both
};

struct VarlenCase {
  int dqk = 128, dv = 128, heads = 4, heads_k = 2;
  bool causal = false, with_lse = true;
  VarlenPath path = VarlenPath::dispatched;
  int pad = 0;              ///< extra elements per head slot and per row (multiple of 8): strided packed views
  int head_stride = 0;      ///< > 0 (heads == heads_k == 1): this head stride, not a multiple of 8 (size-1 dim)
  std::vector<int> lens_q;  ///< per sequence
  std::vector<int> lens_k;
  int poisoned_seq = -1;  ///< a sequence with Inf/NaN in V (and NaN in K) at keys some of its rows see
};

zyfa::Status varlen_launch(VarlenPath path, const zyfa::AttentionParams& p) {
  zyfa::Status s = zyfa::Status::unsupported("head dims not built in");
  bool launched = false;
#define ZYFA_TEST_VL_(DQK, DV)                                                                      \
  if (p.head_dim_qk == DQK && p.head_dim_v == DV) {                                                 \
    if (path == VarlenPath::portable) return zyfa::bf16::launch_builtin<DQK, DV>(p, nullptr);       \
    s = zyfa::bf16::sm90ws::launch_builtin_ws<DQK, DV>(p, nullptr, &launched);                      \
    if (s.ok() && !launched) return zyfa::Status::unsupported("the sm_90a pipeline did not apply"); \
  }
  ZYFA_BUILTIN_HEAD_DIMS(ZYFA_TEST_VL_)
#undef ZYFA_TEST_VL_
  return s;
}

zyfa::TensorRef view(void* p, int s, int h, int d, std::int64_t rs, std::int64_t hs) {
  zyfa::TensorRef t{};
  t.data = p;
  t.dtype = zyfa::DType::bf16;
  t.shape[0] = 1;
  t.shape[1] = s;
  t.shape[2] = h;
  t.shape[3] = d;
  t.stride[0] = static_cast<std::int64_t>(s) * rs;  // a batch of one: any positive multiple of 8 (the TMA rule)
  t.stride[1] = rs;
  t.stride[2] = hs;
  t.stride[3] = 1;
  return t;
}

const char* path_name(VarlenPath p) {
  return p == VarlenPath::dispatched ? "dispatched" : p == VarlenPath::ws ? "ws" : "portable";
}

/// Packed q/k/v/out with 3 query rows past cu_seqlens_q[batch] and 5 keys past cu_seqlens_k[batch] (K/V NaN there);
/// key-only sequences (no query row) carry Inf/NaN in every K and V element: a neighbour's tail tile reads them.
/// out is filled with the canary 0x7FC1 and softmax_lse with 0x7FC00001 first: every element outside the
/// sequences' rows (rows past cu_seqlens_q[batch], padding) must keep it. Returns the number of failures.
int run_varlen_case(const VarlenCase& c) {
  const int B = static_cast<int>(c.lens_q.size());
  REQUIRE(c.lens_k.size() == c.lens_q.size());
  const int h = c.heads, hk = c.heads_k, dqk = c.dqk, dv = c.dv;
  std::vector<std::int32_t> cu_q(B + 1, 0), cu_k(B + 1, 0);
  int max_q = 0, max_k = 0;
  for (int b = 0; b < B; ++b) {
    cu_q[b + 1] = cu_q[b] + c.lens_q[b];
    cu_k[b + 1] = cu_k[b] + c.lens_k[b];
    max_q = std::max(max_q, c.lens_q[b]);
    max_k = std::max(max_k, c.lens_k[b]);
  }
  const int tq = cu_q[B] + 3, tk = cu_k[B] + 5;
  char desc[256];
  std::snprintf(desc, sizeof desc, "varlen %s d=(%d,%d) h=%d hk=%d causal=%d lse=%d pad=%d hs=%d batch=%d tq=%d tk=%d",
                path_name(c.path), dqk, dv, h, hk, c.causal, c.with_lse, c.pad, c.head_stride, B, tq, tk);
  INFO(desc);
  auto hs_of = [&](int d) -> std::int64_t { return c.head_stride > 0 ? c.head_stride : d + c.pad; };
  const std::int64_t q_hs = hs_of(dqk), k_hs = hs_of(dqk), v_hs = hs_of(dv), o_hs = hs_of(dv);
  auto rs_of = [&](int heads, int d) -> std::int64_t {
    return c.head_stride > 0 ? d + 8 : heads * (d + c.pad) + c.pad;
  };
  const std::int64_t q_rs = rs_of(h, dqk), k_rs = rs_of(hk, dqk), v_rs = rs_of(hk, dv), o_rs = rs_of(h, dv);
  const size_t q_n = static_cast<size_t>(tq) * q_rs, k_n = static_cast<size_t>(tk) * k_rs;
  const size_t v_n = static_cast<size_t>(tk) * v_rs, o_n = static_cast<size_t>(tq) * o_rs;
  std::vector<std::uint16_t> hq = random_bf16(q_n), hkk = random_bf16(k_n), hv = random_bf16(v_n);
  const std::uint16_t kPosInf = 0x7F80, kNegInf = 0xFF80, kNaN = 0x7FC0;
  auto poison_key = [&](int j, int which) {  // which: 0 all elements, 1 a few (visible poison)
    for (int hh = 0; hh < hk; ++hh) {
      std::uint16_t* kr = &hkk[j * k_rs + hh * k_hs];
      std::uint16_t* vr = &hv[j * v_rs + hh * v_hs];
      if (which == 0) {
        for (int d = 0; d < dqk; ++d) kr[d] = (d % 3 == 0) ? kNaN : kPosInf;
        for (int d = 0; d < dv; ++d) vr[d] = (d % 3 == 0) ? kNaN : (d % 3 == 1 ? kPosInf : kNegInf);
      } else {
        vr[j % dv] = (j % 3 == 0) ? kPosInf : (j % 3 == 1 ? kNaN : kNegInf);
        vr[(j + 7) % dv] = kNaN;
        if (j % 2 == 0) kr[3] = kNaN;
      }
    }
  };
  for (int j = cu_k[B]; j < tk; ++j) poison_key(j, 0);
  for (int b = 0; b < B; ++b)
    if (c.lens_q[b] == 0)
      for (int j = cu_k[b]; j < cu_k[b + 1]; ++j) poison_key(j, 0);
  if (c.poisoned_seq >= 0) {
    const int b = c.poisoned_seq, lk = c.lens_k[b];
    REQUIRE(lk >= 3);
    for (int j : {lk - 1, lk * 2 / 3, lk / 2}) poison_key(cu_k[b] + j, 1);
  }
  DeviceBuffer dq(q_n * 2), dk(k_n * 2), dvb(v_n * 2), dout(o_n * 2), dlse(static_cast<size_t>(h) * tq * 4);
  DeviceBuffer dcu_q((B + 1) * 4), dcu_k((B + 1) * 4);
  CUDA_OK(cudaMemcpy(dq.p, hq.data(), q_n * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dk.p, hkk.data(), k_n * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dvb.p, hv.data(), v_n * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dcu_q.p, cu_q.data(), (B + 1) * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dcu_k.p, cu_k.data(), (B + 1) * 4, cudaMemcpyHostToDevice));
  const std::uint16_t kCanary = 0x7FC1;
  const std::uint32_t kLseCanary = 0x7FC00001u;
  std::vector<std::uint16_t> canary_o(o_n, kCanary);
  std::vector<std::uint32_t> canary_l(static_cast<size_t>(h) * tq, kLseCanary);
  CUDA_OK(cudaMemcpy(dout.p, canary_o.data(), o_n * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dlse.p, canary_l.data(), canary_l.size() * 4, cudaMemcpyHostToDevice));
  auto* q16 = static_cast<std::uint16_t*>(dq.p);
  auto* k16 = static_cast<std::uint16_t*>(dk.p);
  auto* v16 = static_cast<std::uint16_t*>(dvb.p);
  auto* o16 = static_cast<std::uint16_t*>(dout.p);
  float* lse = c.with_lse ? static_cast<float*>(dlse.p) : nullptr;
  zyfa::AttentionOptions opt;
  opt.causal = c.causal;

  // the varlen call
  {
    const zyfa::TensorRef q = view(q16, tq, h, dqk, q_rs, q_hs), k = view(k16, tk, hk, dqk, k_rs, k_hs);
    const zyfa::TensorRef v = view(v16, tk, hk, dv, v_rs, v_hs), o = view(o16, tq, h, dv, o_rs, o_hs);
    const auto* cq = static_cast<const std::int32_t*>(dcu_q.p);
    const auto* ck = static_cast<const std::int32_t*>(dcu_k.p);
    zyfa::Status st;
    if (c.path == VarlenPath::dispatched) {
      st = zyfa::flash_attn_varlen_func(q, k, v, o, lse, cq, ck, B, max_q, max_k, opt, nullptr);
    } else {
      zyfa::AttentionParams p;
      st = zyfa::make_varlen_params(q, k, v, o, lse, cq, ck, B, max_q, max_k, opt, &p);
      if (st.ok()) st = varlen_launch(c.path, p);
    }
    REQUIRE_MESSAGE(st.ok(), st.message);
    CUDA_OK(cudaDeviceSynchronize());
  }
  std::vector<std::uint16_t> got_o(o_n);
  std::vector<std::uint32_t> got_l(canary_l.size());
  CUDA_OK(cudaMemcpy(got_o.data(), dout.p, o_n * 2, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(got_l.data(), dlse.p, got_l.size() * 4, cudaMemcpyDeviceToHost));

  int bad_canary = 0, bad_bits = 0, bad_lse_bits = 0, bad_finite = 0, checked = 0;
  // out: every element of the buffer that no sequence owns keeps the canary (padding, rows past cu_seqlens_q[B])
  for (size_t i = 0; i < o_n; ++i) {
    const std::int64_t r = static_cast<std::int64_t>(i) / o_rs, in_row = static_cast<std::int64_t>(i) % o_rs;
    const bool owned = r < cu_q[B] && (h == 1 ? in_row < dv : (in_row / o_hs < h && in_row % o_hs < dv));
    if (!owned && got_o[i] != kCanary) ++bad_canary;
  }
  for (int hh = 0; hh < h; ++hh)
    for (int r = 0; r < tq; ++r) {
      const std::uint32_t x = got_l[static_cast<size_t>(hh) * tq + r];
      if ((r >= cu_q[B] || !c.with_lse) && x != kLseCanary) ++bad_canary;
    }
  // each sequence: a fixed-length call on its rows of the same buffers
  DeviceBuffer dso(static_cast<size_t>(max_q) * h * dv * 2 + 16), dsl(static_cast<size_t>(max_q) * h * 4 + 16);
  for (int b = 0; b < B; ++b) {
    const int lq = c.lens_q[b], lk = c.lens_k[b];
    if (lq == 0) continue;
    std::vector<std::uint16_t> so(static_cast<size_t>(lq) * h * dv, 0);
    std::vector<float> sl(static_cast<size_t>(lq) * h, -INFINITY);
    if (lk > 0) {  // (lk == 0: out 0 and lse -inf, a fixed-length call needs seqlen_k >= 1)
      const zyfa::TensorRef q = view(q16 + cu_q[b] * q_rs, lq, h, dqk, q_rs, q_hs);
      const zyfa::TensorRef k = view(k16 + cu_k[b] * k_rs, lk, hk, dqk, k_rs, k_hs);
      const zyfa::TensorRef v = view(v16 + cu_k[b] * v_rs, lk, hk, dv, v_rs, v_hs);
      const zyfa::TensorRef o = zyfa::TensorRef::contiguous(dso.p, zyfa::DType::bf16, 1, lq, h, dv);
      CUDA_OK(cudaMemset(dso.p, 0x7F, static_cast<size_t>(lq) * h * dv * 2));
      CUDA_OK(cudaMemset(dsl.p, 0xFF, static_cast<size_t>(lq) * h * 4));
      zyfa::Status st;
      if (c.path == VarlenPath::portable) {
        zyfa::AttentionParams p;
        st = zyfa::make_params(q, k, v, o, static_cast<float*>(dsl.p), opt, &p);
        if (st.ok()) st = varlen_launch(VarlenPath::portable, p);
      } else {
        st = zyfa::flash_attn_func(q, k, v, o, static_cast<float*>(dsl.p), opt, nullptr);
      }
      REQUIRE_MESSAGE(st.ok(), st.message);
      CUDA_OK(cudaDeviceSynchronize());
      CUDA_OK(cudaMemcpy(so.data(), dso.p, so.size() * 2, cudaMemcpyDeviceToHost));
      CUDA_OK(cudaMemcpy(sl.data(), dsl.p, sl.size() * 4, cudaMemcpyDeviceToHost));
    }
    int seq_bad = 0;
    for (int i = 0; i < lq; ++i)
      for (int hh = 0; hh < h; ++hh) {
        const float want_l = sl[static_cast<size_t>(hh) * lq + i];
        if (c.with_lse) {
          std::uint32_t wl;
          std::memcpy(&wl, &want_l, 4);
          if (got_l[static_cast<size_t>(hh) * tq + cu_q[b] + i] != wl) ++bad_lse_bits, ++seq_bad;
        }
        const bool no_key = std::isinf(want_l) && want_l < 0;
        for (int d = 0; d < dv; ++d) {
          const std::uint16_t want = so[(static_cast<size_t>(i) * h + hh) * dv + d];
          const std::uint16_t got = got_o[static_cast<size_t>(cu_q[b] + i) * o_rs + hh * o_hs + d];
          ++checked;
          if (got != want) ++bad_bits, ++seq_bad;
          // outside the deliberately poisoned sequence every value is finite (no key: exactly 0)
          const double x = zyfa_test::bf16_to_double(want);
          if (b != c.poisoned_seq && (!std::isfinite(x) || (no_key && want != 0))) ++bad_finite;
        }
        if (b != c.poisoned_seq && std::isnan(want_l)) ++bad_finite;
      }
    if (seq_bad > 0) std::printf("  sequence %d (seqlen_q %d, seqlen_k %d): %d elements differ\n", b, lq, lk, seq_bad);
  }
  std::printf("%-100s checked %d: bits differ %d, lse bits differ %d, canaries overwritten %d, non-finite %d\n", desc,
              checked, bad_bits, bad_lse_bits, bad_canary, bad_finite);
  CHECK(bad_bits == 0);
  CHECK(bad_lse_bits == 0);
  CHECK(bad_canary == 0);
  CHECK(bad_finite == 0);
  return bad_bits + bad_lse_bits + bad_canary + bad_finite;
}

// Ragged lengths 1..5000, empty sequences (no query row, no key, neither), seqlen_q > seqlen_k and < seqlen_k, key-only
// sequences of Inf/NaN keys right after sequences whose tail key tile reads them.
const std::vector<int> kVarlenQ = {1, 0, 17, 0, 5000, 3, 64, 129, 40, 0, 9, 1000, 2, 200, 130, 0, 333};
const std::vector<int> kVarlenK = {1, 0, 17, 9, 5000, 0, 64, 129, 23, 7, 300, 1000, 2, 137, 2, 0, 4001};

}  // namespace

TEST_CASE("varlen: bit for bit equal to per-sequence flash_attn_func (sm_90a pipeline and dispatch), every head dim") {
  for (auto& hd : kHeadDims)
    for (bool causal : {false, true})
      for (VarlenPath path : {VarlenPath::ws, VarlenPath::dispatched}) {
        VarlenCase c;
        c.dqk = hd[0];
        c.dv = hd[1];
        c.causal = causal;
        c.path = path;
        c.heads = 4;
        c.heads_k = path == VarlenPath::ws ? 2 : 1;  // GQA and MQA
        c.lens_q = kVarlenQ;
        c.lens_k = kVarlenK;
        c.poisoned_seq = 10;  // (9, 300): Inf/NaN at keys its rows see
        run_varlen_case(c);
      }
}

TEST_CASE("varlen: the portable kernel, bit for bit equal to its per-sequence calls, every head dim") {
  for (auto& hd : kHeadDims)
    for (bool causal : {false, true}) {
      VarlenCase c;
      c.dqk = hd[0];
      c.dv = hd[1];
      c.causal = causal;
      c.path = VarlenPath::portable;
      c.lens_q = kVarlenQ;
      c.lens_k = kVarlenK;
      c.poisoned_seq = 10;
      run_varlen_case(c);
    }
}

TEST_CASE(
    "small: varlen strided views, no LSE, and a head stride that sends both varlen and per-sequence calls to "
    "the portable kernel") {
  for (bool causal : {false, true}) {
    VarlenCase c;
    c.causal = causal;
    c.pad = 8;
    c.with_lse = false;
    c.lens_q = {70, 0, 129, 5, 1};
    c.lens_k = {100, 30, 64, 200, 0};
    run_varlen_case(c);
    c.with_lse = true;
    c.path = VarlenPath::ws;
    run_varlen_case(c);
  }
}

TEST_CASE("small: varlen where the sm_90a pipeline does not apply runs the portable kernel (dispatch), bit for bit") {
  // heads == heads_k == 1 with head stride 12 (allowed: a dim of size 1): TMA does not apply, for the packed views
  // and for the per-sequence views alike, so both calls run the portable kernel
  for (bool causal : {false, true}) {
    VarlenCase c;
    c.heads = c.heads_k = 1;
    c.head_stride = 12;
    c.causal = causal;
    c.lens_q = {10, 0, 17, 130, 1};
    c.lens_k = {10, 5, 17, 200, 0};
    run_varlen_case(c);
  }
}

TEST_CASE("small: varlen errors and skipped sequences") {
  DeviceBuffer buf(1 << 20), cu(64);
  auto t = [&](std::size_t off, int s, int h, int d) {
    return zyfa::TensorRef::contiguous(static_cast<char*>(buf.p) + off, zyfa::DType::bf16, 1, s, h, d);
  };
  const std::int32_t good[3] = {0, 10, 20}, bad[3] = {0, 30, -5};  // bad: sequence 0 past total, sequence 1 negative
  CUDA_OK(cudaMemcpy(cu.p, good, 12, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(static_cast<char*>(cu.p) + 16, bad, 12, cudaMemcpyHostToDevice));
  const auto* cg = static_cast<const std::int32_t*>(cu.p);
  const auto* cb = reinterpret_cast<const std::int32_t*>(static_cast<char*>(cu.p) + 16);
  zyfa::AttentionOptions opt;
  const zyfa::TensorRef q = t(0, 20, 2, 128), o = t(1 << 19, 20, 2, 128);
  zyfa::Status s = zyfa::flash_attn_varlen_func(q, q, q, o, nullptr, nullptr, cg, 2, 10, 10, opt, nullptr);
  CHECK(s.code == zyfa::StatusCode::invalid_argument);
  CHECK(s.message.rfind("cu_seqlens_q", 0) == 0);
  s = zyfa::flash_attn_varlen_func(q, q, q, o, nullptr, cg, cg, 2, 21, 10, opt, nullptr);
  CHECK(s.code == zyfa::StatusCode::invalid_argument);
  CHECK(s.message.rfind("max_seqlen_q", 0) == 0);
  // inconsistent offsets on the device: those sequences are skipped (nothing written, no fault), on every path
  for (bool causal : {false, true}) {
    opt.causal = causal;
    CUDA_OK(cudaMemset(static_cast<char*>(buf.p) + (1 << 19), 0x7F, 20 * 2 * 128 * 2));
    s = zyfa::flash_attn_varlen_func(q, q, q, o, nullptr, cb, cb, 2, 20, 20, opt, nullptr);
    REQUIRE_MESSAGE(s.ok(), s.message);
    CUDA_OK(cudaDeviceSynchronize());
    zyfa::AttentionParams p;
    REQUIRE(zyfa::make_varlen_params(q, q, q, o, nullptr, cb, cb, 2, 20, 20, opt, &p).ok());
    REQUIRE(varlen_launch(VarlenPath::ws, p).ok());
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<std::uint16_t> h(20 * 2 * 128);
    CUDA_OK(cudaMemcpy(h.data(), static_cast<char*>(buf.p) + (1 << 19), h.size() * 2, cudaMemcpyDeviceToHost));
    int changed = 0;
    for (std::uint16_t x : h) changed += x != 0x7F7F;
    CHECK(changed == 0);
  }
}
