// examples/prefill/prefill.cpp -- zyfa's main job: causal prefill attention on q/k/v read from .npy(.gz) files.
//
//   zyfa_prefill --q q.npy.gz --k k.npy.gz --v v.npy.gz [--out out.npy] [--lse lse.npy] [--causal|--no-causal]
//                [--softmax-scale X] [--expected model_out.npy.gz] [--backend auto|host|gpu] [--no-fp8]
//
// Inputs: BSHD arrays [batch, seqlen, heads, head_dim] (or [seqlen, heads, head_dim], batch 1) of dtype '<u2'
// (bf16 bit patterns), '<f2' or '<f4'; '<f2'/'<f4' values are rounded to bf16 (round to nearest even) first,
// since zyfa's BF16 kernels take bf16. q [b, seqlen_q, num_heads, head_dim_qk], k [b, seqlen_k, num_heads_k,
// head_dim_qk], v [b, seqlen_k, num_heads_k, head_dim_v]. File format: docs/file-format.md.
// Backend: the GPU (zyfa::flash_attn_func) when this binary was built with a GPU path (CMake
// -DZYFA_PREFILL_GPU=CUDA|HIP) and a device is present, else zyfa's host backend (zyfa::host::flash_attn_func,
// the executable specification). The program prints which one ran.
// Outputs: out [b, seqlen_q, num_heads, head_dim_v] as '<u2' bf16 bits, softmax_lse [b, num_heads, seqlen_q] as
// '<f4' (natural log). Report: the result against this example's own fp64 attention on the same bf16 inputs
// (relative Frobenius error, max abs error, LSE error), against the model's own output (--expected), and the FP8
// recipes of zyfa's host specification on the inputs quantized to e4m3fn (per-tensor descale = amax / 448).
// When the FP8 report cannot run (head_dim not a multiple of 16, inputs too small or not finite for e4m3fn), one
// line "FP8 report skipped: <why>" replaces it. Non-finite results (NaN anywhere; inf, or -inf in softmax_lse
// except for a row that sees no key) are counted, printed and make the run fail.
// Exit status: 0 success, 1 error (message names the argument or file; also a non-finite result, or a row that
// sees no key that is not exactly out 0 / softmax_lse -inf), 2 usage.
#include <zyfa/zyfa.hpp>
#include <zyfa/numeric/bf16.hpp>

#if __has_include(<zyfa/host/accuracy.hpp>) && __has_include(<zyfa/host/backend.hpp>) && \
    __has_include(<zyfa/host/quantize.hpp>)
#include <zyfa/host/accuracy.hpp>
#include <zyfa/host/backend.hpp>
#include <zyfa/host/quantize.hpp>
#define ZYFA_EXAMPLE_HAVE_HOST 1
#else
#define ZYFA_EXAMPLE_HAVE_HOST 0
#endif

#if defined(ZYFA_EXAMPLE_GPU) && ZYFA_EXAMPLE_GPU
#include <zyfa/flash_attn.hpp>
#else
#undef ZYFA_EXAMPLE_GPU
#define ZYFA_EXAMPLE_GPU 0
#endif

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <tuple>
#include <vector>

#include "npy.hpp"
#include "reference.hpp"

namespace {

using zyfa_example::NpyArray;

/// Host buffer aligned to 64 bytes (zyfa requires 16-byte aligned tensors).
template <class T>
struct AlignedBuffer {
  T* ptr = nullptr;
  std::size_t count = 0;
  explicit AlignedBuffer(std::size_t n) : count(n) {
    ptr = static_cast<T*>(::operator new (sizeof(T) * (n ? n : 1), std::align_val_t{64}));
    std::memset(static_cast<void*>(ptr), 0, sizeof(T) * (n ? n : 1));
  }
  ~AlignedBuffer() { ::operator delete (ptr, std::align_val_t{64}); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  T* data() { return ptr; }
  const T* data() const { return ptr; }
  T& operator[](std::size_t i) { return ptr[i]; }
  const T& operator[](std::size_t i) const { return ptr[i]; }
};

struct Args {
  std::string q, k, v, out, lse, expected, backend = "auto";
  bool causal = true, fp8 = true;
  float softmax_scale = 0.0f;  // 0: default 1/sqrt(head_dim_qk)
};

void usage(std::FILE* f) {
  std::fprintf(
      f,
      "usage: zyfa_prefill --q FILE --k FILE --v FILE [--out FILE] [--lse FILE] [--causal|--no-causal]\n"
      "                    [--softmax-scale X] [--expected FILE] [--backend auto|host|gpu] [--no-fp8]\n"
      "FILE: .npy or .npy.gz, dtype <u2 (bf16 bits), <f2 or <f4, shape [batch, seqlen, heads, head_dim]\n"
      "      or [seqlen, heads, head_dim]. Default: --causal (bottom-right), softmax_scale 1/sqrt(head_dim).\n");
}

/// Parses argv; returns 0 on success, 2 after printing usage on a bad command line.
int parse_args(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&](std::string* dst) {
      if (i + 1 >= argc) return false;
      *dst = argv[++i];
      return true;
    };
    bool ok = true;
    if (s == "--q")
      ok = value(&a->q);
    else if (s == "--k")
      ok = value(&a->k);
    else if (s == "--v")
      ok = value(&a->v);
    else if (s == "--out")
      ok = value(&a->out);
    else if (s == "--lse")
      ok = value(&a->lse);
    else if (s == "--expected")
      ok = value(&a->expected);
    else if (s == "--backend")
      ok = value(&a->backend);
    else if (s == "--causal")
      a->causal = true;
    else if (s == "--no-causal")
      a->causal = false;
    else if (s == "--no-fp8")
      a->fp8 = false;
    else if (s == "--softmax-scale") {
      std::string x;
      ok = value(&x);
      char* end = nullptr;
      if (ok) a->softmax_scale = std::strtof(x.c_str(), &end);
      ok = ok && end && *end == '\0' && std::isfinite(a->softmax_scale) && a->softmax_scale > 0.0f;
      if (!ok) std::fprintf(stderr, "--softmax-scale: expected a finite number > 0, got '%s'\n", x.c_str());
    } else if (s == "-h" || s == "--help") {
      usage(stdout);
      std::exit(0);
    } else {
      std::fprintf(stderr, "unknown argument '%s'\n", s.c_str());
      ok = false;
    }
    if (!ok) {
      usage(stderr);
      return 2;
    }
  }
  if (a->q.empty() || a->k.empty() || a->v.empty()) {
    std::fprintf(stderr, "--q, --k and --v are required\n");
    usage(stderr);
    return 2;
  }
  if (a->backend != "auto" && a->backend != "host" && a->backend != "gpu") {
    std::fprintf(stderr, "--backend: expected auto, host or gpu, got '%s'\n", a->backend.c_str());
    return 2;
  }
  return 0;
}

/// A loaded input: BSHD shape and values already rounded to bf16 (as float and as bf16 bits).
struct Input {
  std::int64_t shape[4] = {0, 0, 0, 0};
  std::vector<float> values;  // exactly representable in bf16
  std::string descr;
};

/// Loads `path` as the tensor called `name` ("q", "k", "v", "expected"); "" or an error naming it.
std::string load_input(const char* name, const std::string& path, Input* in) {
  NpyArray a;
  if (std::string e = zyfa_example::read_npy(path, &a); !e.empty()) return std::string(name) + ": " + e;
  if (a.shape.size() == 3) a.shape.insert(a.shape.begin(), 1);
  if (a.shape.size() != 4)
    return std::string(name) + ": " + path + ": expected a 4-D [batch, seqlen, heads, head_dim] (or 3-D) array, got " +
           std::to_string(a.shape.size()) + "-D";
  for (int d = 0; d < 4; ++d) in->shape[d] = a.shape[d];
  in->descr = a.descr;
  in->values = zyfa_example::npy_to_float(a);
  if (a.descr != "<u2")
    for (float& x : in->values) x = zyfa::bf16_to_float(zyfa::float_to_bf16(x));
  return "";
}

std::string shape_str(const std::int64_t* s) {
  return "[" + std::to_string(s[0]) + ", " + std::to_string(s[1]) + ", " + std::to_string(s[2]) + ", " +
         std::to_string(s[3]) + "]";
}

/// Relative Frobenius error ||x - ref||_F / ||ref||_F and max |x - ref| over all pairs. A pair with a
/// non-finite difference (NaN or inf in x or ref) is counted in `non_finite` and makes both errors NaN: it is
/// never skipped, so a broken result cannot look accurate.
struct Err {
  double rel_fro = 0, max_abs = 0;
  std::int64_t non_finite = 0;
};
template <class X>
Err compare(const X& x, const std::vector<double>& ref) {
  double num = 0, den = 0, mx = 0;
  std::int64_t bad = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(x[i]) - ref[i];
    if (!std::isfinite(d)) {
      ++bad;
      continue;
    }
    num += d * d;
    den += ref[i] * ref[i];
    mx = std::max(mx, std::fabs(d));
  }
  if (bad > 0) return {std::nan(""), std::nan(""), bad};
  return {den > 0 ? std::sqrt(num / den) : std::sqrt(num), mx, 0};
}

/// Why the FP8 report cannot run on these inputs ("" if it can): e4m3fn tensors need head_dim_qk and
/// head_dim_v to be multiples of 16 elements (16-byte rows, zyfa::make_params), and per-tensor quantization
/// needs amax / 448 to be a normal fp32 number (zyfa::host::quantize_e4m3fn).
std::string fp8_skip_reason(const Input* const in[3], std::int64_t dqk, std::int64_t dv) {
  if (dqk % 16 != 0 && dqk == dv) return "head_dim " + std::to_string(dqk) + " is not a multiple of 16 for e4m3fn";
  if (dqk % 16 != 0) return "head_dim_qk " + std::to_string(dqk) + " is not a multiple of 16 for e4m3fn";
  if (dv % 16 != 0) return "head_dim_v " + std::to_string(dv) + " is not a multiple of 16 for e4m3fn";
  const char* names[3] = {"q", "k", "v"};
  for (int t = 0; t < 3; ++t) {
    float amax = 0.0f;
    for (float x : in[t]->values) amax = std::isfinite(x) ? std::fmax(amax, std::fabs(x)) : amax;
    if (amax > 0.0f && !std::isnormal(amax / 448.0f)) {
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "%s: largest magnitude %.3g is too small for per-tensor e4m3fn quantization (amax/448 is not a "
                    "normal fp32 descale)",
                    names[t], static_cast<double>(amax));
      return buf;
    }
  }
  return "";
}

#if ZYFA_EXAMPLE_GPU
#if ZYFA_PLATFORM_CUDA
#define ZYFA_EX_GPU(name) cuda##name
#else
#define ZYFA_EX_GPU(name) hip##name
#endif
bool gpu_present() {
  int n = 0;
  return ZYFA_EX_GPU(GetDeviceCount)(&n) == ZYFA_EX_GPU(Success) && n > 0;
}

/// Copies q/k/v (bf16 bits) to the device, runs zyfa::flash_attn_func (once to warm up, then timed), copies out
/// and lse back. `*ms` is the timed call's duration (events on the default stream).
zyfa::Status run_gpu(const zyfa::TensorRef& hq, const zyfa::TensorRef& hk, const zyfa::TensorRef& hv,
                     const zyfa::TensorRef& hout, float* hlse, std::size_t lse_count, const zyfa::AttentionOptions& opt,
                     double* ms) {
  auto bytes = [](const zyfa::TensorRef& t) {
    return static_cast<std::size_t>(t.shape[0] * t.shape[1] * t.shape[2] * t.shape[3]) * zyfa::dtype_size(t.dtype);
  };
  void *dq = nullptr, *dk = nullptr, *dv = nullptr, *dout = nullptr;
  float* dlse = nullptr;
  auto check = [](ZYFA_EX_GPU(Error_t) e, const char* what) {
    return e == ZYFA_EX_GPU(Success) ? zyfa::Status::success()
                                     : zyfa::Status::runtime(std::string(what) + ": " + ZYFA_EX_GPU(GetErrorString)(e));
  };
  zyfa::Status s;
  auto cleanup = [&] {
    for (void* p : {dq, dk, dv, dout, static_cast<void*>(dlse)}) (void)ZYFA_EX_GPU(Free)(p);  // best effort
  };
  if (!(s = check(ZYFA_EX_GPU(Malloc)(&dq, bytes(hq)), "malloc q")) ||
      !(s = check(ZYFA_EX_GPU(Malloc)(&dk, bytes(hk)), "malloc k")) ||
      !(s = check(ZYFA_EX_GPU(Malloc)(&dv, bytes(hv)), "malloc v")) ||
      !(s = check(ZYFA_EX_GPU(Malloc)(&dout, bytes(hout)), "malloc out")) ||
      !(s = check(ZYFA_EX_GPU(Malloc)(reinterpret_cast<void**>(&dlse), lse_count * sizeof(float)), "malloc lse")) ||
      !(s = check(ZYFA_EX_GPU(Memcpy)(dq, hq.data, bytes(hq), ZYFA_EX_GPU(MemcpyHostToDevice)), "copy q")) ||
      !(s = check(ZYFA_EX_GPU(Memcpy)(dk, hk.data, bytes(hk), ZYFA_EX_GPU(MemcpyHostToDevice)), "copy k")) ||
      !(s = check(ZYFA_EX_GPU(Memcpy)(dv, hv.data, bytes(hv), ZYFA_EX_GPU(MemcpyHostToDevice)), "copy v"))) {
    cleanup();
    return s;
  }
  zyfa::TensorRef q = hq, k = hk, v = hv, out = hout;
  q.data = dq, k.data = dk, v.data = dv, out.data = dout;
  ZYFA_EX_GPU(Event_t) e0, e1;
  if (!(s = check(ZYFA_EX_GPU(EventCreate)(&e0), "event")) || !(s = check(ZYFA_EX_GPU(EventCreate)(&e1), "event"))) {
    cleanup();
    return s;
  }
  s = zyfa::flash_attn_func(q, k, v, out, dlse, opt, nullptr);  // warm-up (and the error check)
  if (s) {
    s = check(ZYFA_EX_GPU(EventRecord)(e0, nullptr), "event record");
    if (s) s = zyfa::flash_attn_func(q, k, v, out, dlse, opt, nullptr);
    if (s) s = check(ZYFA_EX_GPU(EventRecord)(e1, nullptr), "event record");
  }
  if (s) s = check(ZYFA_EX_GPU(DeviceSynchronize)(), "kernel");
  float t = 0;
  if (s) s = check(ZYFA_EX_GPU(EventElapsedTime)(&t, e0, e1), "event elapsed time");
  *ms = t;
  if (s) s = check(ZYFA_EX_GPU(Memcpy)(hout.data, dout, bytes(hout), ZYFA_EX_GPU(MemcpyDeviceToHost)), "copy out");
  if (s)
    s = check(ZYFA_EX_GPU(Memcpy)(hlse, dlse, lse_count * sizeof(float), ZYFA_EX_GPU(MemcpyDeviceToHost)), "copy lse");
  (void)ZYFA_EX_GPU(EventDestroy)(e0);
  (void)ZYFA_EX_GPU(EventDestroy)(e1);
  cleanup();
  return s;
}
#endif

#if ZYFA_EXAMPLE_GPU && ZYFA_EXAMPLE_HAVE_HOST && ZYFA_PLATFORM_CUDA
/// The FP8 kernel's view of e4m3fn codes [b, s, h, d] contiguous: head dim d < 128 zero-padded to 128 (exact: the
/// logits and the first d output columns are unchanged), d = 128 as is, d = 256 cut into two heads of 128 (q heads
/// [first halves of every head, then second halves], likewise k/v, so that GQA groups stay groups; the real values,
/// not the model's attention). Returns the mapped codes and writes the mapped head count and head dim.
std::vector<std::uint8_t> fp8_head_map(const std::uint8_t* x, std::int64_t b, std::int64_t s, std::int64_t h,
                                       std::int64_t d, std::int64_t* h_out, std::int64_t* d_out) {
  const std::int64_t parts = d > 128 ? d / 128 : 1, dm = 128;
  *h_out = h * parts;
  *d_out = dm;
  std::vector<std::uint8_t> y(static_cast<std::size_t>(b * s * h * parts * dm), 0);
  for (std::int64_t bb = 0; bb < b; ++bb)
    for (std::int64_t ss = 0; ss < s; ++ss)
      for (std::int64_t part = 0; part < parts; ++part)
        for (std::int64_t hh = 0; hh < h; ++hh)
          for (std::int64_t e = 0; e < (d > 128 ? 128 : d); ++e)
            y[static_cast<std::size_t>((((bb * s + ss) * (h * parts)) + part * h + hh) * dm + e)] =
                x[static_cast<std::size_t>(((bb * s + ss) * h + hh) * d + part * 128 + e)];
  return y;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (int rc = parse_args(argc, argv, &a); rc != 0) return rc;

  Input q, k, v;
  for (auto [name, path, in] :
       {std::tuple<const char*, const std::string*, Input*>{"q", &a.q, &q}, {"k", &a.k, &k}, {"v", &a.v, &v}}) {
    if (std::string e = load_input(name, *path, in); !e.empty()) {
      std::fprintf(stderr, "error: %s\n", e.c_str());
      return 1;
    }
    std::printf("%s: %s %s%s\n", name, path->c_str(), shape_str(in->shape).c_str(),
                in->descr == "<u2" ? " bf16" : (" " + in->descr + " rounded to bf16").c_str());
  }

  // bf16 bit buffers and zyfa tensor views (contiguous BSHD).
  auto to_bits = [](const Input& in) {
    auto buf = std::make_unique<AlignedBuffer<std::uint16_t>>(in.values.size());
    for (std::size_t i = 0; i < in.values.size(); ++i) (*buf)[i] = zyfa::float_to_bf16(in.values[i]);
    return buf;
  };
  auto qb = to_bits(q), kb = to_bits(k), vb = to_bits(v);
  const std::int64_t B = q.shape[0], SQ = q.shape[1], H = q.shape[2], DQK = q.shape[3];
  const std::int64_t SK = k.shape[1], HK = k.shape[2], DV = v.shape[3];
  using zyfa::DType;
  using zyfa::TensorRef;
  AlignedBuffer<std::uint16_t> outb(static_cast<std::size_t>(B * SQ * H * DV));
  AlignedBuffer<float> lse(static_cast<std::size_t>(B * H * SQ));
  const TensorRef tq = TensorRef::contiguous(qb->data(), DType::bf16, B, SQ, H, DQK);
  const TensorRef tk = TensorRef::contiguous(kb->data(), DType::bf16, k.shape[0], SK, HK, k.shape[3]);
  const TensorRef tv = TensorRef::contiguous(vb->data(), DType::bf16, v.shape[0], v.shape[1], v.shape[2], DV);
  const TensorRef tout = TensorRef::contiguous(outb.data(), DType::bf16, B, SQ, H, DV);
  zyfa::AttentionOptions opt;
  opt.causal = a.causal;
  if (a.softmax_scale > 0.0f) opt.softmax_scale = a.softmax_scale;

  // Validate once here, so that shape errors are reported the same way whichever backend runs.
  zyfa::AttentionParams params;
  if (zyfa::Status s = zyfa::make_params(tq, tk, tv, tout, lse.data(), opt, &params); !s) {
    std::fprintf(stderr, "error: %s\n", s.message.c_str());
    return 1;
  }
  std::printf(
      "problem: batch %lld, seqlen_q %lld, seqlen_k %lld, num_heads %lld, num_heads_k %lld, head_dim "
      "%lld/%lld, causal %s (bottom-right), softmax_scale %.6g\n",
      (long long)B, (long long)SQ, (long long)SK, (long long)H, (long long)HK, (long long)DQK, (long long)DV,
      a.causal ? "true" : "false", (double)params.softmax_scale);

  // ---- run ----
  std::string backend;
  double ms = 0;
  zyfa::Status st = zyfa::Status::unsupported("no backend");
#if ZYFA_EXAMPLE_GPU
  if (a.backend != "host" && gpu_present()) {
    backend = ZYFA_PLATFORM_CUDA ? "gpu (CUDA, zyfa::flash_attn_func)" : "gpu (HIP, zyfa::flash_attn_func)";
    st = run_gpu(tq, tk, tv, tout, lse.data(), lse.count, opt, &ms);
  }
#endif
  if (backend.empty()) {
    if (a.backend == "gpu") {
      std::fprintf(stderr, "error: --backend gpu: %s\n",
                   ZYFA_EXAMPLE_GPU ? "no GPU device is present"
                                    : "this binary has no GPU path (configure with -DZYFA_PREFILL_GPU=CUDA or HIP)");
      return 1;
    }
#if ZYFA_EXAMPLE_HAVE_HOST
    backend = "host (zyfa::host::flash_attn_func, CPU executable specification)";
    const auto t0 = std::chrono::steady_clock::now();
    st = zyfa::host::flash_attn_func(tq, tk, tv, tout, lse.data(), opt);
    ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
#else
    std::fprintf(stderr,
                 "error: no backend: this build has no GPU path and zyfa's host backend "
                 "(include/zyfa/host/backend.hpp) is not in this checkout\n");
    return 1;
#endif
  }
  std::printf("backend: %s\n", backend.c_str());
  if (!st) {
    std::fprintf(stderr, "error: %s\n", st.message.c_str());
    return 1;
  }
  const double flops = 4.0 * B * H * SQ * SK * (DQK + DV) / 2.0 * (a.causal ? 0.5 : 1.0);
  std::printf("time: %.3f ms (%.3g TFLOP/s%s)\n", ms, flops / (ms * 1e-3) / 1e12,
              a.causal ? ", causal FLOPs counted as half" : "");

  // ---- write ----
  if (!a.out.empty()) {
    if (std::string e = zyfa_example::write_npy(a.out, "<u2", {B, SQ, H, DV}, outb.data()); !e.empty()) {
      std::fprintf(stderr, "error: --out: %s\n", e.c_str());
      return 1;
    }
    std::printf("wrote out %s [%lld, %lld, %lld, %lld] <u2 (bf16 bits)\n", a.out.c_str(), (long long)B, (long long)SQ,
                (long long)H, (long long)DV);
  }
  if (!a.lse.empty()) {
    if (std::string e = zyfa_example::write_npy(a.lse, "<f4", {B, H, SQ}, lse.data()); !e.empty()) {
      std::fprintf(stderr, "error: --lse: %s\n", e.c_str());
      return 1;
    }
    std::printf("wrote softmax_lse %s [%lld, %lld, %lld] <f4 (natural log)\n", a.lse.c_str(), (long long)B,
                (long long)H, (long long)SQ);
  }

  // ---- accuracy: result vs fp64 on the same bf16 inputs ----
  zyfa_example::Problem prob{B, SQ, SK, H, HK, DQK, DV, params.softmax_scale, a.causal};
  std::vector<double> ref_out, ref_lse;
  zyfa_example::reference_attention_fp64(prob, q.values.data(), k.values.data(), v.values.data(), &ref_out, &ref_lse);
  std::vector<float> outf(outb.count);
  for (std::size_t i = 0; i < outf.size(); ++i) outf[i] = zyfa::bf16_to_float(outb[i]);
  const Err eo = compare(outf, ref_out);
  // Non-finite results: every out value must be finite (rows that see no key are exactly 0), every
  // softmax_lse must be finite except the -inf of a row that sees no key (bottom-right causal:
  // row r sees no key iff r + seqlen_k - seqlen_q < 0). NaN is never correct.
  std::int64_t out_non_finite = 0, lse_non_finite = 0;
  for (float x : outf) out_non_finite += !std::isfinite(x);
  double lse_err = 0;
  bool lse_err_nan = false;
  std::int64_t empty_rows = 0, empty_rows_bad = 0;
  for (std::size_t i = 0; i < ref_lse.size(); ++i) {
    const std::int64_t b = i / (H * SQ), h = (i / SQ) % H, r = i % SQ;
    if (a.causal && r + SK - SQ < 0) {
      ++empty_rows;
      lse_non_finite += !(std::isinf(lse[i]) && lse[i] < 0) && !std::isfinite(lse[i]);
      bool ok = std::isinf(lse[i]) && lse[i] < 0;
      for (std::int64_t d = 0; d < DV; ++d) ok = ok && outf[((b * SQ + r) * H + h) * DV + d] == 0.0f;
      empty_rows_bad += !ok;
    } else {
      lse_non_finite += !std::isfinite(lse[i]);
      const double d = std::fabs(static_cast<double>(lse[i]) - ref_lse[i]);
      if (std::isfinite(d))
        lse_err = std::max(lse_err, d);
      else
        lse_err_nan = true;
    }
  }
  if (lse_err_nan) lse_err = std::nan("");
  std::printf("\naccuracy of the %s result vs fp64 attention on the same bf16 inputs:\n",
              backend.substr(0, backend.find(' ')).c_str());
  std::printf("  out: rel_fro %.3e  max_abs %.3e    softmax_lse: max_abs %.3e\n", eo.rel_fro, eo.max_abs, lse_err);
  std::printf("  non-finite values: out %lld, softmax_lse %lld (the -inf of rows that see no key not counted)\n",
              (long long)out_non_finite, (long long)lse_non_finite);
  if (eo.non_finite > 0)
    std::printf("  out vs fp64: %lld pairs with a non-finite difference (NaN/inf in the result or the reference)\n",
                (long long)eo.non_finite);
  if (empty_rows > 0)
    std::printf("  rows that see no key: %lld, of which %lld not exactly 0 / -inf\n", (long long)empty_rows,
                (long long)empty_rows_bad);
  double expected_rel = -1;
  if (!a.expected.empty()) {
    Input ex;
    if (std::string e = load_input("expected", a.expected, &ex); !e.empty()) {
      std::fprintf(stderr, "error: --%s\n", e.c_str());
      return 1;
    }
    if (ex.shape[0] != B || ex.shape[1] != SQ || ex.shape[2] != H || ex.shape[3] != DV) {
      std::fprintf(stderr, "error: --expected: %s has shape %s, out is [%lld, %lld, %lld, %lld]\n", a.expected.c_str(),
                   shape_str(ex.shape).c_str(), (long long)B, (long long)SQ, (long long)H, (long long)DV);
      return 1;
    }
    std::vector<double> exd(ex.values.begin(), ex.values.end());
    const Err e1 = compare(outf, exd), e2 = compare(ref_out, exd);
    expected_rel = e1.rel_fro;
    std::printf("  vs the model's own attention output (%s): result rel_fro %.3e, fp64 reference rel_fro %.3e\n",
                a.expected.c_str(), e1.rel_fro, e2.rel_fro);
  }

  // ---- FP8 recipes on the e4m3fn-quantized inputs (zyfa's host specification) ----
  double zyfa_rel = -1, aiter_rel = -1, gpu_fp8_rel = -1;
#if ZYFA_EXAMPLE_HAVE_HOST
  // The FP8 report is optional: when it cannot run on these inputs (head_dim not a multiple of 16, values too
  // small or not finite), one line says why ("FP8 report skipped: ...") and the bf16 result above stands.
  if (a.fp8) {
    const Input* src[3] = {&q, &k, &v};
    std::string skip = fp8_skip_reason(src, DQK, DV);
    // Per-tensor e4m3fn quantization of the bf16 inputs (zyfa::host::quantize_e4m3fn: descale = amax / 448,
    // code = RNE(x / descale), saturating). With e4m3fn params, fp8_accuracy_report compares every recipe with
    // fp64 attention on the DEQUANTIZED inputs, which isolates the error the attention kernel adds.
    zyfa::AttentionOptions o8 = opt;
    std::unique_ptr<AlignedBuffer<std::uint8_t>> codes[3];
    float* descale[3] = {&o8.q_descale, &o8.k_descale, &o8.v_descale};
    const char* names[3] = {"q", "k", "v"};
    for (int t = 0; t < 3 && skip.empty(); ++t) {
      codes[t] = std::make_unique<AlignedBuffer<std::uint8_t>>(src[t]->values.size());
      if (zyfa::Status s =
              zyfa::host::quantize_e4m3fn(src[t]->values.data(), src[t]->values.size(), codes[t]->data(), descale[t]);
          !s)
        skip = std::string(names[t]) + ": " + s.message;
    }
    zyfa::AttentionParams p8;
    if (skip.empty())
      if (zyfa::Status s = zyfa::make_params(TensorRef::contiguous(codes[0]->data(), DType::e4m3fn, B, SQ, H, DQK),
                                             TensorRef::contiguous(codes[1]->data(), DType::e4m3fn, B, SK, HK, DQK),
                                             TensorRef::contiguous(codes[2]->data(), DType::e4m3fn, B, SK, HK, DV),
                                             tout, nullptr, o8, &p8);
          !s)
        skip = "e4m3fn params: " + s.message;
    if (!skip.empty()) {
      std::printf("\nFP8 report skipped: %s\n", skip.c_str());
    } else {
      std::printf(
          "\nFP8 recipes of zyfa's host specification on the inputs quantized to e4m3fn (per-tensor descale "
          "amax/448: q %.4g, k %.4g, v %.4g), each vs fp64 attention on the dequantized inputs; 'bf16' = "
          "fp32 arithmetic on the dequantized inputs rounded to bf16:\n",
          (double)o8.q_descale, (double)o8.k_descale, (double)o8.v_descale);
      std::cout.flush();
      const std::vector<zyfa::host::RecipeError> errs = zyfa::host::fp8_accuracy_report(p8);
      zyfa::host::print_accuracy_table(std::cout, errs);
      std::cout.flush();
      for (const auto& e : errs) {
        if (e.name == "zyfa") zyfa_rel = e.rel_fro_error;
        if (e.name == "aiter_like") aiter_rel = e.rel_fro_error;
      }
      if (zyfa_rel >= 0 && aiter_rel > 0)
        std::printf("FP8 error ratio zyfa / aiter_like (rel. Frobenius): %.3f\n", zyfa_rel / aiter_rel);
#if ZYFA_EXAMPLE_GPU && ZYFA_PLATFORM_CUDA
      // The same e4m3fn codes through zyfa::flash_attn_func on the GPU (the sm_90a FP8 kernel, head dims (128, 128)
      // and (192, 128)); other head dims mapped to 128 (fp8_head_map), and the host specification's zyfa recipe
      // re-run on the mapped problem, so that both errors are of the same problem.
      if (backend.rfind("gpu", 0) == 0 &&
          ((DQK == DV && (DQK < 128 || DQK % 128 == 0) && DQK <= 256) || (DQK == 192 && DV == 128))) {
        std::int64_t HQm = H, HKm = HK, Dqm = DQK, Dvm = DV;
        std::vector<std::uint8_t> mq, mk, mv;
        if (!(DQK == 192 && DV == 128) && !(DQK == 128 && DV == 128)) {
          mq = fp8_head_map(codes[0]->data(), B, SQ, H, DQK, &HQm, &Dqm);
          mk = fp8_head_map(codes[1]->data(), B, SK, HK, DQK, &HKm, &Dqm);
          mv = fp8_head_map(codes[2]->data(), B, SK, HK, DV, &HKm, &Dvm);
        } else {
          mq.assign(codes[0]->data(), codes[0]->data() + src[0]->values.size());
          mk.assign(codes[1]->data(), codes[1]->data() + src[1]->values.size());
          mv.assign(codes[2]->data(), codes[2]->data() + src[2]->values.size());
        }
        std::vector<std::uint16_t> gout(static_cast<std::size_t>(B * SQ * HQm * Dvm));
        std::vector<float> glse(static_cast<std::size_t>(B * HQm * SQ));
        const TensorRef gq = TensorRef::contiguous(mq.data(), DType::e4m3fn, B, SQ, HQm, Dqm);
        const TensorRef gk = TensorRef::contiguous(mk.data(), DType::e4m3fn, B, SK, HKm, Dqm);
        const TensorRef gv = TensorRef::contiguous(mv.data(), DType::e4m3fn, B, SK, HKm, Dvm);
        const TensorRef go = TensorRef::contiguous(gout.data(), DType::bf16, B, SQ, HQm, Dvm);
        zyfa::AttentionOptions om = o8;
        om.softmax_scale = params.softmax_scale;  // the model's scale, not 1/sqrt of the mapped head dim
        zyfa::AttentionParams pm;
        double gms = 0;
        zyfa::Status gs = zyfa::make_params(gq, gk, gv, go, nullptr, om, &pm);
        if (gs) gs = run_gpu(gq, gk, gv, go, glse.data(), glse.size(), om, &gms);
        if (!gs) {
          std::printf("FP8 on the GPU skipped: %s\n", gs.message.c_str());
        } else {
          // Errors against fp64 attention on the dequantized mapped inputs (columns < DV when padded).
          const std::int64_t cols = DV < Dvm ? DV : Dvm;
          double num = 0, den = 0, lse_err = 0;
          std::vector<double> ref(static_cast<std::size_t>(Dvm)), p_ref;
          zyfa::host::for_each_query_row(pm, [&](std::int64_t bb, std::int64_t hh, std::int64_t i, const float* q_row,
                                                 const zyfa::host::HeadMatrix& km, const zyfa::host::HeadMatrix& vm) {
            double ref_lse = 0;
            zyfa::host::reference_row(pm, q_row, km, vm, i, ref.data(), &ref_lse, &p_ref);
            for (std::int64_t e = 0; e < cols; ++e) {
              const double g =
                  zyfa::bf16_to_float(gout[static_cast<std::size_t>(((bb * SQ + i) * HQm + hh) * Dvm + e)]);
              num += (g - ref[e]) * (g - ref[e]);
              den += ref[e] * ref[e];
            }
            const double gl = glse[static_cast<std::size_t>((bb * HQm + hh) * SQ + i)];
            if (std::isfinite(ref_lse)) lse_err = std::max(lse_err, std::fabs(gl - ref_lse));
          });
          gpu_fp8_rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
          const zyfa::host::RecipeError spec = zyfa::host::fp8_recipe_error(pm, zyfa::host::Fp8Recipe::zyfa);
          std::printf(
              "FP8 on the GPU (zyfa::flash_attn_func, e4m3fn, sm_90a Lean P kernel; head dim %lld/%lld%s): rel. "
              "Frobenius %.4e, max |lse err| %.3e nats, %.3f ms; host specification (zyfa recipe, same problem): "
              "rel. Frobenius %.4e, max |lse err| %.3e\n",
              (long long)Dqm, (long long)Dvm,
              Dqm == DQK ? "" : (DQK < 128 ? ", zero-padded from the model's" : ", cut from the model's"), gpu_fp8_rel,
              lse_err, gms, spec.rel_fro_error, spec.max_abs_lse_error);
        }
      }
#endif
    }
  }
#endif
  // One machine-readable line per run (examples/run_prefill.sh collects them into a table).
  std::printf(
      "\nSUMMARY backend=%s rel_fro=%.4e lse_max_abs=%.4e expected_rel_fro=%.4e fp8_zyfa_rel_fro=%.4e "
      "fp8_aiter_like_rel_fro=%.4e fp8_gpu_rel_fro=%.4e\n",
      backend.substr(0, backend.find(' ')).c_str(), eo.rel_fro, lse_err, expected_rel, zyfa_rel, aiter_rel,
      gpu_fp8_rel);
  std::fflush(stdout);
  int rc = 0;
  if (out_non_finite > 0 || lse_non_finite > 0) {
    std::fprintf(stderr,
                 "error: the result has non-finite values: %lld in out, %lld in softmax_lse (NaN or inf where a "
                 "finite value is expected; NaN/inf in q, k or v, or an overflowing softmax_scale * q.k, cause this)\n",
                 (long long)out_non_finite, (long long)lse_non_finite);
    rc = 1;
  }
  if (empty_rows_bad > 0) {
    std::fprintf(stderr, "error: %lld rows that see no key are not exactly out 0 / softmax_lse -inf\n",
                 (long long)empty_rows_bad);
    rc = 1;
  }
  return rc;
}
