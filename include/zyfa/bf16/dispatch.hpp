// zyfa/bf16/dispatch.hpp -- run-time dispatch of the BF16 kernels over the built-in head dims (head_dims.hpp).
// Including it compiles every built-in kernel (unless ZYFA_SEPARATE_INSTANTIATION: bf16/builtin.hpp).
#pragma once
#include <string>

#include "builtin.hpp"

#if !ZYFA_PLATFORM_HOST

namespace zyfa::bf16 {

/// Runs the built-in kernel for params' head dims. Errors: StatusCode::unsupported naming head_dim_qk/head_dim_v
/// and the built-in list when the pair is not built in; otherwise as launch<Config>.
inline Status launch_builtin(const AttentionParams& p, rt::stream_t stream) {
#if ZYFA_PLATFORM_CUDA && ZYFA_BF16_SM90_WS
#define ZYFA_BF16_DISPATCH_(DQK, DV)                                            \
  if (p.head_dim_qk == DQK && p.head_dim_v == DV) {                             \
    bool launched = false;                                                      \
    const Status ws = sm90ws::launch_builtin_ws<DQK, DV>(p, stream, &launched); \
    if (!ws || launched) return ws;                                             \
    return launch_builtin<DQK, DV>(p, stream);                                  \
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

/// Variable-length params (make_varlen_params): the sm_90a wgmma kernel of params' head dims when it applies
/// (`*launched` = true), else `*launched` = false and success: the caller (flash_attn_varlen_func) then runs the
/// portable kernel's variable-length form (launch_builtin: fwd_kernel<Config, true>). Errors: unsupported for a pair
/// that is not built in; otherwise as sm90ws::launch_ws.
inline Status launch_builtin_varlen(const AttentionParams& p, rt::stream_t stream, bool* launched) {
  *launched = false;
#if ZYFA_PLATFORM_CUDA && ZYFA_BF16_SM90_WS
#define ZYFA_BF16_VARLEN_(DQK, DV) \
  if (p.head_dim_qk == DQK && p.head_dim_v == DV) return sm90ws::launch_builtin_ws<DQK, DV>(p, stream, launched);
#else
#define ZYFA_BF16_VARLEN_(DQK, DV) \
  if (p.head_dim_qk == DQK && p.head_dim_v == DV) return Status::success();
#endif
  ZYFA_BUILTIN_HEAD_DIMS(ZYFA_BF16_VARLEN_)
#undef ZYFA_BF16_VARLEN_
  (void)stream;
  return Status::unsupported("head_dim_qk/head_dim_v: (" + std::to_string(p.head_dim_qk) + ", " +
                             std::to_string(p.head_dim_v) + ") is not a built-in pair (" + builtin_head_dims_text() +
                             ")");
}

}  // namespace zyfa::bf16

#endif  // !ZYFA_PLATFORM_HOST
