// zyfa/host/backend.hpp -- the host backend: zyfa's entry point computed on the CPU, on host memory.
//
// Same interface as the GPU backends (flash_attn_func in FlashAttention's vocabulary), so a program can
// fall back to it when no GPU is present and tests can compare kernels with it.
//   bf16 q/k/v -> fp32 arithmetic (fp32_attention.hpp), out bf16 (RNE);
//   e4m3fn q/k/v -> the zyfa FP8 recipe, bit-exact specification (fp8_spec.hpp), out bf16 (RNE).
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

#include "../numeric/bf16.hpp"
#include "../params.hpp"
#include "../status.hpp"
#include "../tensor.hpp"
#include "../validate.hpp"
#include "head_matrix.hpp"
#include "fp32_attention.hpp"
#include "fp8_spec.hpp"

namespace zyfa::host {

inline Status run_attention_varlen(const AttentionParams& p);

/// Runs attention on validated params (from make_params) whose pointers are HOST memory. Writes p.out
/// (bf16, through its strides) and, if p.softmax_lse is not null, softmax_lse [batch, num_heads, seqlen_q]
/// fp32 natural log (-inf for rows that see no key; their out is exactly 0).
/// Errors (unsupported; message names "out"/"q"): p.out_dtype not bf16, or q/k/v neither bf16 nor e4m3fn.
/// Runs synchronously on the calling thread. Varlen params (p.is_varlen(), from make_varlen_params) run
/// run_attention_varlen.
inline Status run_attention(const AttentionParams& p) {
  if (p.is_varlen()) return run_attention_varlen(p);
  if (p.out_dtype != DType::bf16) return Status::unsupported("out: the host backend writes bf16 only");
  if (p.qkv_dtype != DType::bf16 && p.qkv_dtype != DType::e4m3fn)
    return Status::unsupported(std::string("q: the host backend takes bf16 or e4m3fn, got ") + dtype_name(p.qkv_dtype));
  const bool fp8 = p.qkv_dtype == DType::e4m3fn;
  auto* out = static_cast<std::uint16_t*>(p.out);
  std::vector<float> row(static_cast<std::size_t>(p.head_dim_v));
  for_each_query_row(p, [&](std::int64_t b, std::int64_t h, std::int64_t i, const float* q_row, const HeadMatrix& k,
                            const HeadMatrix& v) {
    float lse = 0.0f;
    if (fp8) {
      const Fp8RowOutput r = fp8_row(p, Fp8Recipe::zyfa, fp8_scores_row(p, q_row, k, visible_keys(p, i)), v);
      row = r.out;
      lse = r.lse;
    } else {
      fp32_attention_row(p, q_row, k, v, i, row.data(), &lse);
    }
    std::uint16_t* o = out + b * p.out_batch_stride + i * p.out_row_stride + h * p.out_head_stride;
    for (std::int64_t e = 0; e < p.head_dim_v; ++e) o[e] = float_to_bf16(row[e]);
    if (p.softmax_lse) p.softmax_lse[(b * p.num_heads + h) * p.seqlen_q + i] = lse;
  });
  return Status::success();
}

/// Host backend entry, FlashAttention's flash_attn_func on host memory. Shapes (BSHD, element strides):
/// q [b, seqlen_q, num_heads, head_dim_qk], k [b, seqlen_k, num_heads_k, head_dim_qk],
/// v [b, seqlen_k, num_heads_k, head_dim_v], out [b, seqlen_q, num_heads, head_dim_v] bf16,
/// softmax_lse nullptr or fp32 [b, num_heads, seqlen_q] (natural log). q/k/v bf16, or e4m3fn with the
/// descales of `options`. Errors: everything make_params rejects (invalid_argument naming the argument:
/// including out overlapping itself or q/k/v, softmax_lse overlapping out/q/k/v, and scale factors whose fp32
/// product is not finite and normal), then run_attention's. Runs synchronously on the calling thread.
/// NaN, not an error: a NaN input element (bf16 NaN, e4m3fn code 0x7F/0xFF) makes the rows it reaches NaN
/// (out and lse); so do finite inputs whose logits overflow fp32 (|q.k * softmax_scale| > ~3e38, with the
/// descales for FP8), as in every fp32-accumulating attention kernel.
inline Status flash_attn_func(const TensorRef& q, const TensorRef& k, const TensorRef& v, const TensorRef& out,
                              float* softmax_lse, const AttentionOptions& options) {
  AttentionParams p;
  if (Status s = make_params(q, k, v, out, softmax_lse, options, &p); !s) return s;
  return run_attention(p);
}

/// Runs validated varlen params (make_varlen_params; pointers and cu_seqlens in HOST memory) one sequence at a time:
/// sequence b is exactly the fixed-length call on rows [cu_seqlens_q[b], cu_seqlens_q[b+1]) of q/out and keys
/// [cu_seqlens_k[b], cu_seqlens_k[b+1]) of k/v (bit for bit), its LSE written to softmax_lse [num_heads, total_q].
/// A sequence without query rows writes nothing; one without keys writes out 0 and lse -inf. Rows past
/// cu_seqlens_q[batch] are not written. Errors: check_cu_seqlens's (invalid_argument naming cu_seqlens_q/_k or
/// max_seqlen_q/_k), then run_attention's.
inline Status run_attention_varlen(const AttentionParams& p) {
  if (Status s = check_cu_seqlens("cu_seqlens_q", "max_seqlen_q", p.cu_seqlens_q, p.batch, p.total_q, p.seqlen_q); !s)
    return s;
  if (Status s = check_cu_seqlens("cu_seqlens_k", "max_seqlen_k", p.cu_seqlens_k, p.batch, p.total_k, p.seqlen_k); !s)
    return s;
  const int e = dtype_size(p.qkv_dtype), eo = dtype_size(p.out_dtype);
  std::vector<float> lse;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    const std::int64_t q0 = p.cu_seqlens_q[b], sq = p.cu_seqlens_q[b + 1] - q0;
    const std::int64_t k0 = p.cu_seqlens_k[b], sk = p.cu_seqlens_k[b + 1] - k0;
    if (sq == 0) continue;
    auto* out = static_cast<unsigned char*>(p.out) + q0 * p.out_row_stride * eo;
    lse.assign(static_cast<std::size_t>(p.num_heads * sq), -std::numeric_limits<float>::infinity());
    if (sk == 0) {  // no key: out 0, lse -inf
      for (std::int64_t i = 0; i < sq; ++i)
        for (std::int64_t h = 0; h < p.num_heads; ++h)
          for (std::int64_t d = 0; d < p.head_dim_v; ++d)
            reinterpret_cast<std::uint16_t*>(out + (i * p.out_row_stride + h * p.out_head_stride + d) * eo)[0] = 0;
    } else {
      AttentionParams s = p;
      s.cu_seqlens_q = s.cu_seqlens_k = nullptr;
      s.batch = 1;
      s.seqlen_q = sq;
      s.seqlen_k = sk;
      s.q = static_cast<const unsigned char*>(p.q) + q0 * p.q_row_stride * e;
      s.k = static_cast<const unsigned char*>(p.k) + k0 * p.k_row_stride * e;
      s.v = static_cast<const unsigned char*>(p.v) + k0 * p.v_row_stride * e;
      s.out = out;
      s.softmax_lse = lse.data();
      if (Status st = run_attention(s); !st) return st;
    }
    if (p.softmax_lse != nullptr)
      for (std::int64_t h = 0; h < p.num_heads; ++h)
        for (std::int64_t i = 0; i < sq; ++i)
          p.softmax_lse[h * p.total_q + q0 + i] = lse[static_cast<std::size_t>(h * sq + i)];
  }
  return Status::success();
}

/// Host backend entry for variable-length batches, FlashAttention's flash_attn_varlen_func on host memory.
/// Packed tensors as a batch of one (element strides): q [1, total_q, num_heads, head_dim_qk],
/// k [1, total_k, num_heads_k, head_dim_qk], v [1, total_k, num_heads_k, head_dim_v],
/// out [1, total_q, num_heads, head_dim_v] bf16; softmax_lse nullptr or fp32 [num_heads, total_q] (natural log);
/// cu_seqlens_q / cu_seqlens_k int32 [batch + 1] host arrays (see make_varlen_params); q/k/v bf16 or e4m3fn with
/// the descales of `options`; causal bottom-right per sequence. Each sequence gives exactly the result of
/// flash_attn_func on that sequence alone. Errors: make_varlen_params's, then run_attention_varlen's
/// (invalid_argument naming the argument). Synchronous.
inline Status flash_attn_varlen_func(const TensorRef& q, const TensorRef& k, const TensorRef& v, const TensorRef& out,
                                     float* softmax_lse, const std::int32_t* cu_seqlens_q,
                                     const std::int32_t* cu_seqlens_k, std::int64_t batch, std::int64_t max_seqlen_q,
                                     std::int64_t max_seqlen_k, const AttentionOptions& options) {
  AttentionParams p;
  if (Status s = make_varlen_params(q, k, v, out, softmax_lse, cu_seqlens_q, cu_seqlens_k, batch, max_seqlen_q,
                                    max_seqlen_k, options, &p);
      !s)
    return s;
  return run_attention(p);
}

}  // namespace zyfa::host
