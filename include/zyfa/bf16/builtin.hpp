// zyfa/bf16/builtin.hpp -- the built-in BF16 kernels (head_dims.hpp x tile_config.hpp) and their run-time dispatch.
//
// Compile time: a translation unit that wants ONE built-in kernel includes this header and calls
// launch_builtin<DQK, DV>(params, stream): only that kernel is compiled. bf16/dispatch.hpp's launch_builtin(params,
// stream) (used by zyfa::flash_attn_func) dispatches over every built-in pair and so compiles them all. To compile them
// once, in separate translation units (in parallel), define ZYFA_SEPARATE_INSTANTIATION before including zyfa: the
// built-ins are then declared `extern template`, and the project adds, per pair, one TU holding
//   #include <zyfa/bf16/builtin.hpp>
//   ZYFA_BF16_INSTANTIATE(128, 128)
// (or ZYFA_BUILTIN_HEAD_DIMS(ZYFA_BF16_INSTANTIATE) for all; README "Compile time").
#pragma once
#include <string>

#include "../head_dims.hpp"
#include "../params.hpp"
#include "../platform/platform.hpp"
#include "../status.hpp"
#include "../tile_config.hpp"

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
#include "launch.hpp"

namespace zyfa::bf16 {

/// Launches the built-in kernel of head dims (DQK, DV) (tile_config.hpp picks causal or non-causal sizes).
/// `params` must come from make_params. Errors: as launch<Config>.
template <int DQK, int DV>
Status launch_builtin(const AttentionParams& params, rt::stream_t stream) {
  return params.causal ? launch<Bf16TileConfig<DQK, DV, true>>(params, stream)
                       : launch<Bf16TileConfig<DQK, DV, false>>(params, stream);
}

/// Explicit instantiation declaration / definition of launch_builtin<DQK, DV> (see the file comment), and with nvcc
/// (ZYFA_BF16_SM90_WS) of the sm_90a pipeline's sm90ws::launch_builtin_ws<DQK, DV> that dispatch.hpp calls first.
#if ZYFA_PLATFORM_CUDA && ZYFA_BF16_SM90_WS
#define ZYFA_BF16_WS_TEMPLATE_(DQK, DV)                                   \
  template ::zyfa::Status zyfa::bf16::sm90ws::launch_builtin_ws<DQK, DV>( \
      const ::zyfa::AttentionParams&, ::zyfa::rt::stream_t, bool*, const ::zyfa::bf16::sm90ws::WsOrder&);
#else
#define ZYFA_BF16_WS_TEMPLATE_(DQK, DV)
#endif
#define ZYFA_BF16_EXTERN_TEMPLATE(DQK, DV)                                                           \
  extern template ::zyfa::Status zyfa::bf16::launch_builtin<DQK, DV>(const ::zyfa::AttentionParams&, \
                                                                     ::zyfa::rt::stream_t);          \
  extern ZYFA_BF16_WS_TEMPLATE_(DQK, DV)
#define ZYFA_BF16_INSTANTIATE(DQK, DV)                                                                               \
  template ::zyfa::Status zyfa::bf16::launch_builtin<DQK, DV>(const ::zyfa::AttentionParams&, ::zyfa::rt::stream_t); \
  ZYFA_BF16_WS_TEMPLATE_(DQK, DV)

}  // namespace zyfa::bf16

#ifdef ZYFA_SEPARATE_INSTANTIATION
ZYFA_BUILTIN_HEAD_DIMS(ZYFA_BF16_EXTERN_TEMPLATE)
#endif

#endif  // !ZYFA_PLATFORM_HOST
