// zyfa/host/backend.hpp -- the host backend: zyfa's entry point computed on the CPU, on host memory.
//
// Same interface as the GPU backends (flash_attn_func in FlashAttention's vocabulary), so a program can
// fall back to it when no GPU is present and tests can compare kernels with it.
//   bf16 q/k/v -> fp32 arithmetic (fp32_attention.hpp), out bf16 (RNE);
//   e4m3fn q/k/v -> the zyfa FP8 recipe, bit-exact specification (fp8_spec.hpp), out bf16 (RNE).
#pragma once
#include <cstdint>
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

/// Runs attention on validated params (from make_params) whose pointers are HOST memory. Writes p.out
/// (bf16, through its strides) and, if p.softmax_lse is not null, softmax_lse [batch, num_heads, seqlen_q]
/// fp32 natural log (-inf for rows that see no key; their out is exactly 0).
/// Errors (unsupported; message names "out"/"q"): p.out_dtype not bf16, or q/k/v neither bf16 nor e4m3fn.
/// Runs synchronously on the calling thread.
inline Status run_attention(const AttentionParams& p) {
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
      const Fp8RowOutput r = fp8_row(p, Fp8Recipe::zyfa, fp8_logits_row(p, q_row, k, visible_keys(p, i)), v);
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

}  // namespace zyfa::host
