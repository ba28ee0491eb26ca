// zyfa/flash_attn.hpp -- the GPU entry point zyfa::flash_attn_func and its dtype x target dispatch seam.
//
// Compiled only when a GPU platform is compiling (nvcc, or HIP clang for gfx950/gfx942); zyfa.hpp includes it
// then. BF16 -> the templated kernels (bf16/dispatch.hpp: the built-in head dims of head_dims.hpp, dispatched at
// run time); FP8 -> fp8/dispatch.hpp (the sm_90a kernel on NVIDIA, the generated kernels on gfx950). Any other BF16
// head-dim pair is one template instantiation away (examples/custom_head_dim).
#pragma once
#include <cstdint>
#include <string>

#include "params.hpp"
#include "platform/platform.hpp"
#include "status.hpp"
#include "tensor.hpp"
#include "validate.hpp"

#if !ZYFA_PLATFORM_HOST
#include "bf16/dispatch.hpp"
#include "fp8/dispatch.hpp"

namespace zyfa {

/// Causal or non-causal attention forward on the GPU, FlashAttention's flash_attn_func semantics:
///   out = softmax(softmax_scale * q.k^T + mask) . v
/// q [batch, seqlen_q, num_heads, head_dim_qk], k [batch, seqlen_k, num_heads_k, head_dim_qk],
/// v [batch, seqlen_k, num_heads_k, head_dim_v], out [batch, seqlen_q, num_heads, head_dim_v] (BSHD views,
/// element strides, device memory, bf16). softmax_lse: nullptr or device fp32 [batch, num_heads, seqlen_q],
/// natural log. Causal is bottom-right aligned; rows that see no key give out = 0 and lse = -inf.
/// GQA/MQA: num_heads % num_heads_k == 0. Asynchronous on `stream`; uses no workspace.
/// Errors (returned, never thrown): everything make_params rejects (invalid_argument naming the argument,
/// including out overlapping q/k/v or itself and softmax_lse overlapping out/q/k/v);
/// StatusCode::unsupported for FP8 inputs without a kernel here (fp8/dispatch.hpp: sm_90a (128, 128) and (192, 128),
/// gfx950 (128, 128) and (192, 128); the message names the argument), a head-dim pair that is not built in
/// (head_dims.hpp), or a grid over 2^31-1 blocks; StatusCode::runtime_error when the launch fails. NaN/overflow, not an
/// error: a NaN input, or finite bf16 inputs whose logits overflow fp32
/// (|q.k * softmax_scale| > ~3e38), make the rows they reach NaN (out and lse), as the host backend does
/// (tests/gpu/test_flash_attn.cu "small: NaN inputs give NaN rows", run on the H200).
inline Status flash_attn_func(const TensorRef& q, const TensorRef& k, const TensorRef& v, const TensorRef& out,
                              float* softmax_lse, const AttentionOptions& opt, rt::stream_t stream) {
  AttentionParams p;
  if (Status s = make_params(q, k, v, out, softmax_lse, opt, &p); !s) return s;
  switch (p.qkv_dtype) {
    case DType::bf16:
      return bf16::launch_builtin(p, stream);
    case DType::e4m3fn:
    case DType::e4m3fnuz:
      return fp8::launch(p, stream);
    case DType::fp32:
      break;
  }
  return Status::unsupported(std::string("q: dtype ") + dtype_name(p.qkv_dtype) + " has no GPU kernel");
}

/// Variable-length (packed) attention forward on the GPU, FlashAttention's flash_attn_varlen_func semantics.
/// Packed tensors as a batch of one (BSHD views, element strides, device memory, bf16):
///   q [1, total_q, num_heads, head_dim_qk], k [1, total_k, num_heads_k, head_dim_qk],
///   v [1, total_k, num_heads_k, head_dim_v], out [1, total_q, num_heads, head_dim_v];
/// softmax_lse: nullptr or device fp32 [num_heads, total_q] (natural log). cu_seqlens_q / cu_seqlens_k: DEVICE
/// int32 [batch + 1] offsets, non-decreasing from 0 (sequence b: query rows [cu_seqlens_q[b], cu_seqlens_q[b+1]),
/// keys [cu_seqlens_k[b], cu_seqlens_k[b+1])); empty sequences allowed (no query row: nothing written; no key: out
/// 0 and lse -inf). max_seqlen_q / max_seqlen_k: the longest query / key sequence (the grid covers max_seqlen_q
/// rows per sequence). Causal is bottom-right aligned per sequence. Rows past cu_seqlens_q[batch] are not written.
/// One launch of the kernel flash_attn_func runs on each sequence on sm_90a: the warp-specialized wgmma kernel
/// (bf16/sm90/), when TMA can address the packed tensors (16-byte aligned data, row and head strides of q/k/v/out
/// positive multiples of 8 elements below 2^39: sm90ws::ws_tensors_ok) on an sm_90a device with the kernel compiled
/// for it; otherwise (other GPUs, other strides, AMD) the portable kernel's variable-length form (bf16::fwd_kernel<
/// Config, true>). Each sequence gives, bit for bit, what flash_attn_func gives on its rows alone:
/// views [1, len, heads, head_dim] starting cu_seqlens[b] rows into the packed tensors with the packed row and head
/// strides (their data pointers are 16-byte aligned whenever the packed ones are, the row strides being multiples of
/// 16 bytes) and a batch stride that is a positive multiple of 8 elements below 2^39 (e.g. len * row stride); with
/// another batch stride flash_attn_func may take the portable kernel where the varlen call takes the wgmma one.
/// The offsets are device memory and are not read on the host: offsets that break the rules above are not
/// detected; the kernels then skip a sequence whose offsets leave [0, total] or decrease (no out-of-bounds access)
/// and do not compute rows past max_seqlen_q of a sequence. zyfa::check_cu_seqlens checks a host copy.
/// Asynchronous on `stream`; no workspace. Errors (returned): make_varlen_params's (invalid_argument naming the
/// argument), then unsupported (FP8, a head-dim pair that is not built in), runtime_error when the launch fails.
inline Status flash_attn_varlen_func(const TensorRef& q, const TensorRef& k, const TensorRef& v, const TensorRef& out,
                                     float* softmax_lse, const std::int32_t* cu_seqlens_q,
                                     const std::int32_t* cu_seqlens_k, std::int64_t batch, std::int64_t max_seqlen_q,
                                     std::int64_t max_seqlen_k, const AttentionOptions& opt, rt::stream_t stream) {
  AttentionParams p;
  if (Status s = make_varlen_params(q, k, v, out, softmax_lse, cu_seqlens_q, cu_seqlens_k, batch, max_seqlen_q,
                                    max_seqlen_k, opt, &p);
      !s)
    return s;
  switch (p.qkv_dtype) {
    case DType::bf16: {
      bool launched = false;
      const Status s = bf16::launch_builtin_varlen(p, stream, &launched);
      if (!s || launched) return s;
      return bf16::launch_builtin(p, stream);  // the portable kernel, variable-length form
    }
    case DType::e4m3fn:
    case DType::e4m3fnuz:
      return fp8::launch(p, stream);
    case DType::fp32:
      break;
  }
  return Status::unsupported(std::string("q: dtype ") + dtype_name(p.qkv_dtype) + " has no GPU kernel");
}

}  // namespace zyfa

#endif  // !ZYFA_PLATFORM_HOST
