// End-to-end emulator test kernel: one wave computes C (32x32, fp32, row-major) = A (32x16 bf16, row-major)
// * B (16x32 bf16, row-major) + C0 with __builtin_amdgcn_mfma_f32_32x32x16_bf16 (gfx950). Operands are loaded
// in the lane layout of gfx950-facts.md §1.2 (lane l: row/column l%32, k = 8*(l/32) + 0..7; D register r:
// row 8*(r/4) + 4*(l/32) + r%4, column l%32).
#include <hip/hip_runtime.h>

typedef __bf16 bf16x8 __attribute__((ext_vector_type(8)));
typedef float f32x16 __attribute__((ext_vector_type(16)));

extern "C" __global__ void __launch_bounds__(64)
    mfma_bf16(const __bf16* A, const __bf16* B, const float* C0, float* C) {
  const unsigned l = __builtin_amdgcn_workitem_id_x();
  bf16x8 a, b;
  for (int j = 0; j < 8; ++j) {
    a[j] = A[(l % 32) * 16 + 8 * (l / 32) + j];
    b[j] = B[(8 * (l / 32) + j) * 32 + (l % 32)];
  }
  f32x16 c;
  for (int r = 0; r < 16; ++r) c[r] = C0[(8 * (r / 4) + 4 * (l / 32) + r % 4) * 32 + (l % 32)];
  c = __builtin_amdgcn_mfma_f32_32x32x16_bf16(a, b, c, 0, 0, 0);
  for (int r = 0; r < 16; ++r) C[(8 * (r / 4) + 4 * (l / 32) + r % 4) * 32 + (l % 32)] = c[r];
}
