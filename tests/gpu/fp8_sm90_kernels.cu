// tests/gpu/fp8_sm90_kernels.cu -- compiles the sm_90a FP8 kernel (fp8/sm90/) for its built-in head dims, Lean P and
// the exp2 twin, so that tools/ci/compile_device.sh reports its registers and fails on any spill (sm_90a only).
#include <zyfa/fp8/sm90/launch.hpp>

template zyfa::Status zyfa::fp8::sm90::launch<zyfa::fp8::sm90::Fp8Config<128, 128, zyfa::fp8::sm90::PMode::lean_p>>(
    const zyfa::AttentionParams&, zyfa::rt::stream_t, bool);
template zyfa::Status zyfa::fp8::sm90::launch<zyfa::fp8::sm90::Fp8Config<128, 128, zyfa::fp8::sm90::PMode::exp2>>(
    const zyfa::AttentionParams&, zyfa::rt::stream_t, bool);
template zyfa::Status zyfa::fp8::sm90::launch<zyfa::fp8::sm90::Fp8Config<192, 128, zyfa::fp8::sm90::PMode::lean_p>>(
    const zyfa::AttentionParams&, zyfa::rt::stream_t, bool);
template zyfa::Status zyfa::fp8::sm90::launch<zyfa::fp8::sm90::Fp8Config<192, 128, zyfa::fp8::sm90::PMode::exp2>>(
    const zyfa::AttentionParams&, zyfa::rt::stream_t, bool);
