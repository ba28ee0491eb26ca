// zyfa/host/head_matrix.hpp -- reading q/k/v of an AttentionParams in host memory, one head at a time.
//
// The host executable specification (reference.hpp, fp8_spec.hpp, fp32_attention.hpp) works on one
// (batch, head) slice at a time. This header turns a strided BSHD slice into a dense row-major float
// matrix of the STORED values (bf16 bits decoded, e4m3 codes decoded; descales NOT applied: the FP8
// algorithm needs the code values and applies the descales itself), and says which keys a query row sees.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../dtype.hpp"
#include "../numeric/bf16.hpp"
#include "../numeric/e4m3.hpp"
#include "../params.hpp"

namespace zyfa::host {

/// Decoded value of one stored element of dtype `t` at element offset `offset` from `base`
/// (host memory). bf16 and both e4m3 flavours decode exactly; fp32 is read as is.
inline float stored_value(DType t, const void* base, std::int64_t offset) {
  switch (t) {
    case DType::bf16:
      return bf16_to_float(static_cast<const std::uint16_t*>(base)[offset]);
    case DType::e4m3fn:
      return e4m3fn_to_float(static_cast<const std::uint8_t*>(base)[offset]);
    case DType::e4m3fnuz:
      return e4m3fnuz_to_float(static_cast<const std::uint8_t*>(base)[offset]);
    case DType::fp32: {
      float f;
      std::memcpy(&f, static_cast<const unsigned char*>(base) + offset * 4, 4);
      return f;
    }
  }
  return 0.0f;
}

/// A dense row-major matrix [rows, cols] of floats: one head of q (rows = seqlen_q, cols = head_dim_qk),
/// k (seqlen_k, head_dim_qk) or v (seqlen_k, head_dim_v).
struct HeadMatrix {
  std::int64_t rows = 0, cols = 0;
  std::vector<float> data;
  const float* row(std::int64_t r) const { return data.data() + r * cols; }
};

namespace detail {
inline HeadMatrix read_head_slice(DType t, const void* base, std::int64_t rows, std::int64_t cols, std::int64_t start,
                                  std::int64_t row_stride) {
  HeadMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.data.resize(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      m.data[static_cast<std::size_t>(r * cols + c)] = stored_value(t, base, start + r * row_stride + c);
  return m;
}
}  // namespace detail

/// Stored values of q[b, :, h, :] as [seqlen_q, head_dim_qk] (h: query head). p's tensors must be in HOST
/// memory and b/h in range (unchecked: make_params validated the strides). Same for read_k_head / read_v_head.
inline HeadMatrix read_q_head(const AttentionParams& p, std::int64_t b, std::int64_t h) {
  return detail::read_head_slice(p.qkv_dtype, p.q, p.seqlen_q, p.head_dim_qk,
                                 b * p.q_batch_stride + h * p.q_head_stride, p.q_row_stride);
}
/// Stored values of k[b, :, hk, :] as [seqlen_k, head_dim_qk] (hk: key/value head).
inline HeadMatrix read_k_head(const AttentionParams& p, std::int64_t b, std::int64_t hk) {
  return detail::read_head_slice(p.qkv_dtype, p.k, p.seqlen_k, p.head_dim_qk,
                                 b * p.k_batch_stride + hk * p.k_head_stride, p.k_row_stride);
}
/// Stored values of v[b, :, hk, :] as [seqlen_k, head_dim_v] (hk: key/value head).
inline HeadMatrix read_v_head(const AttentionParams& p, std::int64_t b, std::int64_t hk) {
  return detail::read_head_slice(p.qkv_dtype, p.v, p.seqlen_k, p.head_dim_v,
                                 b * p.v_batch_stride + hk * p.v_head_stride, p.v_row_stride);
}

/// Calls `f(b, h, i, q_row, k, v)` for every query row of `p` (tensors in HOST memory, as for read_q_head):
/// b batch, h query head, i query row, all std::int64_t; q_row (const float*) = read_q_head(p, b, h).row(i),
/// head_dim_qk stored values; k / v (const HeadMatrix&) = read_k_head / read_v_head(p, b, h / group_size()).
/// Order: b, then key/value head hk, then the group_size() query heads of hk (h = hk * group_size() + ...),
/// then i ascending. k and v are decoded once per (b, hk) and q once per (b, h); the references passed to
/// `f` are valid only during the call. No errors (p from make_params).
template <class F>
void for_each_query_row(const AttentionParams& p, F&& f) {
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t hk = 0; hk < p.num_heads_k; ++hk) {
      const HeadMatrix k = read_k_head(p, b, hk), v = read_v_head(p, b, hk);
      for (std::int64_t h = hk * p.group_size(); h < (hk + 1) * p.group_size(); ++h) {
        const HeadMatrix q = read_q_head(p, b, h);
        for (std::int64_t i = 0; i < p.seqlen_q; ++i) f(b, h, i, q.row(i), k, v);
      }
    }
}

/// Number of keys query row i sees; they are keys [0, visible_keys). Non-causal: seqlen_k. Causal,
/// bottom-right aligned (FlashAttention >= 2.1): key j is visible iff j <= i + seqlen_k - seqlen_q, so
/// the count is clamp(i + seqlen_k - seqlen_q + 1, 0, seqlen_k); 0 means the row sees no key.
inline std::int64_t visible_keys(const AttentionParams& p, std::int64_t i) {
  if (!p.causal) return p.seqlen_k;
  return std::clamp<std::int64_t>(i + p.causal_offset() + 1, 0, p.seqlen_k);
}

/// The descale applied to stored q/k/v values (the AttentionParams' value for FP8 inputs; 1 otherwise).
/// Host memory is not touched; no errors.
inline float q_descale_of(const AttentionParams& p) { return is_fp8(p.qkv_dtype) ? p.q_descale : 1.0f; }
inline float k_descale_of(const AttentionParams& p) { return is_fp8(p.qkv_dtype) ? p.k_descale : 1.0f; }
inline float v_descale_of(const AttentionParams& p) { return is_fp8(p.qkv_dtype) ? p.v_descale : 1.0f; }

}  // namespace zyfa::host
