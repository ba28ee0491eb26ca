// bench/zyfa_capi.cu -- a C entry point to zyfa for the benchmark (bench/bench_sm90_ws.py loads it with ctypes, so
// that zyfa, SDPA and FlashAttention-3 run in one process on the same torch tensors without building a torch
// extension on the GPU machine). Built by bench/build_capi.sh:
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -DZYFA_BF16_SM90_WS=1 -Iinclude -shared
//        -Xcompiler -fPIC bench/zyfa_capi.cu -o build-capi/libzyfa_capi.so
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <zyfa/bf16/sm90/launch_ws.hpp>
#include <zyfa/flash_attn.hpp>

namespace {
zyfa::bf16::sm90ws::WsOrder g_order;  // zyfa_capi_set_ws_order

template <zyfa::bf16::sm90ws::WsSchedule S>
zyfa::Status ws_schedule(const zyfa::AttentionParams& p, cudaStream_t stream) {
  bool launched = false;
  zyfa::Status s = zyfa::Status::unsupported("head dims not built in");
#define ZYFA_CAPI_WS_(DQK, DV)                    \
  if (p.head_dim_qk == DQK && p.head_dim_v == DV) \
    s = zyfa::bf16::sm90ws::launch_builtin_ws<DQK, DV, S>(p, stream, &launched, g_order);
  ZYFA_BUILTIN_HEAD_DIMS(ZYFA_CAPI_WS_)
#undef ZYFA_CAPI_WS_
  if (s.ok() && !launched) return zyfa::Status::unsupported("the sm_90a pipeline does not apply");
  return s;
}

/// hd128 with another tile configuration, for comparison with the built-in one.
template <class Cfg, zyfa::bf16::sm90ws::WsSchedule S = zyfa::bf16::sm90ws::WsSchedule::persistent>
zyfa::Status ws_config(const zyfa::AttentionParams& p, cudaStream_t stream) {
  if (p.head_dim_qk != Cfg::kDQK || p.head_dim_v != Cfg::kDV) return zyfa::Status::unsupported("other head dims");
  bool launched = false;
  zyfa::Status s = zyfa::bf16::sm90ws::launch_ws<Cfg, S>(p, stream, &launched, g_order);
  if (s.ok() && !launched) return zyfa::Status::unsupported("the sm_90a pipeline does not apply");
  return s;
}
}  // namespace

/// The work order (bf16::sm90ws::WsOrder) of impls 2-7 of zyfa_capi_fwd from now on.
extern "C" void zyfa_capi_set_ws_order(long long section_bytes, int keys_ascending) {
  g_order.section_bytes = section_bytes;
  g_order.keys_ascending = keys_ascending != 0;
}

/// WsOrder::causal_pairs of impls 2-7 from now on (1: balanced pairs of m blocks in causal calls, the default).
extern "C" void zyfa_capi_set_ws_pairs(int pairs) { g_order.causal_pairs = pairs != 0; }

namespace {
zyfa::TensorRef ref(void* p, const std::int64_t* shape, const std::int64_t* stride) {
  zyfa::TensorRef t;
  t.data = p;
  t.dtype = zyfa::DType::bf16;
  for (int d = 0; d < 4; ++d) {
    t.shape[d] = shape[d];
    t.stride[d] = stride[d];
  }
  return t;
}
}  // namespace

/// impl 0: zyfa::flash_attn_func (the sm_90a kernel where it applies); impl 1: the mma.sync kernel
/// (bf16::launch_builtin, no sm_90a pipeline); impl 2 / 3 / 4: the sm_90a kernel with WsSchedule::persistent_snake /
/// tile_grid_long_causal / persistent; impl 5: wide key tiles (hd128: 176 keys, hd64: 192 keys, FlashAttention-3's
/// non-causal tiles); impl 6 / 7: hd128 with 3 K-V stages / 3 stages and
/// tile_grid_long_causal (an error when it does not apply); impls
/// 2-7 use the order of zyfa_capi_set_ws_order. q/k/v/out: bf16 BSHD device pointers with shapes and
/// element strides (4 each); lse: fp32 [b, h, sq] or null. Returns 0, or 1 with zyfa's message in `err` (err_len
/// bytes).
extern "C" int zyfa_capi_fwd(int impl, void* q, const std::int64_t* qs, const std::int64_t* qst, void* k,
                             const std::int64_t* ks, const std::int64_t* kst, void* v, const std::int64_t* vs,
                             const std::int64_t* vst, void* o, const std::int64_t* os, const std::int64_t* ost,
                             float* lse, int causal, void* stream, char* err, int err_len) {
  zyfa::AttentionOptions opt;
  opt.causal = causal != 0;
  zyfa::Status s;
  if (impl == 0) {
    s = zyfa::flash_attn_func(ref(q, qs, qst), ref(k, ks, kst), ref(v, vs, vst), ref(o, os, ost), lse, opt,
                              static_cast<cudaStream_t>(stream));
  } else if (impl >= 2) {
    zyfa::AttentionParams p;
    s = zyfa::make_params(ref(q, qs, qst), ref(k, ks, kst), ref(v, vs, vst), ref(o, os, ost), lse, opt, &p);
    using zyfa::bf16::sm90ws::WsSchedule;
    const auto st = static_cast<cudaStream_t>(stream);
    if (s)
      s = impl == 2   ? ws_schedule<WsSchedule::persistent_snake>(p, st)
          : impl == 3 ? ws_schedule<WsSchedule::tile_grid_long_causal>(p, st)
          : impl == 4 ? ws_schedule<WsSchedule::persistent>(p, st)
          : impl == 5 ? (p.head_dim_qk == 64 ? ws_config<zyfa::bf16::sm90ws::WsConfig<64, 64, 192>>(p, st)
                                             : ws_config<zyfa::bf16::sm90ws::WsConfig<128, 128, 176>>(p, st))
          : impl == 6
              ? ws_config<zyfa::bf16::sm90ws::WsConfig<128, 128, 128, 3>>(p, st)
              : ws_config<zyfa::bf16::sm90ws::WsConfig<128, 128, 128, 3>, WsSchedule::tile_grid_long_causal>(p, st);
  } else {
    zyfa::AttentionParams p;
    s = zyfa::make_params(ref(q, qs, qst), ref(k, ks, kst), ref(v, vs, vst), ref(o, os, ost), lse, opt, &p);
    if (s) {
      s = zyfa::Status::unsupported("head dims not built in");
#define ZYFA_CAPI_MMA_(DQK, DV)                   \
  if (p.head_dim_qk == DQK && p.head_dim_v == DV) \
    s = zyfa::bf16::launch_builtin<DQK, DV>(p, static_cast<cudaStream_t>(stream));
      ZYFA_BUILTIN_HEAD_DIMS(ZYFA_CAPI_MMA_)
#undef ZYFA_CAPI_MMA_
    }
  }
  if (s.ok()) return 0;
  std::snprintf(err, static_cast<size_t>(err_len), "%s", s.message.c_str());
  return 1;
}

/// FP8: mode 0 = zyfa::flash_attn_func on e4m3fn inputs (the sm_90a kernel, Lean P); mode 1 = the same kernel with
/// PMode::exp2 (the zyfa_exact ablation); mode 2 = Lean P in the single-tile causal order (no m-block pairs). q/k/v:
/// e4m3fn BSHD device pointers, out bf16; descales per tensor; lse as zyfa_capi_fwd. Returns 0, or 1 with zyfa's
/// message in `err`.
extern "C" int zyfa_capi_fp8_fwd(int mode, void* q, const std::int64_t* qs, const std::int64_t* qst, void* k,
                                 const std::int64_t* ks, const std::int64_t* kst, void* v, const std::int64_t* vs,
                                 const std::int64_t* vst, void* o, const std::int64_t* os, const std::int64_t* ost,
                                 float q_descale, float k_descale, float v_descale, float softmax_scale, float* lse,
                                 int causal, void* stream, char* err, int err_len) {
  zyfa::AttentionOptions opt;
  opt.causal = causal != 0;
  opt.q_descale = q_descale;
  opt.k_descale = k_descale;
  opt.v_descale = v_descale;
  if (softmax_scale > 0) opt.softmax_scale = softmax_scale;
  zyfa::TensorRef tq = ref(q, qs, qst), tk = ref(k, ks, kst), tv = ref(v, vs, vst);
  tq.dtype = tk.dtype = tv.dtype = zyfa::DType::e4m3fn;
  zyfa::Status s;
  namespace f8 = zyfa::fp8::sm90;
  const auto st = static_cast<cudaStream_t>(stream);
  if (mode == 0) {
    s = zyfa::flash_attn_func(tq, tk, tv, ref(o, os, ost), lse, opt, st);
  } else {
    zyfa::AttentionParams p;
    s = zyfa::make_params(tq, tk, tv, ref(o, os, ost), lse, opt, &p);
    if (s)
      s = mode == 1   ? f8::launch_builtin(p, st, f8::PMode::exp2)
          : mode == 2 ? f8::launch_builtin(p, st, f8::PMode::lean_p, /*causal_pairs=*/false)
                      : zyfa::Status::invalid("mode: 0, 1 or 2");
  }
  if (s.ok()) return 0;
  std::snprintf(err, static_cast<size_t>(err_len), "%s", s.message.c_str());
  return 1;
}

#if ZYFA_WS_CTA_TIMES
/// Experiment builds (-DZYFA_WS_CTA_TIMES=1): zero (out == nullptr) or read back the per-CTA records of
/// bf16/sm90/fwd_kernel_ws.hpp, n CTAs (at most 1,024, the records' size): 4 x 64-bit per CTA, start and end
/// globaltimer (ns), key tiles (low 32 bits) + work tiles (high 32 bits), SM id. Returns 0, or 1 on a CUDA error or n
/// out of range.
extern "C" int zyfa_capi_cta_times(unsigned long long* out, int n) {
  if (n <= 0 || n > 1024) return 1;
  const std::size_t bytes = static_cast<std::size_t>(n) * 4 * sizeof(unsigned long long);
  if (out == nullptr) {
    void* p = nullptr;
    if (cudaGetSymbolAddress(&p, zyfa::bf16::sm90ws::zyfa_ws_cta_times) != cudaSuccess) return 1;
    return cudaMemset(p, 0, bytes) == cudaSuccess ? 0 : 1;
  }
  return cudaMemcpyFromSymbol(out, zyfa::bf16::sm90ws::zyfa_ws_cta_times, bytes) == cudaSuccess ? 0 : 1;
}
#endif
