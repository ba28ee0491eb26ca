// zyfa/flash_attn.hpp -- the GPU entry point: zyfa::flash_attn_func (BF16 forward attention).
//
// Compiled only when a GPU platform is compiling (nvcc, or HIP clang for gfx950/gfx942); zyfa.hpp includes
// it then. Built-in head dims, dispatched at run time: (head_dim_qk, head_dim_v) = (64, 64), (128, 128),
// (256, 256) and the MLA pair (192, 128). Any other pair is one template instantiation away:
// zyfa::bf16::launch<zyfa::kernels::KernelConfig<DQK, DV, BlockM, BlockN, Warps>>(params, stream)
// (examples/custom_head_dim).
#pragma once
#include <string>

#include "params.hpp"
#include "platform/platform.hpp"
#include "status.hpp"
#include "tensor.hpp"
#include "validate.hpp"

#if !ZYFA_PLATFORM_HOST
#include "kernels/launch.hpp"
#include "tile_config.hpp"

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
/// StatusCode::unsupported for FP8 inputs (not yet in this build), a head-dim pair that is not built in, or a
/// grid over 2^31-1 blocks; StatusCode::runtime_error when the launch fails.
/// NaN/overflow, not an error: a NaN input, or finite bf16 inputs whose logits overflow fp32
/// (|q.k * softmax_scale| > ~3e38), make the rows they reach NaN (out and lse), as the host backend does
/// (tests/gpu/test_flash_attn.cu "small: NaN inputs give NaN rows", run on the H200).
inline Status flash_attn_func(const TensorRef& q, const TensorRef& k, const TensorRef& v, const TensorRef& out,
                              float* softmax_lse, const AttentionOptions& opt, rt::stream_t stream) {
  AttentionParams p;
  if (Status s = make_params(q, k, v, out, softmax_lse, opt, &p); !s) return s;
  if (p.qkv_dtype != DType::bf16)
    return Status::unsupported(std::string("q: dtype ") + dtype_name(p.qkv_dtype) +
                               " is not supported by flash_attn_func yet (bf16 only)");
  const auto dqk = p.head_dim_qk, dv = p.head_dim_v;
  if (dqk == 64 && dv == 64) return bf16::launch<TileConfig<64, 64>::type>(p, stream);
  if (dqk == 128 && dv == 128) return bf16::launch<TileConfig<128, 128>::type>(p, stream);
  if (dqk == 256 && dv == 256) return bf16::launch<TileConfig<256, 256>::type>(p, stream);
  if (dqk == 192 && dv == 128) return bf16::launch<TileConfig<192, 128>::type>(p, stream);
  return Status::unsupported("head_dim_qk/head_dim_v: (" + std::to_string(dqk) + ", " + std::to_string(dv) +
                             ") is not a built-in pair (64,64), (128,128), (256,256), (192,128); instantiate "
                             "zyfa::bf16::launch<zyfa::kernels::KernelConfig<...>> for it");
}

}  // namespace zyfa

#endif  // !ZYFA_PLATFORM_HOST
