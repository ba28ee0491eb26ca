// zyfa/tensor.hpp -- a non-owning view of a BSHD tensor as the interface receives it.
#pragma once
#include <cstdint>

#include "dtype.hpp"

namespace zyfa {

/// Non-owning view of a 4-D tensor in BSHD order: `[batch, seqlen, num_heads, head_dim]`.
///
/// `data` points to element [0,0,0,0] (device memory for the GPU backend, host memory for the host
/// backend). `stride` is in ELEMENTS (not bytes), as in PyTorch; stride[3] must be 1 (contiguous
/// head_dim), the other three are arbitrary positive values (e.g. a slice of a packed QKV tensor).
struct TensorRef {
  void* data = nullptr;
  DType dtype = DType::bf16;
  std::int64_t shape[4] = {0, 0, 0, 0};   ///< batch, seqlen, num_heads, head_dim
  std::int64_t stride[4] = {0, 0, 0, 1};  ///< in elements

  /// A contiguous BSHD tensor (strides [s*h*d, h*d, d, 1], elements). Checks nothing: make_params
  /// validates (and names) bad sizes, pointers and alignment.
  static TensorRef contiguous(void* data, DType dtype, std::int64_t batch, std::int64_t seqlen, std::int64_t heads,
                              std::int64_t head_dim) {
    TensorRef t;
    t.data = data;
    t.dtype = dtype;
    t.shape[0] = batch;
    t.shape[1] = seqlen;
    t.shape[2] = heads;
    t.shape[3] = head_dim;
    t.stride[3] = 1;
    t.stride[2] = head_dim;
    t.stride[1] = sat_mul(heads, head_dim);
    t.stride[0] = sat_mul(seqlen, t.stride[1]);
    return t;
  }
  /// a * b for sizes, saturated at INT64_MAX (no signed overflow; make_params then reports the stride as too
  /// large); -1 when a size is negative (make_params reports the size).
  static std::int64_t sat_mul(std::int64_t a, std::int64_t b) {
    constexpr std::int64_t kMax = 0x7FFFFFFFFFFFFFFF;
    if (a < 0 || b < 0) return -1;
    if (a == 0 || b == 0) return 0;
    return a > kMax / b ? kMax : a * b;
  }
};

}  // namespace zyfa
