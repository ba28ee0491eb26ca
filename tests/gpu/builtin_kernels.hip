// tests/gpu/builtin_kernels.hip -- the built-in BF16 forward kernel configurations as one device TU, compiled by
// tools/ci/compile_device.sh for gfx950, gfx942 (clang-22) and sm_90a (nvcc -x cu) to report registers, LDS /
// shared memory and spills per kernel (none allowed), plus the custom-head-dim instantiation of
// examples/custom_head_dim (head dims (96, 96): the 4-chunk swizzle group of kernels/smem_layout.hpp).
#include <zyfa/flash_attn.hpp>

namespace zyfa {
template Status bf16::launch<TileConfig<64, 64>::type>(const AttentionParams&, rt::stream_t);
template Status bf16::launch<TileConfig<128, 128>::type>(const AttentionParams&, rt::stream_t);
template Status bf16::launch<TileConfig<256, 256>::type>(const AttentionParams&, rt::stream_t);
template Status bf16::launch<TileConfig<192, 128>::type>(const AttentionParams&, rt::stream_t);
template Status bf16::launch<kernels::KernelConfig<96, 96, 128, 64, 4>>(const AttentionParams&, rt::stream_t);
}  // namespace zyfa
