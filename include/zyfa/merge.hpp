// zyfa/merge.hpp -- merge_attn_states: combines two partial attention results by their LSE (split-KV, cascade and
// context-parallel attention), on the host and on the GPU.
//
// Two results over disjoint key sets A and B of the same query rows, each normalized over its own keys, with their
// natural-log LSEs, give the result over A u B exactly (up to fp32 rounding):
//   m = max(lse_a, lse_b);  wa = exp(lse_a - m);  wb = exp(lse_b - m);  s = wa + wb
//   out = (wa / s) * out_a + (wb / s) * out_b;   lse = m + log(s)
// All arithmetic is fp32 (bf16 inputs are widened exactly, a bf16 output is rounded to nearest even once).
// A row whose LSE is -inf saw no key (zyfa writes out 0 there): it is skipped exactly, so the other side passes
// through bit for bit (out = out_b, lse = lse_b); both -inf gives out 0 and lse -inf (never NaN). A NaN LSE gives a
// NaN row; so does +inf (an fp32 logit overflow upstream).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "dtype.hpp"
#include "numeric/bf16.hpp"
#include "platform/platform.hpp"
#include "status.hpp"
#include "tensor.hpp"
#include "validate.hpp"

namespace zyfa {

/// Non-owning fp32 view of a softmax LSE tensor [batch, num_heads, seqlen] (natural log), strides in ELEMENTS.
/// flash_attn_func's softmax_lse is `LseRef::contiguous(p, b, h, seqlen_q)`; the varlen layout
/// [num_heads, total_q] is batch 1 with strides {0, total_q, 1} (or a row of one packed sequence set).
struct LseRef {
  float* data = nullptr;
  std::int64_t stride[3] = {0, 0, 1};  ///< batch, head, row (elements)

  /// Contiguous [batch, num_heads, seqlen] (strides {num_heads * seqlen, seqlen, 1}). Checks nothing.
  static LseRef contiguous(float* data, std::int64_t batch, std::int64_t num_heads, std::int64_t seqlen) {
    (void)batch;
    LseRef l;
    l.data = data;
    l.stride[0] = num_heads * seqlen;
    l.stride[1] = seqlen;
    l.stride[2] = 1;
    return l;
  }
};

/// Validated arguments of one merge (make_merge_params). Shapes: every out tensor [batch, seqlen, num_heads,
/// head_dim] (BSHD, element strides, bf16 or fp32 each), every LSE [batch, num_heads, seqlen] fp32 (strides in
/// elements). `lse` may be null (not written).
struct MergeParams {
  TensorRef out_a, out_b, out;
  LseRef lse_a, lse_b, lse;
  std::int64_t batch = 0, seqlen = 0, num_heads = 0, head_dim = 0;
  ZYFA_HOST_DEVICE std::int64_t rows() const {
    return batch * seqlen * num_heads;
  }  ///< number of (batch, row, head) rows
};

/// Merge weights of one row (see the file comment): out = wa * out_a + wb * out_b with a term whose weight is
/// exactly 0 skipped (so a -inf side's out is never read into the result), lse the merged natural-log LSE.
struct MergeWeights {
  float wa, wb, lse;
};

/// The weights of one row from its two natural-log LSEs, fp32. -inf sides are exact (weight 0 and 1, lse copied);
/// NaN or +inf give NaN weights and lse.
ZYFA_HOST_DEVICE inline MergeWeights merge_weights(float lse_a, float lse_b) {
  const float inf = __builtin_huge_valf();
  if (lse_a != lse_a || lse_b != lse_b || lse_a == inf || lse_b == inf) {
    const float nan = __builtin_nanf("");
    return {nan, nan, nan};
  }
  if (lse_a == -inf) return {0.0f, lse_b == -inf ? 0.0f : 1.0f, lse_b};
  if (lse_b == -inf) return {1.0f, 0.0f, lse_a};
  const float m = lse_a > lse_b ? lse_a : lse_b;
  const float ea = expf(lse_a - m), eb = expf(lse_b - m);  // one of them is exactly 1
  const float s = ea + eb;
  return {ea / s, eb / s, m + logf(s)};
}

/// One merged element from the two inputs (fp32) and the row's weights; a zero-weight term is skipped.
ZYFA_HOST_DEVICE inline float merge_value(const MergeWeights& w, float a, float b) {
  float r = 0.0f;
  if (w.wa != 0.0f) r = w.wa * a;
  if (w.wb != 0.0f) r += w.wb * b;
  return r;
}

/// Reads element `off` (elements) of a bf16 or fp32 tensor as fp32.
ZYFA_HOST_DEVICE inline float merge_load(const void* base, DType t, std::int64_t off) {
  if (t == DType::fp32) return static_cast<const float*>(base)[off];
  return bf16_to_float(static_cast<const std::uint16_t*>(base)[off]);
}

/// Writes fp32 `x` to element `off` of a bf16 (round to nearest even) or fp32 tensor.
ZYFA_HOST_DEVICE inline void merge_store(void* base, DType t, std::int64_t off, float x) {
  if (t == DType::fp32)
    static_cast<float*>(base)[off] = x;
  else
    static_cast<std::uint16_t*>(base)[off] = float_to_bf16(x);
}

namespace detail {

inline Status check_merge_tensor(const char* name, const TensorRef& t) {
  const std::string n = name;
  if (t.data == nullptr) return Status::invalid(n + ": data pointer is null");
  if (t.dtype != DType::bf16 && t.dtype != DType::fp32)
    return Status::invalid(n + ": dtype " + dtype_name(t.dtype) + " is not supported (bf16 or fp32)");
  if (reinterpret_cast<std::uintptr_t>(t.data) % static_cast<std::uintptr_t>(dtype_size(t.dtype)) != 0)
    return Status::invalid(n + ": data pointer is not aligned to its element size");
  for (int d = 0; d < 4; ++d) {
    if (t.shape[d] <= 0 || t.shape[d] > std::numeric_limits<std::int32_t>::max())
      return Status::invalid(n + ": shape[" + std::to_string(d) + "] is " + std::to_string(t.shape[d]) +
                             ", must be in [1, 2^31-1]");
    if (t.shape[d] > 1 && (t.stride[d] <= 0 || t.stride[d] > (std::int64_t(1) << 60)))
      return Status::invalid(n + ": stride[" + std::to_string(d) + "] is " + std::to_string(t.stride[d]) +
                             ", must be in [1, 2^60]");
  }
  if (max_offset(t.shape, t.stride, 4) == std::numeric_limits<std::int64_t>::max())
    return Status::invalid(n + ": shape and strides address more than 2^60 elements");
  return Status::success();
}

inline Status check_lse_view(const char* name, const LseRef& l, const std::int64_t (&shape)[3]) {
  const std::string n = name;
  if (l.data == nullptr) return Status::invalid(n + ": data pointer is null");
  if (reinterpret_cast<std::uintptr_t>(l.data) % 4 != 0)
    return Status::invalid(n + ": pointer must be 4-byte aligned (fp32)");
  for (int d = 0; d < 3; ++d)
    if (shape[d] > 1 && (l.stride[d] <= 0 || l.stride[d] > (std::int64_t(1) << 60)))
      return Status::invalid(n + ": stride[" + std::to_string(d) + "] is " + std::to_string(l.stride[d]) +
                             ", must be in [1, 2^60]");
  if (max_offset(shape, l.stride, 3) == std::numeric_limits<std::int64_t>::max())
    return Status::invalid(n + ": shape and strides address more than 2^60 elements");
  return Status::success();
}

/// The lse view as a 4-d fp32 TensorRef [batch, num_heads, seqlen, 1] (for check_no_self_overlap).
inline TensorRef lse_as_tensor(const LseRef& l, const std::int64_t (&shape)[3]) {
  TensorRef t;
  t.data = l.data;
  t.dtype = DType::fp32;
  for (int d = 0; d < 3; ++d) {
    t.shape[d] = shape[d];
    t.stride[d] = l.stride[d];
  }
  t.shape[3] = 1;
  t.stride[3] = 1;
  return t;
}

/// [lo, hi) bytes a checked view touches (dims of size 1 contribute nothing; hi saturates).
inline void view_bytes(const void* data, const std::int64_t* shape, const std::int64_t* stride, int rank, int esize,
                       std::uintptr_t* lo, std::uintptr_t* hi) {
  const ByteRange r = byte_range(data, max_offset(shape, stride, rank), esize);
  *lo = r.lo;
  *hi = r.hi;
}

inline bool same_view(const TensorRef& a, const TensorRef& b) {
  if (a.data != b.data || a.dtype != b.dtype) return false;
  for (int d = 0; d < 4; ++d)
    if (a.shape[d] > 1 && a.stride[d] != b.stride[d]) return false;
  return true;
}

inline bool same_lse_view(const LseRef& a, const LseRef& b, const std::int64_t (&shape)[3]) {
  if (a.data != b.data) return false;
  for (int d = 0; d < 3; ++d)
    if (shape[d] > 1 && a.stride[d] != b.stride[d]) return false;
  return true;
}

}  // namespace detail

/// Validates the arguments of merge_attn_states and fills `*params`. out_a, out_b, out: [batch, seqlen, num_heads,
/// head_dim], one shape, each bf16 or fp32, any positive element strides (size-1 dims: any); lse_a, lse_b and lse
/// (lse may have a null data pointer: not written): fp32 [batch, num_heads, seqlen], 4-byte aligned, positive strides.
/// In place is allowed: `out` may be exactly the view out_a or out_b (same pointer, dtype and strides) and `lse`
/// exactly lse_a or lse_b; any other overlap of the outputs with an input, or of out with lse, is rejected.
/// Errors (invalid_argument, message starting with the argument's name: "out_b: shape[2] is 8, expected 16 from
/// out_a"): null or misaligned pointer, size outside [1, 2^31-1], a stride outside [1, 2^60], a dtype other than
/// bf16/fp32, shapes that differ, strides addressing more than 2^60 elements, out or lse overlapping itself
/// ("out: stride[2] is 4 elements, which makes elements overlap ..."), forbidden overlap. `params` is untouched on
/// error.
inline Status make_merge_params(const TensorRef& out_a, const LseRef& lse_a, const TensorRef& out_b,
                                const LseRef& lse_b, const TensorRef& out, const LseRef& lse, MergeParams* params) {
  if (params == nullptr) return Status::invalid("params: output pointer is null");
  if (Status s = detail::check_merge_tensor("out_a", out_a); !s) return s;
  if (Status s = detail::check_merge_tensor("out_b", out_b); !s) return s;
  if (Status s = detail::check_merge_tensor("out", out); !s) return s;
  static const char* kDims[4] = {"batch", "seqlen", "num_heads", "head_dim"};
  for (int d = 0; d < 4; ++d) {
    if (out_b.shape[d] != out_a.shape[d])
      return Status::invalid("out_b: shape[" + std::to_string(d) + "] (" + kDims[d] + ") is " +
                             std::to_string(out_b.shape[d]) + ", expected " + std::to_string(out_a.shape[d]) +
                             " from out_a");
    if (out.shape[d] != out_a.shape[d])
      return Status::invalid("out: shape[" + std::to_string(d) + "] (" + kDims[d] + ") is " +
                             std::to_string(out.shape[d]) + ", expected " + std::to_string(out_a.shape[d]) +
                             " from out_a");
  }
  const std::int64_t lshape[3] = {out_a.shape[0], out_a.shape[2], out_a.shape[1]};
  if (Status s = detail::check_lse_view("lse_a", lse_a, lshape); !s) return s;
  if (Status s = detail::check_lse_view("lse_b", lse_b, lshape); !s) return s;
  if (lse.data != nullptr)
    if (Status s = detail::check_lse_view("lse", lse, lshape); !s) return s;

  // overlap: the outputs must not overlap themselves; they may be exactly an input view (in place), nothing else
  if (Status s = detail::check_no_self_overlap("out", out); !s) return s;
  if (lse.data != nullptr)
    if (Status s = detail::check_no_self_overlap("lse", detail::lse_as_tensor(lse, lshape)); !s) return s;
  std::uintptr_t lo[6], hi[6];
  const TensorRef* ts[3] = {&out_a, &out_b, &out};
  for (int i = 0; i < 3; ++i)
    detail::view_bytes(ts[i]->data, ts[i]->shape, ts[i]->stride, 4, dtype_size(ts[i]->dtype), &lo[i], &hi[i]);
  const LseRef* ls[3] = {&lse_a, &lse_b, &lse};
  for (int i = 0; i < 3; ++i) detail::view_bytes(ls[i]->data, lshape, ls[i]->stride, 3, 4, &lo[3 + i], &hi[3 + i]);
  auto overlaps = [&](int i, int j) { return lo[i] < hi[j] && lo[j] < hi[i]; };
  static const char* kNames[6] = {"out_a", "out_b", "out", "lse_a", "lse_b", "lse"};
  for (int j : {0, 1, 3, 4}) {
    if (overlaps(2, j) && !(j < 2 && detail::same_view(out, *ts[j])))
      return Status::invalid(std::string("out: overlaps ") + kNames[j] +
                             "; out may only be exactly out_a or out_b (in place)");
    if (lse.data != nullptr && overlaps(5, j) && !(j >= 3 && detail::same_lse_view(lse, *ls[j - 3], lshape)))
      return Status::invalid(std::string("lse: overlaps ") + kNames[j] +
                             "; lse may only be exactly lse_a or lse_b (in place)");
  }
  if (lse.data != nullptr && overlaps(2, 5)) return Status::invalid("lse: overlaps out");

  MergeParams p;
  p.out_a = out_a;
  p.out_b = out_b;
  p.out = out;
  p.lse_a = lse_a;
  p.lse_b = lse_b;
  p.lse = lse;
  p.batch = out_a.shape[0];
  p.seqlen = out_a.shape[1];
  p.num_heads = out_a.shape[2];
  p.head_dim = out_a.shape[3];
  *params = p;
  return Status::success();
}

/// Element offsets of row (b, i, h): in out-like tensor `t` (element 0 of the row) and in an LSE view.
ZYFA_HOST_DEVICE inline std::int64_t merge_row_offset(const TensorRef& t, std::int64_t b, std::int64_t i,
                                                      std::int64_t h) {
  return b * t.stride[0] + i * t.stride[1] + h * t.stride[2];
}
ZYFA_HOST_DEVICE inline std::int64_t merge_lse_offset(const LseRef& l, std::int64_t b, std::int64_t h, std::int64_t i) {
  return b * l.stride[0] + h * l.stride[1] + i * l.stride[2];
}

namespace host {

/// merge_attn_states on host memory (see the file comment for the math): writes out [batch, seqlen, num_heads,
/// head_dim] and, unless lse.data is null, lse [batch, num_heads, seqlen] (natural log) from two partial results
/// out_a/lse_a and out_b/lse_b over disjoint key sets. Errors: everything make_merge_params rejects
/// (invalid_argument naming the argument). Synchronous, single-threaded.
inline Status merge_attn_states(const TensorRef& out_a, const LseRef& lse_a, const TensorRef& out_b,
                                const LseRef& lse_b, const TensorRef& out, const LseRef& lse) {
  MergeParams p;
  if (Status s = make_merge_params(out_a, lse_a, out_b, lse_b, out, lse, &p); !s) return s;
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t i = 0; i < p.seqlen; ++i)
      for (std::int64_t h = 0; h < p.num_heads; ++h) {
        const MergeWeights w = merge_weights(p.lse_a.data[merge_lse_offset(p.lse_a, b, h, i)],
                                             p.lse_b.data[merge_lse_offset(p.lse_b, b, h, i)]);
        const std::int64_t oa = merge_row_offset(p.out_a, b, i, h), ob = merge_row_offset(p.out_b, b, i, h),
                           oo = merge_row_offset(p.out, b, i, h);
        for (std::int64_t d = 0; d < p.head_dim; ++d)
          merge_store(p.out.data, p.out.dtype, oo + d * p.out.stride[3],
                      merge_value(w, merge_load(p.out_a.data, p.out_a.dtype, oa + d * p.out_a.stride[3]),
                                  merge_load(p.out_b.data, p.out_b.dtype, ob + d * p.out_b.stride[3])));
        if (p.lse.data != nullptr) p.lse.data[merge_lse_offset(p.lse, b, h, i)] = w.lse;
      }
  return Status::success();
}

}  // namespace host

#if !ZYFA_PLATFORM_HOST

/// The merge kernel: block-stride loop over rows (b, i, h) in that order; the block's threads stride over
/// head_dim. Every thread reads the row's LSEs, the block synchronizes, then thread 0 writes the merged LSE
/// (so an in-place lse == lse_a is read before it is written). Launch with Threads threads per block.
template <int Threads>
__global__ void __launch_bounds__(Threads) merge_attn_states_kernel(const MergeParams p) {
  const std::int64_t rows = p.rows();
  for (std::int64_t r = zyfa::dev::block_idx_x(); r < rows; r += gridDim.x) {
    const std::int64_t h = r % p.num_heads, i = (r / p.num_heads) % p.seqlen, b = r / (p.num_heads * p.seqlen);
    const MergeWeights w = merge_weights(p.lse_a.data[merge_lse_offset(p.lse_a, b, h, i)],
                                         p.lse_b.data[merge_lse_offset(p.lse_b, b, h, i)]);
    const std::int64_t oa = merge_row_offset(p.out_a, b, i, h), ob = merge_row_offset(p.out_b, b, i, h),
                       oo = merge_row_offset(p.out, b, i, h);
    for (std::int64_t d = zyfa::dev::thread_idx_x(); d < p.head_dim; d += Threads)
      merge_store(p.out.data, p.out.dtype, oo + d * p.out.stride[3],
                  merge_value(w, merge_load(p.out_a.data, p.out_a.dtype, oa + d * p.out_a.stride[3]),
                              merge_load(p.out_b.data, p.out_b.dtype, ob + d * p.out_b.stride[3])));
    zyfa::dev::sync_threads();
    if (p.lse.data != nullptr && zyfa::dev::thread_idx_x() == 0) p.lse.data[merge_lse_offset(p.lse, b, h, i)] = w.lse;
    zyfa::dev::sync_threads();
  }
}

/// merge_attn_states on the GPU (device memory; same arguments, math and errors as zyfa::host::merge_attn_states,
/// fp32 results equal to the host's within expf/logf's rounding), asynchronous on `stream`; no workspace.
/// Errors: everything make_merge_params rejects (invalid_argument); runtime_error when the launch fails.
inline Status merge_attn_states(const TensorRef& out_a, const LseRef& lse_a, const TensorRef& out_b,
                                const LseRef& lse_b, const TensorRef& out, const LseRef& lse, rt::stream_t stream) {
  MergeParams p;
  if (Status s = make_merge_params(out_a, lse_a, out_b, lse_b, out, lse, &p); !s) return s;
  const std::int64_t rows = p.rows();
  const unsigned blocks = static_cast<unsigned>(rows < 65536 * 16 ? rows : 65536 * 16);
  merge_attn_states_kernel<128><<<dim3(blocks), dim3(128), 0, stream>>>(p);
  const rt::error_t err = rt::get_last_error();
  if (err != rt::success) return Status::runtime(std::string("merge kernel launch failed: ") + rt::error_string(err));
  return Status::success();
}

#endif  // !ZYFA_PLATFORM_HOST

}  // namespace zyfa
