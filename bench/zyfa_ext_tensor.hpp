// bench/zyfa_ext_tensor.hpp -- shared by the benchmark extension's nvcc TUs: a bf16 zyfa::TensorRef from the raw
// pointer, shape and element strides that zyfa_torch_ext.cpp passes over from a torch tensor (BSHD).
#pragma once
#include <cstdint>

#include <zyfa/tensor.hpp>

namespace zyfa_bench {

/// `shape` and `stride` have 4 entries (BSHD; strides in elements, as torch reports them).
inline zyfa::TensorRef make_ref(void* p, const std::int64_t* shape, const std::int64_t* stride) {
  zyfa::TensorRef t;
  t.data = p;
  t.dtype = zyfa::DType::bf16;
  for (int d = 0; d < 4; ++d) {
    t.shape[d] = shape[d];
    t.stride[d] = stride[d];
  }
  return t;
}

}  // namespace zyfa_bench
