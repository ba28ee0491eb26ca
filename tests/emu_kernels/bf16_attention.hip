// End-to-end emulator test TU: zyfa's BF16 forward attention kernel (include/zyfa/kernels, issue 4) for the
// built-in head-dim pairs (64, 64), (128, 128), (192, 128) and (256, 256), compiled for gfx950 exactly as a
// user's HIP TU would. The launch parameters of each configuration (dynamic LDS bytes, threads per block, query
// rows per block) are exported as device constants so the test reads them from the assembly instead of
// repeating the tile table.
#include <zyfa/kernels/launch.hpp>
#include <zyfa/tile_config.hpp>

#define ZYFA_EMU_INSTANTIATE(DQK, DV)                                                                      \
  template __global__ void zyfa::kernels::fwd_kernel<zyfa::TileConfig<DQK, DV>::type>(                     \
      const zyfa::kernels::FwdArgs);                                                                       \
  extern "C" __device__ const int zyfa_emu_launch_##DQK##_##DV[3] = {                                      \
      zyfa::TileConfig<DQK, DV>::type::kSmemBytes, zyfa::TileConfig<DQK, DV>::type::kThreads,              \
      zyfa::TileConfig<DQK, DV>::type::kBlockM};

ZYFA_EMU_INSTANTIATE(64, 64)
ZYFA_EMU_INSTANTIATE(128, 128)
ZYFA_EMU_INSTANTIATE(192, 128)
ZYFA_EMU_INSTANTIATE(256, 256)
