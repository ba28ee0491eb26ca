// Kernels shaped so that LLVM must pad specific hazards (corpus for tests/python/test_hazard_clang.py): a
// transcendental result used at once, an fp8 high-half convert read at once, a VALU-written SGPR used as a
// buffer soffset and as a readlane lane select, M0 written right before an LDS-DMA load.
#include <hip/hip_runtime.h>
typedef float f32x16 __attribute__((ext_vector_type(16)));
typedef int i32x8 __attribute__((ext_vector_type(8)));

extern "C" __global__ void trans_use(const float* x, float* out) {
  int t = __builtin_amdgcn_workitem_id_x();
  float e = __builtin_amdgcn_exp2f(x[t]);
  out[t] = e * x[t + 64] + e;
}

extern "C" __global__ void cvt_hi_use(const float* x, unsigned* out) {
  int t = __builtin_amdgcn_workitem_id_x();
  unsigned w = __builtin_amdgcn_cvt_pk_fp8_f32(x[t], x[t + 64], 0u, false);
  w = __builtin_amdgcn_cvt_pk_fp8_f32(x[t + 128], x[t + 192], w, true);
  out[t] = w ^ (w >> 7);
}

extern "C" __global__ void sgpr_soffset(const float* x, float* out, __amdgpu_buffer_rsrc_t rsrc) {
  int t = __builtin_amdgcn_workitem_id_x();
  int u = __builtin_amdgcn_readfirstlane(__float_as_int(x[t])) & 0xff0;
  float y = __builtin_amdgcn_raw_buffer_load_b32(rsrc, t * 4, u, 0);
  int l = __builtin_amdgcn_readfirstlane(__float_as_int(x[t + 64])) & 63;
  out[t] = y + __int_as_float(__builtin_amdgcn_readlane(__float_as_int(y), l));
}

extern "C" __global__ void lds_dma(const float* x, float* out) {
  __shared__ float tile[64 * 4];
  int t = __builtin_amdgcn_workitem_id_x();
  __builtin_amdgcn_global_load_lds((void*)(x + t), (__attribute__((address_space(3))) void*)tile, 4, 0, 0);
  __builtin_amdgcn_global_load_lds((void*)(x + 64 + t), (__attribute__((address_space(3))) void*)(tile + 64), 4, 0, 0);
  __builtin_amdgcn_s_waitcnt(0);
  __builtin_amdgcn_s_barrier();
  out[t] = tile[(t + 1) & 127];
}

extern "C" __global__ void mfma_then_exec(const i32x8* a, const i32x8* b, float* out, int n) {
  int t = __builtin_amdgcn_workitem_id_x();
  f32x16 acc = {};
  acc = __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(a[t], b[t], acc, 0, 0, 0, 127, 0, 126);
  float r = acc[0];
  if (t < n) r = __builtin_amdgcn_readfirstlane(__float_as_int(acc[3])) + acc[5];
  out[t] = r + acc[15];
}

typedef __bf16 bf16x2 __attribute__((ext_vector_type(2)));
// v_dot2 result read at once by a VALU (DOT -> VALU read).
extern "C" __global__ void dot_use(const float* c, float* out, bf16x2 a, bf16x2 b) {
  int t = __builtin_amdgcn_workitem_id_x();
  float d = __builtin_amdgcn_fdot2_f32_bf16(a, b, c[t], false);
  out[t] = d + c[t];
}

// DPP row shift of a value computed just before (VALU -> DPP read), as row reductions do.
extern "C" __global__ void dpp_use(const float* x, float* out) {
  int t = __builtin_amdgcn_workitem_id_x();
  int v = __float_as_int(x[t] * 3.0f);
  int s = __builtin_amdgcn_update_dpp(0, v, 0x111, 0xf, 0xf, false);  // row_shr:1
  out[t] = __int_as_float(s) + x[t];
}

typedef short s16x2 __attribute__((ext_vector_type(2)));
// gfx950 scaled fp8 down-convert into the high half (op_sel dst), read at once (cvt-scale forwarding).
extern "C" __global__ void cvt_scale_hi(const float* x, unsigned* out, float sc) {
  int t = __builtin_amdgcn_workitem_id_x();
  s16x2 w = {0, 0};
  w = __builtin_amdgcn_cvt_scalef32_pk_fp8_f32(w, x[t], x[t + 64], sc, false);
  w = __builtin_amdgcn_cvt_scalef32_pk_fp8_f32(w, x[t + 128], x[t + 192], sc, true);
  unsigned u = (unsigned short)w[0] | ((unsigned)(unsigned short)w[1] << 16);
  out[t] = u ^ (u >> 3);
}
