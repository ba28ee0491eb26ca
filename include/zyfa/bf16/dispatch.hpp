// zyfa/bf16/dispatch.hpp -- run-time dispatch of the BF16 kernels over the built-in head dims (head_dims.hpp).
// Including it compiles every built-in kernel (unless ZYFA_SEPARATE_INSTANTIATION: bf16/builtin.hpp).
#pragma once
#include <string>

#include "builtin.hpp"

/// ZYFA_BF16_SM90_WS (nvcc only): 1 (default) = on a compute-capability-9.0 device whose fatbinary holds the
/// sm_90a body of the warp-specialized wgmma/TMA kernel (bf16/sm90/: built with
/// -gencode=arch=compute_90a,code=sm_90a), flash_attn_func runs it for every built-in head-dim pair whose tensors TMA
/// can address (16-byte aligned base and strides), else the portable mma.sync kernel (sm_80/sm_89, sm_90 without
/// "a", unaligned views). 0 = the mma.sync kernel only. Every built-in pair passed the GPU test suite on the H200
/// through this path (docs/sm90-wgmma.md, "Status").
#ifndef ZYFA_BF16_SM90_WS
#define ZYFA_BF16_SM90_WS 1
#endif
#if ZYFA_PLATFORM_CUDA && ZYFA_BF16_SM90_WS
#include "sm90/launch_ws.hpp"
#endif

#if !ZYFA_PLATFORM_HOST

namespace zyfa::bf16 {

/// Runs the built-in kernel for params' head dims. Errors: StatusCode::unsupported naming head_dim_qk/head_dim_v
/// and the built-in list when the pair is not built in; otherwise as launch<Config>.
inline Status launch_builtin(const AttentionParams& p, rt::stream_t stream) {
#if ZYFA_PLATFORM_CUDA && ZYFA_BF16_SM90_WS
#define ZYFA_BF16_DISPATCH_(DQK, DV)                                              \
  if (p.head_dim_qk == DQK && p.head_dim_v == DV) {                               \
    bool launched = false;                                                        \
    const Status ws = sm90ws::launch_builtin_ws<DQK, DV>(p, stream, &launched);   \
    if (!ws || launched) return ws;                                               \
    return launch_builtin<DQK, DV>(p, stream);                                    \
  }
#else
#define ZYFA_BF16_DISPATCH_(DQK, DV) \
  if (p.head_dim_qk == DQK && p.head_dim_v == DV) return launch_builtin<DQK, DV>(p, stream);
#endif
  ZYFA_BUILTIN_HEAD_DIMS(ZYFA_BF16_DISPATCH_)
#undef ZYFA_BF16_DISPATCH_
  return Status::unsupported("head_dim_qk/head_dim_v: (" + std::to_string(p.head_dim_qk) + ", " +
                             std::to_string(p.head_dim_v) + ") is not a built-in pair (" + builtin_head_dims_text() +
                             "); any other pair of multiples of 8 up to 256 runs "
                             "through one instantiation of zyfa::bf16::launch<zyfa::bf16::KernelConfig<DQK, DV, "
                             "BlockM, BlockN, Warps>> (examples/custom_head_dim)");
}

}  // namespace zyfa::bf16

#endif  // !ZYFA_PLATFORM_HOST
