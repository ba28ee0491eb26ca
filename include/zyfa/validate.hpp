// zyfa/validate.hpp -- builds AttentionParams from tensor views and checks every precondition once.
//
// Every failure returns Status::invalid(...) whose message starts with the offending argument's name
// ("q", "k", "v", "out", "softmax_lse", "softmax_scale", "q_descale", ...). Backends add their own
// `unsupported` checks (head dims, dtype, 64-bit offsets) on top of a params struct that passed here.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "params.hpp"
#include "status.hpp"
#include "tensor.hpp"

namespace zyfa {

namespace detail {

inline const char* dim_name(int d, bool is_q_side, bool is_v_side) {
  switch (d) {
    case 0: return "batch";
    case 1: return is_q_side ? "seqlen_q" : "seqlen_k";
    case 2: return is_q_side ? "num_heads" : "num_heads_k";
    default: return is_v_side ? "head_dim_v" : "head_dim_qk";
  }
}

// Largest element offset reachable in a tensor (sum of (shape-1)*stride), saturating at INT64_MAX.
inline std::int64_t max_offset(const std::int64_t* shape, const std::int64_t* stride, int rank) {
  long double acc = 0;
  for (int i = 0; i < rank; ++i) acc += static_cast<long double>(shape[i] - 1) * stride[i];
  if (acc >= static_cast<long double>(std::numeric_limits<std::int64_t>::max() / 8))
    return std::numeric_limits<std::int64_t>::max();
  return static_cast<std::int64_t>(acc);
}

inline Status check_tensor(const char* name, const TensorRef& t, bool is_q_side, bool is_v_side) {
  const std::string n = name;
  if (t.data == nullptr) return Status::invalid(n + ": data pointer is null");
  for (int d = 0; d < 4; ++d) {
    if (t.shape[d] <= 0)
      return Status::invalid(n + ": shape[" + std::to_string(d) + "] (" +
                             dim_name(d, is_q_side, is_v_side) + ") must be > 0, got " +
                             std::to_string(t.shape[d]));
    if (t.shape[d] > std::numeric_limits<std::int32_t>::max())
      return Status::invalid(n + ": shape[" + std::to_string(d) + "] (" +
                             dim_name(d, is_q_side, is_v_side) + ") is " + std::to_string(t.shape[d]) +
                             ", larger than 2^31-1");
  }
  if (t.stride[3] != 1)
    return Status::invalid(n + ": stride[3] must be 1 (contiguous head_dim), got " +
                           std::to_string(t.stride[3]));
  const int esize = dtype_size(t.dtype);
  if (reinterpret_cast<std::uintptr_t>(t.data) % 16 != 0)
    return Status::invalid(n + ": data pointer must be 16-byte aligned");
  // head_dim first: for contiguous tensors a bad head_dim also makes the strides bad, and this message is clearer
  if ((t.shape[3] * esize) % 16 != 0)
    return Status::invalid(n + ": shape[3] (" + dim_name(3, is_q_side, is_v_side) + ") is " +
                           std::to_string(t.shape[3]) + "; it must be a multiple of " +
                           std::to_string(16 / esize) + " for " + dtype_name(t.dtype) +
                           " (16-byte rows)");
  for (int d = 0; d < 3; ++d) {
    if (t.shape[d] == 1) continue;  // the stride of a size-1 dim is never used
    if (t.stride[d] <= 0)
      return Status::invalid(n + ": stride[" + std::to_string(d) + "] must be > 0, got " +
                             std::to_string(t.stride[d]));
    if ((t.stride[d] * esize) % 16 != 0)
      return Status::invalid(n + ": stride[" + std::to_string(d) + "] is " +
                             std::to_string(t.stride[d]) + " elements; it must be a multiple of 16 bytes (" +
                             std::to_string(16 / esize) + " elements of " + dtype_name(t.dtype) + ")");
  }
  if (max_offset(t.shape, t.stride, 4) == std::numeric_limits<std::int64_t>::max())
    return Status::invalid(n + ": shape and strides address more than 2^60 elements");
  return Status::success();
}

inline Status expect_dim(const char* name, const TensorRef& t, int d, std::int64_t want,
                         const char* from, bool is_q_side, bool is_v_side) {
  if (t.shape[d] == want) return Status::success();
  return Status::invalid(std::string(name) + ": shape[" + std::to_string(d) + "] (" +
                         dim_name(d, is_q_side, is_v_side) + ") is " + std::to_string(t.shape[d]) +
                         ", expected " + std::to_string(want) + " from " + from);
}

inline Status check_descale(const char* name, float value, bool fp8) {
  if (!fp8) {
    if (value != 1.0f)
      return Status::invalid(std::string(name) + ": only FP8 inputs take a descale; it must be 1 for bf16");
    return Status::success();
  }
  if (!std::isfinite(value) || !(value > 0.0f))
    return Status::invalid(std::string(name) + ": must be finite and > 0, got " + std::to_string(value));
  return Status::success();
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
  return extent_bytes(batch, seqlen_q, num_heads, head_dim_qk, q_batch_stride, q_row_stride,
                      q_head_stride, e) > lim ||
         extent_bytes(batch, seqlen_k, num_heads_k, head_dim_qk, k_batch_stride, k_row_stride,
                      k_head_stride, e) > lim ||
         extent_bytes(batch, seqlen_k, num_heads_k, head_dim_v, v_batch_stride, v_row_stride,
                      v_head_stride, e) > lim ||
         extent_bytes(batch, seqlen_q, num_heads, head_dim_v, out_batch_stride, out_row_stride,
                      out_head_stride, eo) > lim ||
         batch * num_heads * seqlen_q * 4 > lim;
}

/// Validates q/k/v/out/softmax_lse/options and fills `*params`. Shapes (BSHD, see AttentionParams):
/// q [b, seqlen_q, num_heads, head_dim_qk]; k [b, seqlen_k, num_heads_k, head_dim_qk];
/// v [b, seqlen_k, num_heads_k, head_dim_v]; out [b, seqlen_q, num_heads, head_dim_v] (bf16);
/// softmax_lse: nullptr or fp32 [b, num_heads, seqlen_q] contiguous, 4-byte aligned.
/// Errors (StatusCode::invalid_argument, message names the argument): null or misaligned pointer
/// (16 bytes for tensors), non-positive size, size > 2^31-1, stride[3] != 1, a stride (of a dim with size > 1)
/// that is non-positive or not a multiple of 16 bytes, head_dim not a multiple of 16 bytes, shape mismatch
/// between tensors, num_heads not a multiple of num_heads_k, q/k/v dtypes differ, FP8 given as e4m3fnuz
/// (e4m3fn required), out not bf16, softmax_scale not finite or <= 0, descale not finite or <= 0 (FP8) or != 1
/// (bf16). `params` is left untouched on error.
inline Status make_params(const TensorRef& q, const TensorRef& k, const TensorRef& v,
                          const TensorRef& out, float* softmax_lse, const AttentionOptions& opt,
                          AttentionParams* params) {
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

  const float scale = opt.softmax_scale ? *opt.softmax_scale
                                        : static_cast<float>(1.0 / std::sqrt(static_cast<double>(dqk)));
  if (!std::isfinite(scale) || !(scale > 0.0f))
    return Status::invalid("softmax_scale: must be finite and > 0, got " + std::to_string(scale));
  const bool fp8 = is_fp8(q.dtype);
  if (Status s = detail::check_descale("q_descale", opt.q_descale, fp8); !s) return s;
  if (Status s = detail::check_descale("k_descale", opt.k_descale, fp8); !s) return s;
  if (Status s = detail::check_descale("v_descale", opt.v_descale, fp8); !s) return s;

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
  *params = p;
  return Status::success();
}

}  // namespace zyfa
