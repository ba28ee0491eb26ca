// End-to-end emulator test kernel: c[i] = a[i] + b[i] for i < n (256 work-items per workgroup, tail masked).
#include <hip/hip_runtime.h>

extern "C" __global__ void __launch_bounds__(256) vector_add(const float* a, const float* b, float* c, int n) {
  const int i = static_cast<int>(__builtin_amdgcn_workgroup_id_x() * 256 + __builtin_amdgcn_workitem_id_x());
  if (i < n) c[i] = a[i] + b[i];
}
