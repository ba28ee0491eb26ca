// zyfa/platform/platform.hpp -- the one place that decides the vendor.
//
// Exactly one of these is defined to 1 after inclusion:
//   ZYFA_PLATFORM_HIP   compiling HIP for AMD (clang with __HIP_PLATFORM_AMD__ or __HIP__)
//   ZYFA_PLATFORM_CUDA  compiling with nvcc / clang-cuda (__CUDACC__)
//   ZYFA_PLATFORM_HOST  plain C++ compiler: only the host executable specification is available
// Every zyfa header that needs C++17 or the vendor includes this one first and never re-derives the vendor.
// ZYFA_DEVICE_PASS is 1 while a device compilation pass is running (kernels' bodies see it).
// ZYFA_HOST_DEVICE / ZYFA_DEVICE / ZYFA_GLOBAL expand to __host__ __device__ / __device__ / __global__ on the
// GPU platforms and to nothing on ZYFA_PLATFORM_HOST, so numeric/ helpers compile in plain C++ too.
#pragma once

// zyfa needs C++17 (std::optional, inline variables, if constexpr). Checked here, before anything else, so that an
// older standard stops with this message first rather than a cascade from the headers that follow. MSVC reports its
// standard in _MSVC_LANG (its __cplusplus stays 199711L without /Zc:__cplusplus).
#if (defined(_MSVC_LANG) && _MSVC_LANG < 201703L) || \
    (!defined(_MSVC_LANG) && (!defined(__cplusplus) || __cplusplus < 201703L))
#error "zyfa needs C++17: compile with -std=c++17 (MSVC: /std:c++17); CMake targets that link zyfa::zyfa get it"
#endif

#if defined(__HIP_PLATFORM_AMD__) || (defined(__HIP__) && !defined(__CUDACC__))
#define ZYFA_PLATFORM_HIP 1
#define ZYFA_PLATFORM_CUDA 0
#define ZYFA_PLATFORM_HOST 0
#elif defined(__CUDACC__)
#define ZYFA_PLATFORM_HIP 0
#define ZYFA_PLATFORM_CUDA 1
#define ZYFA_PLATFORM_HOST 0
#else
#define ZYFA_PLATFORM_HIP 0
#define ZYFA_PLATFORM_CUDA 0
#define ZYFA_PLATFORM_HOST 1
#endif

#if (ZYFA_PLATFORM_HIP + ZYFA_PLATFORM_CUDA + ZYFA_PLATFORM_HOST) != 1
#error "zyfa: exactly one platform must be selected"
#endif

#if ZYFA_PLATFORM_HOST
#define ZYFA_HOST_DEVICE
#define ZYFA_DEVICE
#define ZYFA_GLOBAL
#define ZYFA_DEVICE_PASS 0
#else
#define ZYFA_HOST_DEVICE __host__ __device__
#define ZYFA_DEVICE __device__
#define ZYFA_GLOBAL __global__
/// A device function kept out of line on NVIDIA: its registers are then not part of the caller's allocation (a
/// rarely taken path after a register-heavy loop). Inlined on AMD (zyfa's code objects and the gfx950 emulator use no
/// calls).
#if defined(__CUDACC__)
#define ZYFA_COLD_DEVICE_FN __device__ __noinline__
#else
#define ZYFA_COLD_DEVICE_FN __device__ inline
#endif
#if defined(__HIP_DEVICE_COMPILE__) || defined(__CUDA_ARCH__)
#define ZYFA_DEVICE_PASS 1
#else
#define ZYFA_DEVICE_PASS 0
#endif
#endif

#if ZYFA_PLATFORM_HIP
#include "hip.hpp"
#elif ZYFA_PLATFORM_CUDA
#include "cuda.hpp"
#else
#include "host.hpp"
#endif
