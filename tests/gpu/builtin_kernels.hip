// tests/gpu/builtin_kernels.hip -- the built-in BF16 forward kernel configurations (include/zyfa/head_dims.hpp) as
// one device TU, compiled by tools/ci/compile_device.sh for gfx950, gfx942 (clang-22) and sm_90a (nvcc -x cu) to
// report registers, LDS / shared memory and spills per kernel (none allowed), plus custom instantiations: (96, 96)
// of examples/custom_head_dim (the 4-chunk swizzle group of bf16/smem_layout.hpp) and the padded (80, 80) and
// (112, 112).
#include <zyfa/bf16/builtin.hpp>

ZYFA_BUILTIN_HEAD_DIMS(ZYFA_BF16_INSTANTIATE)

namespace zyfa {
template Status bf16::launch<bf16::KernelConfig<96, 96, 128, 64, 4>>(const AttentionParams&, rt::stream_t);
template Status bf16::launch<bf16::KernelConfig<80, 80, 128, 64, 4>>(const AttentionParams&, rt::stream_t);
template Status bf16::launch<bf16::KernelConfig<112, 112, 128, 32, 4>>(const AttentionParams&, rt::stream_t);
}  // namespace zyfa
