// zyfa/platform/cuda.hpp -- the HIP runtime names zyfa uses, mapped to CUDA (nvcc).
// Debian's ROCm 5.2 HIP-on-NVIDIA headers do not compile against CUDA 13, so zyfa carries this small mapping.
// Every function returns the CUDA runtime's error code unchanged (rt::success on success); none throws.
#pragma once
#include <cuda_runtime.h>

namespace zyfa::rt {
using stream_t = cudaStream_t;                   ///< hipStream_t
using error_t = cudaError_t;                     ///< hipError_t
inline constexpr error_t success = cudaSuccess;  ///< hipSuccess
inline constexpr bool has_gpu_runtime = true;    ///< false only in platform/host.hpp
/// The runtime's text for `e` (static storage; never null).
inline const char* error_string(error_t e) { return cudaGetErrorString(e); }
/// Returns and clears the last error of the calling host thread (checks a `<<<...>>>` launch).
inline error_t get_last_error() { return cudaGetLastError(); }
/// Writes the current device's ordinal to `*d`.
inline error_t get_device(int* d) { return cudaGetDevice(d); }
/// Number of streaming multiprocessors (CUDA) / compute units (HIP) of device `d`.
inline error_t multiprocessor_count(int* n, int d) {
  return cudaDeviceGetAttribute(n, cudaDevAttrMultiProcessorCount, d);
}
/// Largest dynamic shared memory (LDS) a block may opt into, in bytes.
inline error_t max_dynamic_shared_bytes(int* n, int d) {
  return cudaDeviceGetAttribute(n, cudaDevAttrMaxSharedMemoryPerBlockOptin, d);
}
/// Raises a kernel's dynamic shared-memory limit (hipFuncSetAttribute / cudaFuncSetAttribute).
template <typename Kernel>
inline error_t set_max_dynamic_shared_bytes(Kernel kernel, int bytes) {
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}
}  // namespace zyfa::rt

namespace zyfa::dev {
/// threadIdx.x / blockIdx.{x,y,z} (zyfa launches 1-D blocks).
__device__ __forceinline__ unsigned thread_idx_x() { return threadIdx.x; }
__device__ __forceinline__ unsigned block_idx_x() { return blockIdx.x; }
__device__ __forceinline__ unsigned block_idx_y() { return blockIdx.y; }
__device__ __forceinline__ unsigned block_idx_z() { return blockIdx.z; }
/// Block-wide barrier with shared-memory ordering (__syncthreads).
__device__ __forceinline__ void sync_threads() { __syncthreads(); }
/// Block-wide barrier that also returns whether `pred` held in any thread (__syncthreads_or: bar.red.or).
inline constexpr bool kHasSyncThreadsOr = true;
__device__ __forceinline__ bool sync_threads_or(bool pred) { return __syncthreads_or(pred) != 0; }
/// 2^x in fp32: CUDA's exp2f (max 2 ulp error, CUDA C++ Programming Guide, "Mathematical Functions").
__device__ __forceinline__ float exp2f_fast(float x) { return exp2f(x); }
/// log2(x) in fp32 (base 2, not ln): CUDA's approximate intrinsic __log2f (CUDA C++ Programming Guide,
/// "Intrinsic Functions").
__device__ __forceinline__ float log2f_fast(float x) { return __log2f(x); }
}  // namespace zyfa::dev
