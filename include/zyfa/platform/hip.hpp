// zyfa/platform/hip.hpp -- HIP on ROCm (clang, __HIP_PLATFORM_AMD__).
// Device code takes thread/block ids and math from clang builtins, never from ROCm's device library
// (__ockl_*/__ocml_*), so zyfa's code objects are self-contained (DESIGN.md, "Toolchain facts").
#pragma once
#include <hip/hip_runtime.h>

namespace zyfa::rt {
using stream_t = hipStream_t;
using error_t = hipError_t;
inline constexpr error_t success = hipSuccess;
inline constexpr bool has_gpu_runtime = true;
inline const char* error_string(error_t e) { return hipGetErrorString(e); }
inline error_t get_last_error() { return hipGetLastError(); }
inline error_t get_device(int* d) { return hipGetDevice(d); }
/// Number of compute units of device `d`.
inline error_t multiprocessor_count(int* n, int d) {
  return hipDeviceGetAttribute(n, hipDeviceAttributeMultiprocessorCount, d);
}
/// Largest LDS a workgroup may use, in bytes.
inline error_t max_dynamic_shared_bytes(int* n, int d) {
  return hipDeviceGetAttribute(n, hipDeviceAttributeMaxSharedMemoryPerBlock, d);
}
template <typename Kernel>
inline error_t set_max_dynamic_shared_bytes(Kernel kernel, int bytes) {
  return hipFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                             hipFuncAttributeMaxDynamicSharedMemorySize, bytes);
}
}  // namespace zyfa::rt

namespace zyfa::dev {
__device__ __forceinline__ unsigned thread_idx_x() { return __builtin_amdgcn_workitem_id_x(); }
__device__ __forceinline__ unsigned block_idx_x() { return __builtin_amdgcn_workgroup_id_x(); }
__device__ __forceinline__ unsigned block_idx_y() { return __builtin_amdgcn_workgroup_id_y(); }
__device__ __forceinline__ unsigned block_idx_z() { return __builtin_amdgcn_workgroup_id_z(); }
/// Workgroup barrier with LDS/global ordering, as HIP's __syncthreads (fence release, s_barrier, fence acquire).
__device__ __forceinline__ void sync_threads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
/// 2^x in fp32 (v_exp_f32).
__device__ __forceinline__ float exp2f_fast(float x) { return __builtin_amdgcn_exp2f(x); }
__device__ __forceinline__ float log2f_fast(float x) { return __builtin_amdgcn_logf(x); }
}  // namespace zyfa::dev
