// End-to-end emulator test kernel: each workgroup of 256 work-items (4 waves) sums 256 floats through LDS,
// tree reduction with a workgroup barrier per level (so waves must interleave at s_barrier), and writes
// out[workgroup] = sum. Barrier = release fence, s_barrier, acquire fence (what HIP's __syncthreads does,
// without ROCm's device library).
#include <hip/hip_runtime.h>

__device__ __forceinline__ void barrier() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

extern "C" __global__ void __launch_bounds__(256) lds_reduce(const float* a, float* out) {
  __shared__ float buf[256];
  const unsigned t = __builtin_amdgcn_workitem_id_x();
  const unsigned b = __builtin_amdgcn_workgroup_id_x();
  buf[t] = a[b * 256 + t];
  barrier();
  for (unsigned s = 128; s > 0; s >>= 1) {
    if (t < s) buf[t] += buf[t + s];
    barrier();
  }
  if (t == 0) out[b] = buf[0];
}
