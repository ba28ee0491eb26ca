// zyfa/params.hpp -- the one plain parameter struct every backend consumes, and its host-side builder.
#pragma once
#include "platform/platform.hpp"  // first: its C++17 check must precede std::optional below

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include "dtype.hpp"
#include "numeric/constants.hpp"
#include "tensor.hpp"

namespace zyfa {

/// Options of `flash_attn_func` beyond the tensors (FlashAttention vocabulary).
struct AttentionOptions {
  /// Multiplier of Q·Kᵀ before the softmax. Default (nullopt): 1/sqrt(head_dim_qk); for MLA this is the
  /// QK head dim (192 for DeepSeek's 192/128), as in FlashAttention. Must be finite and > 0, and
  /// softmax_scale * log2(e) (the factor the kernels use, fp32) must be a finite normal fp32 number.
  std::optional<float> softmax_scale;
  /// Causal mask, bottom-right aligned as in FlashAttention >= 2.1: query i sees keys
  /// j <= i + seqlen_k - seqlen_q. With seqlen_q > seqlen_k the first seqlen_q - seqlen_k rows see no key:
  /// their output is exactly 0 and their LSE is -inf. Default false, as flash_attn_func.
  bool causal = false;
  /// FP8 only: per-tensor dequantization factors; the real value of an element is code_value * descale.
  /// Must be finite and >= FLT_MIN (not subnormal), and q_descale * k_descale * softmax_scale * log2(e)
  /// (fp32) must be a finite normal fp32 number. Must stay 1 for bf16 inputs.
  float q_descale = 1.0f;
  float k_descale = 1.0f;
  float v_descale = 1.0f;
};

/// The fp32 factor that turns a raw score (code-value dot product for FP8) into log2-domain logits:
/// ((q_descale * k_descale) * softmax_scale) * log2(e), three fp32 multiplies in this order (kLog2e: fp32 log2(e),
/// numeric/constants.hpp). bf16 inputs pass descales 1, so it is softmax_scale * kLog2e.
constexpr float scale_softmax_log2(float softmax_scale, float q_descale, float k_descale) {
  return ((q_descale * k_descale) * softmax_scale) * kLog2e;
}

/// Flat parameters of one attention call, built and validated once on the host (`make_params`).
/// Sizes are in elements; strides are in elements (int64). Tensors are BSHD:
///   q   [batch, seqlen_q, num_heads,   head_dim_qk]
///   k   [batch, seqlen_k, num_heads_k, head_dim_qk]
///   v   [batch, seqlen_k, num_heads_k, head_dim_v]
///   out [batch, seqlen_q, num_heads,   head_dim_v]
///   softmax_lse [batch, num_heads, seqlen_q] fp32, contiguous, natural log (optional: nullptr)
/// Query head h reads key/value head h / (num_heads / num_heads_k) (GQA/MQA).
struct AttentionParams {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;
  float* softmax_lse = nullptr;

  DType qkv_dtype = DType::bf16;  ///< q, k and v share one dtype
  DType out_dtype = DType::bf16;  ///< bf16 (also for FP8 inputs)

  std::int64_t batch = 0, seqlen_q = 0, seqlen_k = 0;
  std::int64_t num_heads = 0, num_heads_k = 0;
  std::int64_t head_dim_qk = 0, head_dim_v = 0;

  // Element strides of dims [batch, seqlen, heads]; the head_dim stride is 1.
  std::int64_t q_batch_stride = 0, q_row_stride = 0, q_head_stride = 0;
  std::int64_t k_batch_stride = 0, k_row_stride = 0, k_head_stride = 0;
  std::int64_t v_batch_stride = 0, v_row_stride = 0, v_head_stride = 0;
  std::int64_t out_batch_stride = 0, out_row_stride = 0, out_head_stride = 0;

  float softmax_scale = 0.0f;  ///< resolved (never the default placeholder)
  bool causal = false;
  float q_descale = 1.0f, k_descale = 1.0f, v_descale = 1.0f;
  /// THE logit factor in log2 units, fp32: scale_softmax_log2(softmax_scale, q_descale, k_descale) for FP8 inputs,
  /// with descales 1 for bf16. Every backend (host specification, BF16 and FP8 kernels) exponentiates
  /// 2^(s * scale_softmax_log2) with exactly this value (FlashAttention's `scale_softmax_log2`); set by make_params.
  float scale_softmax_log2 = 0.0f;

  /// Variable-length batches (flash_attn_varlen_func; make_varlen_params): nullptr for fixed-length calls.
  /// Otherwise int32 offsets [batch + 1] into the packed token dims (memory of the backend: host or device):
  /// sequence b has query rows [cu_seqlens_q[b], cu_seqlens_q[b+1]) of q/out and keys [cu_seqlens_k[b],
  /// cu_seqlens_k[b+1]) of k/v; seqlen_q/seqlen_k then hold max_seqlen_q/max_seqlen_k, the batch strides are 0,
  /// softmax_lse is [num_heads, total_q], and causal_offset() is per sequence (seqlen_k(b) - seqlen_q(b)).
  const std::int32_t* cu_seqlens_q = nullptr;
  const std::int32_t* cu_seqlens_k = nullptr;
  std::int64_t total_q = 0, total_k = 0;  ///< varlen: rows of the packed q/out and k/v (their shape[1])

  /// True for a variable-length (packed) call.
  bool is_varlen() const { return cu_seqlens_q != nullptr; }
  /// num_heads / num_heads_k
  std::int64_t group_size() const { return num_heads / num_heads_k; }
  /// Bottom-right causal offset: query row i sees key j iff j <= i + causal_offset().
  std::int64_t causal_offset() const { return seqlen_k - seqlen_q; }
  /// True if some element offset (or byte offset) of q/k/v/out/lse does not fit a signed 32-bit integer.
  /// Computed without integer overflow for any field values.
  bool needs_64bit_offsets() const;
  /// Thread blocks of a kernel that gives each block `block_m` (> 0) query rows of one (batch, head):
  /// ceil(seqlen_q / block_m) * batch * num_heads, computed without integer overflow; saturates at
  /// INT64_MAX (the plain int64 product of three sizes < 2^31 can wrap, even to 0). Launchers compare it with
  /// their grid limit (kernels/launch.hpp: 2^31-1).
  /// Returns 0 if block_m <= 0 or a size is <= 0.
  std::int64_t query_blocks(std::int64_t block_m) const {
    if (block_m <= 0 || seqlen_q <= 0 || batch <= 0 || num_heads <= 0) return 0;
    const long double n = static_cast<long double>(seqlen_q / block_m + (seqlen_q % block_m != 0)) *
                          static_cast<long double>(batch) * static_cast<long double>(num_heads);
    return n >= 9.2e18L ? std::numeric_limits<std::int64_t>::max() : static_cast<std::int64_t>(n);
  }
};

namespace detail {

/// Largest element offset reachable in a tensor (sum of (shape-1)*stride, elements), computed in long double;
/// INT64_MAX when it reaches INT64_MAX / 8 (so that times a dtype size it cannot overflow).
inline std::int64_t max_offset(const std::int64_t* shape, const std::int64_t* stride, int rank) {
  long double acc = 0;
  for (int i = 0; i < rank; ++i) acc += static_cast<long double>(shape[i] - 1) * stride[i];
  if (acc < 0) return 0;  // only for unvalidated params (validated strides of size > 1 dims are > 0)
  if (acc >= static_cast<long double>(std::numeric_limits<std::int64_t>::max() / 8))
    return std::numeric_limits<std::int64_t>::max();
  return static_cast<std::int64_t>(acc);
}

}  // namespace detail

inline bool AttentionParams::needs_64bit_offsets() const {
  constexpr std::int64_t lim = std::numeric_limits<std::int32_t>::max();
  auto extent_bytes = [](std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t d, std::int64_t sb,
                         std::int64_t sr, std::int64_t sh, int esize) {
    const std::int64_t shape[4] = {b, s, h, d};
    const std::int64_t stride[4] = {sb, sr, sh, 1};
    const std::int64_t off = detail::max_offset(shape, stride, 4);
    return off > lim / 4 ? lim + 1 : (off + 1) * esize;
  };
  const int e = dtype_size(qkv_dtype), eo = dtype_size(out_dtype);
  if (is_varlen()) {  // the packed tensors: one batch of total_q / total_k rows
    AttentionParams packed = *this;
    packed.cu_seqlens_q = packed.cu_seqlens_k = nullptr;
    packed.batch = 1;
    packed.seqlen_q = total_q;
    packed.seqlen_k = total_k;
    return packed.needs_64bit_offsets();
  }
  return extent_bytes(batch, seqlen_q, num_heads, head_dim_qk, q_batch_stride, q_row_stride, q_head_stride, e) > lim ||
         extent_bytes(batch, seqlen_k, num_heads_k, head_dim_qk, k_batch_stride, k_row_stride, k_head_stride, e) >
             lim ||
         extent_bytes(batch, seqlen_k, num_heads_k, head_dim_v, v_batch_stride, v_row_stride, v_head_stride, e) > lim ||
         extent_bytes(batch, seqlen_q, num_heads, head_dim_v, out_batch_stride, out_row_stride, out_head_stride, eo) >
             lim ||
         // lse bytes, in long double: the int64 product of three sizes < 2^31 (times 4) could overflow
         static_cast<long double>(batch) * num_heads * seqlen_q * 4 > lim;
}

}  // namespace zyfa
