// End-to-end emulator test kernel: one wave computes S (32x32 fp32) = sum over two 32-wide K blocks b of
// 2^(sa[m][b] + sb[n][b] - 254) * A[m, block b] . B[n, block b] with the scaled f8f6f4 MFMA
// (__builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4, e4m3 x e4m3). A and B are 32x64 e4m3fn, row-major (B given
// as Bᵀ, i.e. N x K); fp32 inputs xa/xb are first converted to e4m3 on the device with
// __builtin_amdgcn_cvt_pk_fp8_f32 (v_cvt_pk_fp8_f32), so the conversion is tested end to end as well.
// Layouts: gfx950-facts.md §1.2 and §1.4 (data: bytes 0-15 = k 16*(l/32)+0..15, bytes 16-31 = k 32+16*(l/32)+
// 0..15; scales: lane 32*b + m).
#include <hip/hip_runtime.h>

typedef int i32x8 __attribute__((ext_vector_type(8)));
typedef float f32x16 __attribute__((ext_vector_type(16)));

__device__ __forceinline__ int pack4(const float* x) {
  int lo = __builtin_amdgcn_cvt_pk_fp8_f32(x[0], x[1], 0, false);
  return __builtin_amdgcn_cvt_pk_fp8_f32(x[2], x[3], lo, true);
}

extern "C" __global__ void __launch_bounds__(64)
    mfma_fp8_scaled(const float* xa, const float* xb, const unsigned char* sa, const unsigned char* sb, float* S) {
  const unsigned l = __builtin_amdgcn_workitem_id_x();
  const unsigned i = l % 32, h = l / 32;
  i32x8 a, b;
  for (int j = 0; j < 8; ++j) {
    const int k0 = (j < 4) ? 16 * h + 4 * j : 32 + 16 * h + 4 * (j - 4);
    a[j] = pack4(xa + i * 64 + k0);
    b[j] = pack4(xb + i * 64 + k0);
  }
  // scale for row/column i, block h lives in lane 32*h + i: sa/sb are [32][2] (row, block)
  const int scale_a = sa[i * 2 + h];
  const int scale_b = sb[i * 2 + h];
  f32x16 c = {};
  c = __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(a, b, c, 0, 0, 0, scale_a, 0, scale_b);
  for (int r = 0; r < 16; ++r) S[(8 * (r / 4) + 4 * h + r % 4) * 32 + i] = c[r];
}
