// zyfa/platform/hip.hpp -- HIP on ROCm (clang, __HIP_PLATFORM_AMD__).
// Device code takes thread/block ids and math from clang builtins, never from ROCm's device library
// (__ockl_*/__ocml_*), so zyfa's code objects are self-contained (docs/design/DESIGN.md, "Targets and what can
// be verified here", toolchain paragraph; docs/design/gfx950-facts.md section 0).
// Every rt:: function returns HIP's error code unchanged (rt::success on success); none throws.
#pragma once
#include <hip/hip_runtime.h>

namespace zyfa::rt {
using stream_t = hipStream_t;
using error_t = hipError_t;
inline constexpr error_t success = hipSuccess;
inline constexpr bool has_gpu_runtime = true;  ///< false only in platform/host.hpp
/// The runtime's text for `e` (static storage; never null).
inline const char* error_string(error_t e) { return hipGetErrorString(e); }
/// Returns and clears the last error of the calling host thread (checks a `<<<...>>>` launch).
inline error_t get_last_error() { return hipGetLastError(); }
/// Writes the current device's ordinal to `*d`.
inline error_t get_device(int* d) { return hipGetDevice(d); }
/// Number of compute units of device `d`.
inline error_t multiprocessor_count(int* n, int d) {
  return hipDeviceGetAttribute(n, hipDeviceAttributeMultiprocessorCount, d);
}
/// Largest LDS a workgroup may use, in bytes.
inline error_t max_dynamic_shared_bytes(int* n, int d) {
  return hipDeviceGetAttribute(n, hipDeviceAttributeMaxSharedMemoryPerBlock, d);
}
/// Sets a kernel's dynamic LDS limit to `bytes` (hipFuncSetAttribute; kept for parity with CUDA's opt-in).
template <typename Kernel>
inline error_t set_max_dynamic_shared_bytes(Kernel kernel, int bytes) {
  return hipFuncSetAttribute(reinterpret_cast<const void*>(kernel), hipFuncAttributeMaxDynamicSharedMemorySize, bytes);
}
}  // namespace zyfa::rt

namespace zyfa::dev {
/// Work-item id x / workgroup ids x, y, z (zyfa launches 1-D workgroups).
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
/// No barrier-with-reduction on AMD without ROCm's device library (zyfa's code objects do not link it): kernels
/// that need a block-wide OR use another way when this is false.
inline constexpr bool kHasSyncThreadsOr = false;
/// Declared so that code under `if constexpr (kHasSyncThreadsOr)` compiles; instantiating it is a compile error.
template <class Bool>
__device__ bool sync_threads_or(Bool) {
  static_assert(sizeof(Bool) == 0, "zyfa: sync_threads_or is not available on AMD (kHasSyncThreadsOr)");
  return false;
}
/// 2^x in fp32 (v_exp_f32: base 2, approximate, not correctly rounded).
__device__ __forceinline__ float exp2f_fast(float x) { return __builtin_amdgcn_exp2f(x); }
/// log2(x) in fp32 (v_log_f32: base 2 despite the builtin's name, approximate).
__device__ __forceinline__ float log2f_fast(float x) { return __builtin_amdgcn_logf(x); }
}  // namespace zyfa::dev
