// zyfa/fp8/dispatch.hpp -- where flash_attn_func sends FP8 (e4m3fn) inputs on a GPU: one function per target.
// gfx950: the generated kernels of fp8/gfx950/ (attention.hpp: e4m3fn, head dims (128, 128) and MLA (192, 128), found
// in the generated dispatch table; the zyfa recipe of host/fp8_spec.hpp); NVIDIA: the sm_90a kernel of fp8/sm90/
// (zyfa's Lean P recipe).
#pragma once
#include <string>

#include "../dtype.hpp"
#include "../params.hpp"
#include "../platform/platform.hpp"
#include "../status.hpp"
#if ZYFA_PLATFORM_CUDA
#include "sm90/launch.hpp"
#endif
#if ZYFA_PLATFORM_HIP
#include "gfx950/attention.hpp"
#endif

#if !ZYFA_PLATFORM_HOST

namespace zyfa::fp8 {

/// Runs FP8 forward attention for validated params (qkv_dtype e4m3fn or e4m3fnuz) on the current device.
/// NVIDIA: fp8::sm90::launch_builtin (e4m3fn; head dims (128, 128) and (192, 128); sm_90a; its errors).
/// AMD: fp8::gfx950::launch_fp8_attention (e4m3fn; head dims (128, 128) and (192, 128); gfx950 only: unsupported
/// naming the device on any other; its errors).
inline Status launch(const AttentionParams& p, rt::stream_t stream) {
#if ZYFA_PLATFORM_CUDA
  return sm90::launch_builtin(p, stream);
#else
  return gfx950::launch_fp8_attention(p, stream);
#endif
}

}  // namespace zyfa::fp8

#endif  // !ZYFA_PLATFORM_HOST
