// zyfa/arch/sm90_probe.hpp -- host-side check that an sm_90a kernel family can run on the current device.
//
// A kernel family whose body exists only in the sm_90a device pass (wgmma, setmaxnreg: arch/sm90_wgmma.hpp) defines a
// __device__ int that is 1 exactly in that pass; the host reads it before launching, so that a binary built without
// sm_90a, or a device that is not compute capability 9.0, gets a clean "does not apply" instead of a trap.
#pragma once
#include "../platform/platform.hpp"

#if ZYFA_PLATFORM_CUDA

namespace zyfa::arch::sm90 {

/// Per-device-ordinal results of sm90a_kernel_ok (ordinals < 64; larger ones are probed on every call). One object
/// per kernel family (static storage).
struct KernelProbeCache {
  int state[64] = {};  ///< 0 unknown, 1 yes, 2 no
  int sms[64] = {};    ///< multiprocessor count
};

/// True if the current device has compute capability 9.0 and the __device__ int at `compiled_flag` (its host-side
/// symbol address, for cudaMemcpyFromSymbol) reads 1. `*sm_count` receives the device's multiprocessor count (the
/// persistent grid size). The first call per device synchronizes (cudaMemcpyFromSymbol): make it outside stream
/// capture. Never fails loudly: false on any runtime error, whose error state is cleared.
inline bool sm90a_kernel_ok(KernelProbeCache* cache, const void* compiled_flag, int* sm_count) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0) return false;
  if (dev < 64 && cache->state[dev] != 0) {
    *sm_count = cache->sms[dev];
    return cache->state[dev] == 1;
  }
  int major = 0, minor = 0, compiled = 0, n = 0;
  bool ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
            cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess && major == 9 &&
            minor == 0;
  if (ok) ok = cudaMemcpyFromSymbol(&compiled, compiled_flag, sizeof(int)) == cudaSuccess && compiled == 1;
  if (ok) ok = cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess && n > 0;
  cudaGetLastError();  // clear a possible error of the probe
  *sm_count = n;
  if (dev < 64) {
    cache->sms[dev] = n;
    cache->state[dev] = ok ? 1 : 2;
  }
  return ok;
}

}  // namespace zyfa::arch::sm90

#endif  // ZYFA_PLATFORM_CUDA
