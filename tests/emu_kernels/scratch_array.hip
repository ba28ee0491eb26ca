// End-to-end emulator test kernel: a per-thread array indexed with run-time indices, which clang keeps in
// scratch (private memory; scratch_store/scratch_load with gfx950's architected flat scratch).
// out[t] = 2 * (x[t * 64 + idx[t] % 64] + x[t * 64 + (idx[t] + 7) % 64]); x is read from out (64 x 64 floats).
#include <hip/hip_runtime.h>

extern "C" __global__ void __launch_bounds__(64) scratch_array(const int* idx, float* out) {
  float a[64];
  const unsigned t = __builtin_amdgcn_workitem_id_x();
  for (int i = 0; i < 64; ++i) a[i] = out[t * 64 + i] * 2.0f;
  out[t] = a[idx[t] & 63] + a[(idx[t] + 7) & 63];
}
