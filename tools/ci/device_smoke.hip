// device_smoke.hip -- the smallest device translation unit through zyfa's platform header: proves that
// tools/ci/compile_device.sh's toolchains (clang-22 + HIP 5.2 headers for gfx950/gfx942, nvcc for sm_90a)
// accept <zyfa/zyfa.hpp> and that its resource report parses. Not a zyfa kernel; kernels register their own TUs.
#include <zyfa/zyfa.hpp>

/// out[i] = 2^(in[i]) for i < n, one element per thread (1-D grid of 256-thread blocks).
ZYFA_GLOBAL void zyfa_device_smoke_exp2(const float* in, float* out, int n) {
#if ZYFA_DEVICE_PASS
  const unsigned i = zyfa::dev::block_idx_x() * 256u + zyfa::dev::thread_idx_x();
  if (i < static_cast<unsigned>(n)) out[i] = zyfa::dev::exp2f_fast(in[i]);
#else
  (void)in; (void)out; (void)n;
#endif
}
