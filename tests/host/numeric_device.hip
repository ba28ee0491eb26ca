// Device-compile check of zyfa/numeric/ (registered in tools/ci/compile_device.sh): the conversions must
// compile in the gfx950/gfx942 (hip-clang, no device library) and sm_90a (nvcc) device passes.
#include <zyfa/numeric/bf16.hpp>
#include <zyfa/numeric/e4m3.hpp>
#include <zyfa/platform/platform.hpp>

ZYFA_GLOBAL void zyfa_numeric_roundtrip(const float* x, unsigned char* fn, unsigned char* fnuz, unsigned short* bf,
                                        float* back) {
  const unsigned i = zyfa::dev::thread_idx_x();
  fn[i] = zyfa::float_to_e4m3fn(x[i]);
  fnuz[i] = zyfa::float_to_e4m3fnuz(x[i], zyfa::Fp8Overflow::to_nan);
  bf[i] = zyfa::float_to_bf16(x[i]);
  back[i] = zyfa::e4m3fn_to_float(fn[i]) + zyfa::e4m3fnuz_to_float(fnuz[i]) + zyfa::bf16_to_float(bf[i]);
}
