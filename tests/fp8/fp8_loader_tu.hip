// Compile check of the FP8 code-object loader and launcher for AMD (tools/ci/check_generated.sh): host pass with
// HIP's runtime API, device pass for gfx950. Not linked (no ROCm runtime library on the CI machine).
#include <zyfa/fp8/gfx950/qk_block.hpp>

zyfa::Status zyfa_fp8_qk_block_smoke(const std::uint8_t* q, const std::uint8_t* k, const std::uint8_t* qs,
                                     const std::uint8_t* ks, float* s, hipStream_t stream) {
  zyfa::fp8::QkBlockArgs a{};
  a.q = q;
  a.k = k;
  a.q_scale = qs;
  a.k_scale = ks;
  a.s = s;
  a.q_stride = a.k_stride = a.s_stride = 128;
  return zyfa::fp8::qk_block_32x128(a, stream);
}

// The generated dispatch table: (family, configuration) -> code object + launch shape.
#include <cstring>
#include <zyfa/fp8/gfx950/dispatch_table.inc>

zyfa::Status zyfa_fp8_qk_block_by_table(const zyfa::fp8::QkBlockArgs& a, hipStream_t stream) {
  const zyfa::fp8::gen::KernelEntry* e = zyfa::fp8::gen::find_kernel("qk_block_fp8", "m=32,n=128,d=128");
  if (e == nullptr || e->kernarg_size != sizeof(a)) return zyfa::Status::unsupported("qk_block_fp8 m=32,n=128,d=128");
  zyfa::fp8::CodeObjectRef co{e->code_object, e->code_object_size, e->name};
  return zyfa::fp8::launch(co, a, 1, 1, 1, e->workgroup_size, stream);
}

// The FP8 attention launcher (attention.hpp) through the generated dispatch table, and the path flash_attn_func
// takes for e4m3fn inputs on AMD (fp8/dispatch.hpp).
#include <zyfa/fp8/dispatch.hpp>

zyfa::Status zyfa_fp8_attention_smoke(const zyfa::AttentionParams& p, hipStream_t stream) {
  return zyfa::fp8::gfx950::launch_fp8_attention(p, stream);
}

zyfa::Status zyfa_fp8_dispatch_smoke(const zyfa::AttentionParams& p, hipStream_t stream) {
  return zyfa::fp8::launch(p, stream);
}
