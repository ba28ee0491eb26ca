// bench/zyfa_torch_ext_kernel.cu -- the nvcc half of the benchmark extension: calls zyfa::flash_attn_func.
#include <cstdint>
#include <string>

#include <zyfa/flash_attn.hpp>

#include "zyfa_ext_tensor.hpp"

using zyfa_bench::make_ref;

std::string zyfa_ext_forward(void* q, const std::int64_t* q_shape, const std::int64_t* q_stride, void* k,
                             const std::int64_t* k_shape, const std::int64_t* k_stride, void* v,
                             const std::int64_t* v_shape, const std::int64_t* v_stride, void* out,
                             const std::int64_t* o_shape, const std::int64_t* o_stride, float* lse, bool causal,
                             std::int64_t stream) {
  zyfa::AttentionOptions opt;
  opt.causal = causal;
  const zyfa::Status s = zyfa::flash_attn_func(make_ref(q, q_shape, q_stride), make_ref(k, k_shape, k_stride),
                                               make_ref(v, v_shape, v_stride), make_ref(out, o_shape, o_stride), lse,
                                               opt, reinterpret_cast<cudaStream_t>(stream));
  return s.ok() ? std::string() : s.message;
}
