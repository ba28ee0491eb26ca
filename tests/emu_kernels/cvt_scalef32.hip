// End-to-end emulator test kernel: gfx950's scaled fp8 conversions through clang's builtins (LLVM picks the
// op_sel word/byte selects). Per work-item i, with w = codes[i] (four e4m3 codes) and scale s[i]:
//   up[i]   = (fp8(w.byte2) * 2^e, fp8(w.byte3) * 2^e)       __builtin_amdgcn_cvt_scalef32_pk_f32_fp8, word 1
//   one[i]  = fp8(w.byte1) * 2^e                              __builtin_amdgcn_cvt_scalef32_f32_fp8, byte 1
//   bf[i]   = bf16(fp8(w.byte0) * 2^e) | bf16(fp8(w.byte1) * 2^e) << 16   ..._pk_bf16_fp8, word 0
//   down[i] = high word: e4m3(a[i] / 2^e) | e4m3(b[i] / 2^e) << 8        ..._pk_fp8_f32, word 1
// where 2^e is the power of two in s (only its exponent bits are used).
#include <hip/hip_runtime.h>

typedef float f32x2 __attribute__((ext_vector_type(2)));
typedef short i16x2 __attribute__((ext_vector_type(2)));
typedef __bf16 bf16x2 __attribute__((ext_vector_type(2)));

extern "C" __global__ void __launch_bounds__(64)
    cvt_scalef32(const int* codes, const float* s, const float* a, const float* b, f32x2* up, float* one, bf16x2* bf,
                 int* down) {
  const unsigned i = __builtin_amdgcn_workitem_id_x();
  const int w = codes[i];
  const float sc = s[i];
  up[i] = __builtin_amdgcn_cvt_scalef32_pk_f32_fp8(w, sc, true);
  one[i] = __builtin_amdgcn_cvt_scalef32_f32_fp8(w, sc, 1);
  bf[i] = __builtin_amdgcn_cvt_scalef32_pk_bf16_fp8(w, sc, false);
  const i16x2 zero = {0, 0};
  const i16x2 r = __builtin_amdgcn_cvt_scalef32_pk_fp8_f32(zero, a[i], b[i], sc, true);
  down[i] = __builtin_bit_cast(int, r);
}
