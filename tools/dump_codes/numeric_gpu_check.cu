// numeric_gpu_check -- on an NVIDIA sm_90 GPU, compares zyfa's conversions (include/zyfa/numeric/),
// compiled for the device, with the GPU's own conversion instructions over ALL 2^32 fp32 inputs:
//   float_to_e4m3fn(x, saturate) vs cvt.rn.satfinite.e4m3x2.f32 (__nv_cvt_float_to_fp8, __NV_SATFINITE)
//   float_to_bf16(x)              vs cvt.rn.bf16.f32            (__float2bfloat16_rn)
//   e4m3fn_to_float(c), all 256   vs cvt.rn.f16x2.e4m3x2 then f16 -> f32 (__nv_cvt_fp8_to_halfraw)
// NaN results compare as equal when both are NaN (the sign/payload of NaN is not specified).
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude tools/dump_codes/numeric_gpu_check.cu
// Exit status 0 iff there is no mismatch. Not part of CI (needs a GPU); run on an H200.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdio>
#include <zyfa/numeric/bf16.hpp>
#include <zyfa/numeric/e4m3.hpp>

__device__ unsigned long long g_bad[3];
__device__ unsigned long long g_checked;  // inputs checked (must be 2^32)
__device__ unsigned long long g_control;  // negative control: to_nan mode vs satfinite must differ
__device__ unsigned g_example[3][4];

__global__ void check_all(unsigned long long start) {
  const unsigned long long u64 = start + blockIdx.x * 1ull * blockDim.x + threadIdx.x;
  if (u64 > 0xFFFFFFFFull) return;
  const unsigned u = static_cast<unsigned>(u64);
  const float x = __uint_as_float(u);
  const bool nan = (u & 0x7FFFFFFFu) > 0x7F800000u;
  // e4m3fn, saturating
  const unsigned char z8 = zyfa::float_to_e4m3fn(x);
  const unsigned char h8 = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
  const bool ok8 = nan ? ((z8 & 0x7F) == 0x7F && (h8 & 0x7F) == 0x7F) : z8 == h8;
  atomicAdd(&g_checked, 1ull);
  if (!nan && zyfa::float_to_e4m3fn(x, zyfa::Fp8Overflow::to_nan) != h8) atomicAdd(&g_control, 1ull);
  if (!ok8) {
    const unsigned long long k = atomicAdd(&g_bad[0], 1ull);
    if (k < 4) g_example[0][k] = u;
  }
  // bf16
  const unsigned short z16 = zyfa::float_to_bf16(x);
  const __nv_bfloat16 hb = __float2bfloat16_rn(x);
  const unsigned short h16 = *reinterpret_cast<const unsigned short*>(&hb);
  const bool ok16 = nan ? ((z16 & 0x7FFF) > 0x7F80 && (h16 & 0x7FFF) > 0x7F80) : z16 == h16;
  if (!ok16) {
    const unsigned long long k = atomicAdd(&g_bad[1], 1ull);
    if (k < 4) g_example[1][k] = u;
  }
  // decode, all 256 codes
  if (u < 256) {
    const __half_raw hr = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(u), __NV_E4M3);
    const float hf = __half2float(__half(hr));
    const float zf = zyfa::e4m3fn_to_float(static_cast<unsigned char>(u));
    const bool okd = (zf != zf) ? (hf != hf) : __float_as_uint(zf) == __float_as_uint(hf);
    if (!okd) {
      const unsigned long long k = atomicAdd(&g_bad[2], 1ull);
      if (k < 4) g_example[2][k] = u;
    }
  }
}

int main() {
  const unsigned threads = 256;
  const unsigned long long per_launch = 1ull << 30;
  for (unsigned long long s = 0; s < (1ull << 32); s += per_launch)
    check_all<<<static_cast<unsigned>(per_launch / threads), threads>>>(s);
  if (cudaDeviceSynchronize() != cudaSuccess) {
    std::printf("CUDA error: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 2;
  }
  unsigned long long bad[3];
  unsigned ex[3][4];
  cudaMemcpyFromSymbol(bad, g_bad, sizeof bad);
  cudaMemcpyFromSymbol(ex, g_example, sizeof ex);
  const char* names[3] = {"float_to_e4m3fn (all 2^32) vs cvt.rn.satfinite.e4m3x2.f32",
                          "float_to_bf16 (all 2^32) vs cvt.rn.bf16.f32",
                          "e4m3fn_to_float (256 codes) vs cvt e4m3 -> f16 -> f32"};
  unsigned long long checked = 0, control = 0;
  cudaMemcpyFromSymbol(&checked, g_checked, sizeof checked);
  cudaMemcpyFromSymbol(&control, g_control, sizeof control);
  // Negative control: finite |x| > 464 and +-inf differ: per sign, fp32 bit patterns 0x43E80001..0x7F800000.
  const unsigned long long want_control = 2ull * (0x7F800000u - 0x43E80000u);
  std::printf("inputs checked: %llu (want 4294967296); negative control mismatches: %llu (want %llu)\n", checked,
              control, want_control);
  int rc = checked != (1ull << 32) || control != want_control;
  for (int i = 0; i < 3; ++i) {
    std::printf("%s: %llu mismatches", names[i], bad[i]);
    for (unsigned k = 0; k < 4 && k < bad[i]; ++k) std::printf(" %08x", ex[i][k]);
    std::printf("\n");
    rc |= bad[i] != 0;
  }
  return rc;
}
