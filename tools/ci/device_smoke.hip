// device_smoke.hip -- the smallest device translation unit through zyfa's platform header: proves that
// tools/ci/compile_device.sh's toolchains (clang-22 + HIP 5.2 headers for gfx950/gfx942, nvcc for sm_90a)
// accept zyfa's platform header and that its resource report parses. Not a zyfa kernel; kernels register their
// own TUs. It includes only the platform header: the umbrella <zyfa/zyfa.hpp> instantiates every built-in
// attention kernel (flash_attn.hpp), which the kernels' own TUs already compile.
#include <zyfa/platform/platform.hpp>

// The platform header's one decision, checked in every pass this TU is compiled in.
#if defined(__NVCC__)
static_assert(ZYFA_PLATFORM_CUDA == 1 && ZYFA_PLATFORM_HIP == 0, "nvcc must select the CUDA platform");
#elif defined(__HIP_PLATFORM_AMD__)
static_assert(ZYFA_PLATFORM_HIP == 1 && ZYFA_PLATFORM_CUDA == 0, "clang -x hip must select the HIP platform");
#endif
#if defined(__HIP_DEVICE_COMPILE__) || defined(__CUDA_ARCH__)
static_assert(ZYFA_DEVICE_PASS == 1, "a device pass must see ZYFA_DEVICE_PASS == 1");
#else
static_assert(ZYFA_DEVICE_PASS == 0, "a host pass must see ZYFA_DEVICE_PASS == 0");
#endif
static_assert(zyfa::rt::has_gpu_runtime, "a GPU compile must have the GPU runtime names");

/// out[i] = 2^(in[i]) for i < n, one element per thread (1-D grid of 256-thread blocks).
ZYFA_GLOBAL void zyfa_device_smoke_exp2(const float* in, float* out, int n) {
#if ZYFA_DEVICE_PASS
  const unsigned i = zyfa::dev::block_idx_x() * 256u + zyfa::dev::thread_idx_x();
  if (i < static_cast<unsigned>(n)) out[i] = zyfa::dev::exp2f_fast(in[i]);
#else
  (void)in;
  (void)out;
  (void)n;
#endif
}
