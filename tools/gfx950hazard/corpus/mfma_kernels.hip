// Small gfx950 kernels whose clang-22 output exercises the hazard rules (corpus for the hazard checker's
// tests: tests/python/test_hazard_clang.py). Device-only; thread ids from clang builtins (no ROCm libraries).
#include <hip/hip_runtime.h>
typedef float f32x4 __attribute__((ext_vector_type(4)));
typedef float f32x16 __attribute__((ext_vector_type(16)));
typedef __bf16 bf16x8 __attribute__((ext_vector_type(8)));
typedef int i32x8 __attribute__((ext_vector_type(8)));

// Scaled f8f6f4 MFMA chain in a loop (16 passes), result read by VALU after the loop.
extern "C" __global__ void fp8_scaled_loop(const i32x8* a, const i32x8* b, const int* sc, float* out, int n) {
  int t = __builtin_amdgcn_workitem_id_x();
  f32x16 acc = {};
  for (int i = 0; i < n; ++i)
    acc = __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(a[t + 64 * i], b[t + 64 * i], acc, 0, 0, 0, sc[t], 0,
                                                         sc[t + 64]);
  for (int j = 0; j < 16; ++j) out[t * 16 + j] = acc[j] * 2.0f;
}

// bf16 MFMA result converted by VALU and fed back as SrcA (MFMA->VALU and VALU->MFMA), stores of D.
extern "C" __global__ void bf16_feedback(const bf16x8* a, const bf16x8* b, float* out) {
  int t = __builtin_amdgcn_workitem_id_x();
  f32x16 acc = {};
  acc = __builtin_amdgcn_mfma_f32_32x32x16_bf16(a[t], b[t], acc, 0, 0, 0);
  bf16x8 x;
  for (int j = 0; j < 8; ++j) x[j] = (__bf16)acc[j];
  acc = __builtin_amdgcn_mfma_f32_32x32x16_bf16(x, b[t + 64], acc, 0, 0, 0);
  for (int j = 0; j < 16; ++j) out[t * 16 + j] = acc[j];
}

// 16x16 (4-pass) MFMA, trans ops, readlane with an SGPR lane select, v_div_fmas (VCC).
extern "C" __global__ void softmax_like(const bf16x8* a, const bf16x8* b, float* out, float scale, int lane) {
  int t = __builtin_amdgcn_workitem_id_x();
  f32x4 acc = {};
  acc = __builtin_amdgcn_mfma_f32_16x16x32_bf16(a[t], b[t], acc, 0, 0, 0);
  float m = __builtin_fmaxf(__builtin_fmaxf(acc[0], acc[1]), __builtin_fmaxf(acc[2], acc[3]));
  float s = 0;
  for (int j = 0; j < 4; ++j) {
    acc[j] = __builtin_amdgcn_exp2f((acc[j] - m) * scale);
    s += acc[j];
  }
  int l = __builtin_amdgcn_readfirstlane(lane) & 63;
  float r = __int_as_float(__builtin_amdgcn_readlane(__float_as_int(s), l));
  for (int j = 0; j < 4; ++j) out[t * 4 + j] = acc[j] / r;
}

// fp8 conversion with op_sel dst (partial write) feeding a scaled MFMA; two MFMAs accumulating.
extern "C" __global__ void fp8_convert(const float* x, unsigned* out, const i32x8* a, const i32x8* b) {
  int t = __builtin_amdgcn_workitem_id_x();
  unsigned w = 0;
  w = __builtin_amdgcn_cvt_pk_fp8_f32(x[t], x[t + 64], w, false);
  w = __builtin_amdgcn_cvt_pk_fp8_f32(x[t + 128], x[t + 192], w, true);
  unsigned y = w + 1u;
  i32x8 av = a[t];
  av[0] = w;
  av[1] = y;
  f32x16 acc = {};
  acc = __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(av, b[t], acc, 0, 0, 0, 127, 0, 127);
  acc = __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(av, b[t + 64], acc, 0, 0, 0, 127, 0, 127);
  for (int j = 0; j < 16; ++j) out[t * 16 + j] = __float_as_uint(acc[j]);
}

// VALU-written SGPR (v_cmp, v_readfirstlane) read by VALU and by a buffer load; permlane32 swap; setreg.
extern "C" __global__ void sgpr_paths(const float* x, float* out, int k) {
  int t = __builtin_amdgcn_workitem_id_x();
  float v = x[t];
  int u = __builtin_amdgcn_readfirstlane(__float_as_int(v));
  float w = x[(u & 255) + t];
  __builtin_amdgcn_s_setreg(0x1801, 3);  // MODE: round mode bits
  int mode = __builtin_amdgcn_s_getreg(0x1801);
  auto sw = __builtin_amdgcn_permlane32_swap(__float_as_int(w), __float_as_int(v), false, false);
  out[t] = (v > 1.0f ? w : v) + __int_as_float(sw[0]) + (float)mode;
}
