// zyfa/bf16/device_math.hpp -- the few scalar math helpers the kernels need, as compiler builtins on AMD
// (HIP's fmaxf/fmaf/min would call ROCm's device library, which zyfa's code objects do not link) and as
// CUDA's intrinsic functions on NVIDIA.
#pragma once
#include "../platform/platform.hpp"

namespace zyfa::bf16 {
// fmax_(a, b): IEEE maxNum (a NaN operand is ignored; v_max_f32 / fmaxf). fma_(a, b, c): a*b + c with one
// rounding (v_fma_f32 / fmaf). imin_/imax_(a, b): the smaller/larger int.
#if ZYFA_PLATFORM_HIP
__device__ __forceinline__ float fmax_(float a, float b) { return __builtin_fmaxf(a, b); }
__device__ __forceinline__ float fma_(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
#elif ZYFA_PLATFORM_CUDA
__device__ __forceinline__ float fmax_(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ float fma_(float a, float b, float c) { return fmaf(a, b, c); }
#endif
#if !ZYFA_PLATFORM_HOST
__device__ __forceinline__ int imin_(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ int imax_(int a, int b) { return a > b ? a : b; }
#endif
}  // namespace zyfa::bf16
