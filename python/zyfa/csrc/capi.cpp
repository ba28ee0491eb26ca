// python/zyfa/csrc/capi.cpp -- the C ABI of the Python package zyfa (loaded with ctypes; no libtorch in it, so one
// build serves every torch 2.x). Compiled twice by setup.py:
//   a plain C++ compiler -> _zyfa_host.so: zyfa::host::* (host memory, synchronous);
//   nvcc -x cu           -> _zyfa_cuda.so: zyfa::flash_attn_func / flash_attn_varlen_func / merge_attn_states
//                           (device memory, asynchronous on the given stream), with -DZYFA_SEPARATE_INSTANTIATION
//                           and one instantiation TU per built-in head-dim pair (instantiate.cu).
// Every function returns the zyfa::StatusCode (0 ok, 1 invalid_argument, 2 unsupported, 3 runtime_error) and copies
// the status message (NUL-terminated, truncated to err_len - 1 bytes) to `err`.
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include <zyfa/zyfa.hpp>

#if ZYFA_PLATFORM_HOST
#define ZYFA_CAPI_BACKEND 0
#else
#define ZYFA_CAPI_BACKEND 1
#endif

extern "C" {

/// A tensor view as the Python side passes it: data pointer, dtype code (zyfa::DType's value: 0 bf16, 1 fp32,
/// 2 e4m3fn, 3 e4m3fnuz), BSHD shape and element strides.
struct zyfa_tensor {
  void* data;
  std::int32_t dtype;
  std::int32_t reserved;
  std::int64_t shape[4];
  std::int64_t stride[4];
};

/// An fp32 LSE view [batch, num_heads, seqlen] with element strides; data null: not written (merge output only).
struct zyfa_lse {
  float* data;
  std::int64_t stride[3];
};

/// Attention options: has_scale 0 -> softmax_scale = 1/sqrt(head_dim_qk).
struct zyfa_options {
  std::int32_t causal;
  std::int32_t has_scale;
  float softmax_scale;
  float q_descale, k_descale, v_descale;
};

}  // extern "C"

namespace {

zyfa::TensorRef to_ref(const zyfa_tensor* t) {
  zyfa::TensorRef r;
  r.data = t->data;
  r.dtype = static_cast<zyfa::DType>(t->dtype);
  for (int d = 0; d < 4; ++d) {
    r.shape[d] = t->shape[d];
    r.stride[d] = t->stride[d];
  }
  return r;
}

zyfa::LseRef to_lse(const zyfa_lse* l) {
  zyfa::LseRef r;
  r.data = l->data;
  for (int d = 0; d < 3; ++d) r.stride[d] = l->stride[d];
  return r;
}

zyfa::AttentionOptions to_options(const zyfa_options* o) {
  zyfa::AttentionOptions r;
  r.causal = o->causal != 0;
  if (o->has_scale) r.softmax_scale = o->softmax_scale;
  r.q_descale = o->q_descale;
  r.k_descale = o->k_descale;
  r.v_descale = o->v_descale;
  return r;
}

int finish(const zyfa::Status& s, char* err, int err_len) {
  if (err != nullptr && err_len > 0) {
    const std::size_t n = s.message.size() < static_cast<std::size_t>(err_len - 1)
                              ? s.message.size()
                              : static_cast<std::size_t>(err_len - 1);
    std::memcpy(err, s.message.data(), n);
    err[n] = '\0';
  }
  return static_cast<int>(s.code);
}

}  // namespace

extern "C" {

/// 0: the host backend (zyfa::host), 1: the GPU kernels of this build (CUDA).
int zyfa_backend() { return ZYFA_CAPI_BACKEND; }

/// Makes `device` the current device of THIS library's CUDA runtime (it links the runtime statically, so torch's
/// current device is not its current device); the Python side calls it before every CUDA call. Returns 0 or 3
/// (runtime_error, message in `err`). No-op in the host build.
int zyfa_set_device(int device, char* err, int err_len) {
#if ZYFA_PLATFORM_CUDA
  const cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess)
    return finish(zyfa::Status::runtime(std::string("cudaSetDevice(") + std::to_string(device) +
                                        ") failed: " + cudaGetErrorString(e)),
                  err, err_len);
#else
  (void)device;
#endif
  return finish(zyfa::Status::success(), err, err_len);
}

/// flash_attn_func: q/k/v/out BSHD views, lse fp32 [b, h, seqlen_q] contiguous or null. `stream`: cudaStream_t
/// (ignored by the host build).
int zyfa_fwd(const zyfa_tensor* q, const zyfa_tensor* k, const zyfa_tensor* v, const zyfa_tensor* out, float* lse,
             const zyfa_options* opt, void* stream, char* err, int err_len) {
#if ZYFA_PLATFORM_HOST
  (void)stream;
  return finish(zyfa::host::flash_attn_func(to_ref(q), to_ref(k), to_ref(v), to_ref(out), lse, to_options(opt)), err,
                err_len);
#else
  return finish(zyfa::flash_attn_func(to_ref(q), to_ref(k), to_ref(v), to_ref(out), lse, to_options(opt),
                                      static_cast<zyfa::rt::stream_t>(stream)),
                err, err_len);
#endif
}

/// flash_attn_func through the portable BF16 kernel only (bf16::launch_builtin<DQK, DV>: mma.sync on NVIDIA), never
/// the sm_90a warp-specialized wgmma kernel that zyfa_fwd prefers on an H100/H200: the kernel that
/// zyfa_varlen_fwd runs, so that tests can compare the two bit for bit. The host build runs zyfa_fwd's host backend.
int zyfa_fwd_portable(const zyfa_tensor* q, const zyfa_tensor* k, const zyfa_tensor* v, const zyfa_tensor* out,
                      float* lse, const zyfa_options* opt, void* stream, char* err, int err_len) {
#if ZYFA_PLATFORM_HOST
  return zyfa_fwd(q, k, v, out, lse, opt, stream, err, err_len);
#else
  zyfa::AttentionParams p;
  if (zyfa::Status s = zyfa::make_params(to_ref(q), to_ref(k), to_ref(v), to_ref(out), lse, to_options(opt), &p); !s)
    return finish(s, err, err_len);
  if (p.qkv_dtype != zyfa::DType::bf16)
    return finish(zyfa::Status::unsupported("q: the portable kernel takes bf16 only"), err, err_len);
#define ZYFA_CAPI_PORTABLE_(DQK, DV)              \
  if (p.head_dim_qk == DQK && p.head_dim_v == DV) \
    return finish(zyfa::bf16::launch_builtin<DQK, DV>(p, static_cast<zyfa::rt::stream_t>(stream)), err, err_len);
  ZYFA_BUILTIN_HEAD_DIMS(ZYFA_CAPI_PORTABLE_)
#undef ZYFA_CAPI_PORTABLE_
  return finish(zyfa::Status::unsupported("head_dim_qk/head_dim_v: not a built-in pair"), err, err_len);
#endif
}

/// flash_attn_varlen_func: packed views [1, total, heads, head_dim], lse fp32 [num_heads, total_q] or null,
/// cu_seqlens int32 [batch + 1] in the backend's memory.
int zyfa_varlen_fwd(const zyfa_tensor* q, const zyfa_tensor* k, const zyfa_tensor* v, const zyfa_tensor* out,
                    float* lse, const std::int32_t* cu_seqlens_q, const std::int32_t* cu_seqlens_k, std::int64_t batch,
                    std::int64_t max_seqlen_q, std::int64_t max_seqlen_k, const zyfa_options* opt, void* stream,
                    char* err, int err_len) {
#if ZYFA_PLATFORM_HOST
  (void)stream;
  return finish(zyfa::host::flash_attn_varlen_func(to_ref(q), to_ref(k), to_ref(v), to_ref(out), lse, cu_seqlens_q,
                                                   cu_seqlens_k, batch, max_seqlen_q, max_seqlen_k, to_options(opt)),
                err, err_len);
#else
  return finish(zyfa::flash_attn_varlen_func(to_ref(q), to_ref(k), to_ref(v), to_ref(out), lse, cu_seqlens_q,
                                             cu_seqlens_k, batch, max_seqlen_q, max_seqlen_k, to_options(opt),
                                             static_cast<zyfa::rt::stream_t>(stream)),
                err, err_len);
#endif
}

/// merge_attn_states: out views [b, s, h, d] (bf16/fp32), LSE views [b, h, s].
int zyfa_merge(const zyfa_tensor* out_a, const zyfa_lse* lse_a, const zyfa_tensor* out_b, const zyfa_lse* lse_b,
               const zyfa_tensor* out, const zyfa_lse* lse, void* stream, char* err, int err_len) {
#if ZYFA_PLATFORM_HOST
  (void)stream;
  return finish(zyfa::host::merge_attn_states(to_ref(out_a), to_lse(lse_a), to_ref(out_b), to_lse(lse_b), to_ref(out),
                                              to_lse(lse)),
                err, err_len);
#else
  return finish(zyfa::merge_attn_states(to_ref(out_a), to_lse(lse_a), to_ref(out_b), to_lse(lse_b), to_ref(out),
                                        to_lse(lse), static_cast<zyfa::rt::stream_t>(stream)),
                err, err_len);
#endif
}

}  // extern "C"
