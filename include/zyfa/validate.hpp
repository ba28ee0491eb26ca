// zyfa/validate.hpp -- builds AttentionParams from tensor views and checks every precondition once.
//
// Every failure returns Status::invalid(...) whose message starts with the offending argument's name
// ("q", "k", "v", "out", "softmax_lse", "softmax_scale", "q_descale", ...). Backends add their own
// `unsupported` checks (head dims, dtype, 64-bit offsets) on top of a params struct that passed here.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include "numeric/constants.hpp"
#include "params.hpp"
#include "status.hpp"
#include "tensor.hpp"

namespace zyfa {

namespace detail {

/// Largest stride (in elements) make_params accepts for a dim with size > 1: 2^60, so that stride * element
/// size and the offset sums below stay far from int64 overflow.
inline constexpr std::int64_t kMaxStride = std::int64_t(1) << 60;

/// A float formatted with %g ("1e-40", "3.40282e+38"; std::to_string would print 0.000000 for tiny values).
inline std::string fmt_float(float x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(x));
  return buf;
}

/// FlashAttention name of BSHD dim `d` of a q-side (q, out) or k-side (k, v) tensor, for messages.
inline const char* dim_name(int d, bool is_q_side, bool is_v_side) {
  switch (d) {
    case 0:
      return "batch";
    case 1:
      return is_q_side ? "seqlen_q" : "seqlen_k";
    case 2:
      return is_q_side ? "num_heads" : "num_heads_k";
    default:
      return is_v_side ? "head_dim_v" : "head_dim_qk";
  }
}

/// Checks one tensor view on its own (invalid_argument naming `name`): non-null 16-byte aligned data,
/// sizes in [1, 2^31-1], stride[3] == 1, head_dim a multiple of 16 bytes, strides of dims with size > 1 in
/// (0, 2^60] and multiples of 16 bytes, max offset below the saturation limit of max_offset.
inline Status check_tensor(const char* name, const TensorRef& t, bool is_q_side, bool is_v_side) {
  const std::string n = name;
  if (t.data == nullptr) return Status::invalid(n + ": data pointer is null");
  for (int d = 0; d < 4; ++d) {
    if (t.shape[d] <= 0)
      return Status::invalid(n + ": shape[" + std::to_string(d) + "] (" + dim_name(d, is_q_side, is_v_side) +
                             ") must be > 0, got " + std::to_string(t.shape[d]));
    if (t.shape[d] > std::numeric_limits<std::int32_t>::max())
      return Status::invalid(n + ": shape[" + std::to_string(d) + "] (" + dim_name(d, is_q_side, is_v_side) + ") is " +
                             std::to_string(t.shape[d]) + ", larger than 2^31-1");
  }
  if (t.stride[3] != 1)
    return Status::invalid(n + ": stride[3] must be 1 (contiguous head_dim), got " + std::to_string(t.stride[3]));
  const int esize = dtype_size(t.dtype);
  if (reinterpret_cast<std::uintptr_t>(t.data) % 16 != 0)
    return Status::invalid(n + ": data pointer must be 16-byte aligned");
  // head_dim first: for contiguous tensors a bad head_dim also makes the strides bad, and this message is clearer
  if ((t.shape[3] * esize) % 16 != 0)
    return Status::invalid(n + ": shape[3] (" + dim_name(3, is_q_side, is_v_side) + ") is " +
                           std::to_string(t.shape[3]) + "; it must be a multiple of " + std::to_string(16 / esize) +
                           " for " + dtype_name(t.dtype) + " (16-byte rows)");
  for (int d = 0; d < 3; ++d) {
    if (t.shape[d] == 1) continue;  // the stride of a size-1 dim is never used
    if (t.stride[d] <= 0)
      return Status::invalid(n + ": stride[" + std::to_string(d) + "] must be > 0, got " + std::to_string(t.stride[d]));
    if (t.stride[d] > kMaxStride)  // before stride * esize below, which could overflow int64
      return Status::invalid(n + ": stride[" + std::to_string(d) + "] is " + std::to_string(t.stride[d]) +
                             " elements, larger than 2^60");
    if ((t.stride[d] * esize) % 16 != 0)
      return Status::invalid(n + ": stride[" + std::to_string(d) + "] is " + std::to_string(t.stride[d]) +
                             " elements; it must be a multiple of 16 bytes (" + std::to_string(16 / esize) +
                             " elements of " + dtype_name(t.dtype) + ")");
  }
  if (max_offset(t.shape, t.stride, 4) == std::numeric_limits<std::int64_t>::max())
    return Status::invalid(n + ": shape and strides address more than 2^60 elements");
  return Status::success();
}

/// invalid_argument "<name>: shape[d] (<dim>) is X, expected Y from <from>" unless t.shape[d] == want.
inline Status expect_dim(const char* name, const TensorRef& t, int d, std::int64_t want, const char* from,
                         bool is_q_side, bool is_v_side) {
  if (t.shape[d] == want) return Status::success();
  return Status::invalid(std::string(name) + ": shape[" + std::to_string(d) + "] (" +
                         dim_name(d, is_q_side, is_v_side) + ") is " + std::to_string(t.shape[d]) + ", expected " +
                         std::to_string(want) + " from " + from);
}

/// A descale must be exactly 1 for bf16 inputs; for FP8, finite, > 0 and >= FLT_MIN (invalid_argument naming
/// `name` otherwise).
inline Status check_descale(const char* name, float value, bool fp8) {
  if (!fp8) {
    if (value != 1.0f)
      return Status::invalid(std::string(name) + ": only FP8 inputs take a descale; it must be 1 for bf16");
    return Status::success();
  }
  if (!std::isfinite(value) || !(value > 0.0f))
    return Status::invalid(std::string(name) + ": must be finite and > 0, got " + fmt_float(value));
  if (value < std::numeric_limits<float>::min())
    return Status::invalid(std::string(name) + ": " + fmt_float(value) +
                           " is subnormal; it must be >= FLT_MIN (1.17549e-38)");
  return Status::success();
}

/// True if the fp32 value is finite and normal (|x| >= FLT_MIN), i.e. usable as a scale factor.
inline bool is_normal_finite(float x) { return std::isfinite(x) && std::fabs(x) >= std::numeric_limits<float>::min(); }

/// Byte range [lo, hi) a validated tensor can touch: from its data pointer to one past its largest element
/// (max_offset in elements times the element size). Dims of size 1 contribute nothing. hi saturates.
struct ByteRange {
  std::uintptr_t lo, hi;
  bool overlaps(const ByteRange& o) const { return lo < o.hi && o.lo < hi; }
};
inline ByteRange byte_range(const void* data, std::int64_t max_elem_offset, int esize) {
  const std::uintptr_t lo = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t len = (static_cast<std::uintptr_t>(max_elem_offset) + 1) * static_cast<std::uintptr_t>(esize);
  const std::uintptr_t hi = lo + len < lo ? std::numeric_limits<std::uintptr_t>::max() : lo + len;
  return {lo, hi};
}
inline ByteRange byte_range(const TensorRef& t) {
  return byte_range(t.data, max_offset(t.shape, t.stride, 4), dtype_size(t.dtype));
}

/// Checks that no two distinct index tuples of `t` (validated by check_tensor) address the same element:
/// with the dims of size > 1 sorted by stride, each stride must be >= the span ((shape-1)*stride summed, + 1)
/// of all faster-varying dims. This is sufficient, and necessary for the usual (nested) layouts.
inline Status check_no_self_overlap(const char* name, const TensorRef& t) {
  int dims[4], nd = 0;
  for (int d = 0; d < 4; ++d)
    if (t.shape[d] > 1) dims[nd++] = d;
  // order by stride, ties by dim index descending (the innermost dim first), so the message names the outer
  // of two dims with equal strides (insertion sort of <= 4 entries)
  auto before = [&](int a, int b) { return t.stride[a] != t.stride[b] ? t.stride[a] < t.stride[b] : a > b; };
  for (int i = 1; i < nd; ++i)
    for (int j = i; j > 0 && before(dims[j], dims[j - 1]); --j) {
      const int tmp = dims[j];
      dims[j] = dims[j - 1];
      dims[j - 1] = tmp;
    }
  std::int64_t span = 1;  // elements covered by the faster dims; < 2^60 after check_tensor
  for (int i = 0; i < nd; ++i) {
    const int d = dims[i];
    if (t.stride[d] < span)
      return Status::invalid(std::string(name) + ": stride[" + std::to_string(d) + "] is " +
                             std::to_string(t.stride[d]) + " elements, which makes elements overlap: it must be >= " +
                             std::to_string(span) + " (the span of the faster-varying dims) for an output");
    span += (t.shape[d] - 1) * t.stride[d];
  }
  return Status::success();
}

}  // namespace detail

/// Validates q/k/v/out/softmax_lse/options and fills `*params`. Shapes (BSHD, see AttentionParams):
/// q [b, seqlen_q, num_heads, head_dim_qk]; k [b, seqlen_k, num_heads_k, head_dim_qk];
/// v [b, seqlen_k, num_heads_k, head_dim_v]; out [b, seqlen_q, num_heads, head_dim_v] (bf16);
/// softmax_lse: nullptr or fp32 [b, num_heads, seqlen_q] contiguous, 4-byte aligned.
/// Errors (StatusCode::invalid_argument, message names the argument): null or misaligned pointer
/// (16 bytes for tensors), non-positive size, size > 2^31-1, stride[3] != 1, a stride (of a dim with size > 1)
/// that is non-positive, > 2^60 or not a multiple of 16 bytes, strides addressing more than 2^60 elements,
/// head_dim not a multiple of 16 bytes, shape mismatch between tensors, num_heads not a multiple of
/// num_heads_k, q/k/v dtypes differ, FP8 given as e4m3fnuz (e4m3fn required), out not bf16;
/// aliasing: out's strides make two of its elements overlap ("out: stride[2] is 8 elements, which makes
/// elements overlap ..."; rule: with the size > 1 dims sorted by stride, each stride >= the span of the
/// faster dims), out's byte range intersects q's, k's or v's ("out: overlaps q"), softmax_lse's byte range
/// intersects out's, q's, k's or v's ("softmax_lse: overlaps out"); byte ranges are [data, one past the last
/// element), a conservative test (q, k and v may alias each other);
/// softmax_scale not finite or <= 0, or softmax_scale * log2(e) not a finite normal fp32 number
/// ("softmax_scale: ..."); descale not finite, <= 0 or subnormal (< FLT_MIN) (FP8) or != 1 (bf16);
/// FP8: q_descale * k_descale * softmax_scale * log2(e) (fp32) not finite or not normal
/// ("q_descale/k_descale: ..."). `params` is left untouched on error.
inline Status make_params(const TensorRef& q, const TensorRef& k, const TensorRef& v, const TensorRef& out,
                          float* softmax_lse, const AttentionOptions& opt, AttentionParams* params) {
  using detail::check_tensor;
  using detail::expect_dim;
  if (params == nullptr) return Status::invalid("params: output pointer is null");
  if (Status s = check_tensor("q", q, true, false); !s) return s;
  if (Status s = check_tensor("k", k, false, false); !s) return s;
  if (Status s = check_tensor("v", v, false, true); !s) return s;
  if (Status s = check_tensor("out", out, true, true); !s) return s;

  // dtypes
  if (q.dtype != DType::bf16 && !is_fp8(q.dtype))
    return Status::invalid(std::string("q: dtype ") + dtype_name(q.dtype) + " is not supported (bf16 or e4m3fn)");
  if (k.dtype != q.dtype)
    return Status::invalid(std::string("k: dtype ") + dtype_name(k.dtype) + " differs from q's " + dtype_name(q.dtype));
  if (v.dtype != q.dtype)
    return Status::invalid(std::string("v: dtype ") + dtype_name(v.dtype) + " differs from q's " + dtype_name(q.dtype));
  if (q.dtype == DType::e4m3fnuz)
    return Status::invalid("q: dtype e4m3fnuz given where e4m3fn (OCP FP8, bias 7) is required");
  if (out.dtype != DType::bf16)
    return Status::invalid(std::string("out: dtype ") + dtype_name(out.dtype) + " is not supported (bf16)");

  // shapes
  const std::int64_t b = q.shape[0], sq = q.shape[1], h = q.shape[2], dqk = q.shape[3];
  const std::int64_t sk = k.shape[1], hk = k.shape[2], dv = v.shape[3];
  if (Status s = expect_dim("k", k, 0, b, "q", false, false); !s) return s;
  if (Status s = expect_dim("k", k, 3, dqk, "q (head_dim_qk)", false, false); !s) return s;
  if (Status s = expect_dim("v", v, 0, b, "q", false, true); !s) return s;
  if (Status s = expect_dim("v", v, 1, sk, "k (seqlen_k)", false, true); !s) return s;
  if (Status s = expect_dim("v", v, 2, hk, "k (num_heads_k)", false, true); !s) return s;
  if (Status s = expect_dim("out", out, 0, b, "q", true, true); !s) return s;
  if (Status s = expect_dim("out", out, 1, sq, "q (seqlen_q)", true, true); !s) return s;
  if (Status s = expect_dim("out", out, 2, h, "q (num_heads)", true, true); !s) return s;
  if (Status s = expect_dim("out", out, 3, dv, "v (head_dim_v)", true, true); !s) return s;
  if (h % hk != 0)
    return Status::invalid("k: num_heads_k (" + std::to_string(hk) + ") must divide q's num_heads (" +
                           std::to_string(h) + ")");

  if (softmax_lse != nullptr && reinterpret_cast<std::uintptr_t>(softmax_lse) % 4 != 0)
    return Status::invalid("softmax_lse: pointer must be 4-byte aligned (fp32)");

  // aliasing: out must not overlap itself or the inputs; softmax_lse must not overlap out or the inputs.
  // Conservative: whole byte ranges [first byte, one past the last element) are compared, so an out
  // interleaved with q/k/v in one packed buffer is rejected even if no element is shared.
  if (Status s = detail::check_no_self_overlap("out", out); !s) return s;
  const detail::ByteRange rq = detail::byte_range(q), rk = detail::byte_range(k), rv = detail::byte_range(v),
                          ro = detail::byte_range(out);
  if (ro.overlaps(rq))
    return Status::invalid("out: overlaps q (their byte ranges intersect); out must not alias an input");
  if (ro.overlaps(rk))
    return Status::invalid("out: overlaps k (their byte ranges intersect); out must not alias an input");
  if (ro.overlaps(rv))
    return Status::invalid("out: overlaps v (their byte ranges intersect); out must not alias an input");
  if (softmax_lse != nullptr) {
    // b * h * sq <= out's element count < 2^60 (out does not overlap itself), so this does not overflow
    const detail::ByteRange rl = detail::byte_range(softmax_lse, b * h * sq - 1, 4);
    if (rl.overlaps(ro)) return Status::invalid("softmax_lse: overlaps out (their byte ranges intersect)");
    if (rl.overlaps(rq)) return Status::invalid("softmax_lse: overlaps q (their byte ranges intersect)");
    if (rl.overlaps(rk)) return Status::invalid("softmax_lse: overlaps k (their byte ranges intersect)");
    if (rl.overlaps(rv)) return Status::invalid("softmax_lse: overlaps v (their byte ranges intersect)");
  }

  const float scale =
      opt.softmax_scale ? *opt.softmax_scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(dqk)));
  if (!std::isfinite(scale) || !(scale > 0.0f))
    return Status::invalid("softmax_scale: must be finite and > 0, got " + detail::fmt_float(scale));
  // The kernels and the host paths exponentiate in the log2 domain with softmax_scale * log2(e) (times
  // q_descale * k_descale for FP8) as one fp32 factor: it must be a finite, normal fp32 number.
  const float scale_log2 = scale_softmax_log2(scale, 1.0f, 1.0f);
  if (!detail::is_normal_finite(scale_log2))
    return Status::invalid("softmax_scale: " + detail::fmt_float(scale) +
                           " * log2(e) = " + detail::fmt_float(scale_log2) + " is not a finite, normal fp32 number");
  const bool fp8 = is_fp8(q.dtype);
  if (Status s = detail::check_descale("q_descale", opt.q_descale, fp8); !s) return s;
  if (Status s = detail::check_descale("k_descale", opt.k_descale, fp8); !s) return s;
  if (Status s = detail::check_descale("v_descale", opt.v_descale, fp8); !s) return s;
  if (fp8) {
    const float c = scale_softmax_log2(scale, opt.q_descale, opt.k_descale);
    if (!detail::is_normal_finite(c))
      return Status::invalid(
          "q_descale/k_descale: q_descale * k_descale * softmax_scale * log2(e) = " + detail::fmt_float(opt.q_descale) +
          " * " + detail::fmt_float(opt.k_descale) + " * " + detail::fmt_float(scale) +
          " * 1.4427 = " + detail::fmt_float(c) + " is not a finite, normal fp32 number");
  }

  AttentionParams p;
  p.q = q.data;
  p.k = k.data;
  p.v = v.data;
  p.out = out.data;
  p.softmax_lse = softmax_lse;
  p.qkv_dtype = q.dtype;
  p.out_dtype = out.dtype;
  p.batch = b;
  p.seqlen_q = sq;
  p.seqlen_k = sk;
  p.num_heads = h;
  p.num_heads_k = hk;
  p.head_dim_qk = dqk;
  p.head_dim_v = dv;
  p.q_batch_stride = q.stride[0];
  p.q_row_stride = q.stride[1];
  p.q_head_stride = q.stride[2];
  p.k_batch_stride = k.stride[0];
  p.k_row_stride = k.stride[1];
  p.k_head_stride = k.stride[2];
  p.v_batch_stride = v.stride[0];
  p.v_row_stride = v.stride[1];
  p.v_head_stride = v.stride[2];
  p.out_batch_stride = out.stride[0];
  p.out_row_stride = out.stride[1];
  p.out_head_stride = out.stride[2];
  p.softmax_scale = scale;
  p.causal = opt.causal;
  p.q_descale = opt.q_descale;
  p.k_descale = opt.k_descale;
  p.v_descale = opt.v_descale;
  p.scale_softmax_log2 = fp8 ? scale_softmax_log2(scale, opt.q_descale, opt.k_descale) : scale_log2;
  *params = p;
  return Status::success();
}

/// Validates a variable-length (packed) call, FlashAttention's flash_attn_varlen_func, and fills `*params`.
/// Tensors are the packed token dims as a batch of one (BSHD views, element strides):
///   q [1, total_q, num_heads, head_dim_qk], k [1, total_k, num_heads_k, head_dim_qk],
///   v [1, total_k, num_heads_k, head_dim_v], out [1, total_q, num_heads, head_dim_v] (bf16);
///   softmax_lse: nullptr or fp32 [num_heads, total_q] contiguous (natural log).
/// cu_seqlens_q / cu_seqlens_k: int32 [batch + 1] offsets (in the memory the backend reads: host memory for the host
/// backend, device memory for the GPU), non-decreasing from 0; sequence b is rows [cu_seqlens_q[b], cu_seqlens_q[b+1])
/// of q/out against keys [cu_seqlens_k[b], cu_seqlens_k[b+1]) of k/v; empty sequences are allowed (no query row:
/// nothing written; no key: out 0 and lse -inf). Causal is bottom-right aligned per sequence. max_seqlen_q /
/// max_seqlen_k: the largest query / key length of a sequence (the GPU grid covers max_seqlen_q rows per sequence).
/// Errors (invalid_argument, naming the argument): everything make_params rejects for the packed tensors; q's
/// shape[0] not 1 ("q: shape[0] must be 1 ..."); cu_seqlens_q/cu_seqlens_k null or not 4-byte aligned; batch < 1
/// or > 2^31-2; out or softmax_lse overlapping cu_seqlens_q/cu_seqlens_k ("out: overlaps cu_seqlens_k");
/// max_seqlen_q outside [1, total_q]; max_seqlen_k outside [0, total_k]. The offsets themselves are
/// not read here (they may be device memory): check_cu_seqlens checks host copies, and the host backend does.
/// `params` is left untouched on error.
inline Status make_varlen_params(const TensorRef& q, const TensorRef& k, const TensorRef& v, const TensorRef& out,
                                 float* softmax_lse, const std::int32_t* cu_seqlens_q, const std::int32_t* cu_seqlens_k,
                                 std::int64_t batch, std::int64_t max_seqlen_q, std::int64_t max_seqlen_k,
                                 const AttentionOptions& opt, AttentionParams* params) {
  if (params == nullptr) return Status::invalid("params: output pointer is null");
  AttentionParams p;
  if (Status s = make_params(q, k, v, out, softmax_lse, opt, &p); !s) return s;
  if (q.shape[0] != 1)
    return Status::invalid(
        "q: shape[0] must be 1 for the packed varlen layout [1, total_q, num_heads, head_dim_qk], got " +
        std::to_string(q.shape[0]));
  if (cu_seqlens_q == nullptr) return Status::invalid("cu_seqlens_q: pointer is null");
  if (cu_seqlens_k == nullptr) return Status::invalid("cu_seqlens_k: pointer is null");
  if (reinterpret_cast<std::uintptr_t>(cu_seqlens_q) % 4 != 0)
    return Status::invalid("cu_seqlens_q: pointer must be 4-byte aligned (int32)");
  if (reinterpret_cast<std::uintptr_t>(cu_seqlens_k) % 4 != 0)
    return Status::invalid("cu_seqlens_k: pointer must be 4-byte aligned (int32)");
  if (batch < 1 || batch > std::numeric_limits<std::int32_t>::max() - 1)
    return Status::invalid("cu_seqlens_q: batch (its length - 1) must be in [1, 2^31-2], got " + std::to_string(batch));
  // The outputs must not overlap the offsets: the kernels read cu_seqlens while writing out and softmax_lse.
  const detail::ByteRange rcq = detail::byte_range(cu_seqlens_q, batch, 4),
                          rck = detail::byte_range(cu_seqlens_k, batch, 4), ro = detail::byte_range(out);
  if (ro.overlaps(rcq)) return Status::invalid("out: overlaps cu_seqlens_q (their byte ranges intersect)");
  if (ro.overlaps(rck)) return Status::invalid("out: overlaps cu_seqlens_k (their byte ranges intersect)");
  if (softmax_lse != nullptr) {
    const detail::ByteRange rl = detail::byte_range(softmax_lse, q.shape[2] * q.shape[1] - 1, 4);
    if (rl.overlaps(rcq)) return Status::invalid("softmax_lse: overlaps cu_seqlens_q (their byte ranges intersect)");
    if (rl.overlaps(rck)) return Status::invalid("softmax_lse: overlaps cu_seqlens_k (their byte ranges intersect)");
  }
  const std::int64_t total_q = q.shape[1], total_k = k.shape[1];
  if (max_seqlen_q < 1 || max_seqlen_q > total_q)
    return Status::invalid("max_seqlen_q: " + std::to_string(max_seqlen_q) +
                           " must be in [1, total_q = " + std::to_string(total_q) + "]");
  if (max_seqlen_k < 0 || max_seqlen_k > total_k)
    return Status::invalid("max_seqlen_k: " + std::to_string(max_seqlen_k) +
                           " must be in [0, total_k = " + std::to_string(total_k) + "]");
  p.cu_seqlens_q = cu_seqlens_q;
  p.cu_seqlens_k = cu_seqlens_k;
  p.total_q = total_q;
  p.total_k = total_k;
  p.batch = batch;
  p.seqlen_q = max_seqlen_q;
  p.seqlen_k = max_seqlen_k;
  p.q_batch_stride = p.k_batch_stride = p.v_batch_stride = p.out_batch_stride = 0;
  *params = p;
  return Status::success();
}

/// Checks the contents of host-memory offsets `cu` [batch + 1] named `name` ("cu_seqlens_q"/"cu_seqlens_k"):
/// cu[0] == 0, non-decreasing, cu[batch] <= total (rows past it are not touched), and no sequence longer than
/// max_seqlen. Errors: invalid_argument naming `name` and the entry ("cu_seqlens_k: entry 3 (17) is less than entry
/// 2 (20); offsets must be non-decreasing"), or "max_seqlen_q: ..." when a sequence is longer than max_seqlen.
inline Status check_cu_seqlens(const char* name, const char* max_name, const std::int32_t* cu, std::int64_t batch,
                               std::int64_t total, std::int64_t max_seqlen) {
  const std::string n = name;
  if (cu == nullptr) return Status::invalid(n + ": pointer is null");
  if (batch < 1) return Status::invalid(n + ": batch (its length - 1) must be >= 1, got " + std::to_string(batch));
  if (cu[0] != 0) return Status::invalid(n + ": entry 0 must be 0, got " + std::to_string(cu[0]));
  for (std::int64_t b = 0; b < batch; ++b) {
    if (cu[b + 1] < cu[b])
      return Status::invalid(n + ": entry " + std::to_string(b + 1) + " (" + std::to_string(cu[b + 1]) +
                             ") is less than entry " + std::to_string(b) + " (" + std::to_string(cu[b]) +
                             "); offsets must be non-decreasing");
    if (cu[b + 1] - cu[b] > max_seqlen)
      return Status::invalid(std::string(max_name) + ": " + std::to_string(max_seqlen) + " is less than sequence " +
                             std::to_string(b) + "'s length " + std::to_string(cu[b + 1] - cu[b]) + " (" + n + ")");
  }
  if (cu[batch] > total)
    return Status::invalid(n + ": last entry (" + std::to_string(cu[batch]) + ") exceeds the packed length " +
                           std::to_string(total));
  return Status::success();
}

}  // namespace zyfa
