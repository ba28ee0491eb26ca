// End-to-end emulator test TU: zyfa's BF16 forward attention kernel (include/zyfa/kernels, issue 4) for the
// built-in head-dim pairs (64, 64), (128, 128), (192, 128) and (256, 256), compiled for gfx950 exactly as a
// user's HIP TU would.
#include <zyfa/kernels/launch.hpp>
#include <zyfa/tile_config.hpp>

template __global__ void zyfa::kernels::fwd_kernel<zyfa::TileConfig<64, 64>::type>(const zyfa::kernels::FwdArgs);
template __global__ void zyfa::kernels::fwd_kernel<zyfa::TileConfig<128, 128>::type>(const zyfa::kernels::FwdArgs);
template __global__ void zyfa::kernels::fwd_kernel<zyfa::TileConfig<192, 128>::type>(const zyfa::kernels::FwdArgs);
template __global__ void zyfa::kernels::fwd_kernel<zyfa::TileConfig<256, 256>::type>(const zyfa::kernels::FwdArgs);
