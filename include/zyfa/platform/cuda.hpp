// zyfa/platform/cuda.hpp -- the HIP runtime names zyfa uses, mapped to CUDA (nvcc).
// Debian's ROCm 5.2 HIP-on-NVIDIA headers do not compile against CUDA 13, so zyfa carries this small mapping.
#pragma once
#include <cuda_runtime.h>

namespace zyfa::rt {
using stream_t = cudaStream_t;  ///< hipStream_t
using error_t = cudaError_t;    ///< hipError_t
inline constexpr error_t success = cudaSuccess;
inline constexpr bool has_gpu_runtime = true;
inline const char* error_string(error_t e) { return cudaGetErrorString(e); }
inline error_t get_last_error() { return cudaGetLastError(); }
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
__device__ __forceinline__ unsigned thread_idx_x() { return threadIdx.x; }
__device__ __forceinline__ unsigned block_idx_x() { return blockIdx.x; }
__device__ __forceinline__ unsigned block_idx_y() { return blockIdx.y; }
__device__ __forceinline__ unsigned block_idx_z() { return blockIdx.z; }
__device__ __forceinline__ void sync_threads() { __syncthreads(); }
/// 2^x in fp32 (ex2.approx on NVIDIA).
__device__ __forceinline__ float exp2f_fast(float x) { return exp2f(x); }
__device__ __forceinline__ float log2f_fast(float x) { return __log2f(x); }
}  // namespace zyfa::dev
