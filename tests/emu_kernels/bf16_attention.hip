// End-to-end emulator test TU: zyfa's BF16 forward attention kernel (include/zyfa/bf16) for every built-in
// head-dim pair (include/zyfa/head_dims.hpp) plus the padded custom pair (80, 80), compiled for gfx950 exactly as a
// user's HIP TU would, in its fixed-length and variable-length (Varlen = true) forms. The launch parameters of each
// configuration (dynamic LDS bytes, threads per block, query rows per block) are exported as device constants so the
// test reads them from the assembly instead of repeating the tile table.
#include <zyfa/bf16/launch.hpp>
#include <zyfa/head_dims.hpp>
#include <zyfa/tile_config.hpp>

#define ZYFA_EMU_INSTANTIATE_CONFIG(NAME, ...)                                                                 \
  template __global__ void zyfa::bf16::fwd_kernel<__VA_ARGS__, false>(const zyfa::bf16::FwdArgs);              \
  template __global__ void zyfa::bf16::fwd_kernel<__VA_ARGS__, true>(const zyfa::bf16::FwdArgs);               \
  extern "C" __device__ const int zyfa_emu_launch_##NAME[3] = {__VA_ARGS__::kSmemBytes, __VA_ARGS__::kThreads, \
                                                               __VA_ARGS__::kBlockM};
#define ZYFA_EMU_INSTANTIATE(DQK, DV) ZYFA_EMU_INSTANTIATE_CONFIG(DQK##_##DV, zyfa::Bf16TileConfig<DQK, DV, true>)

ZYFA_BUILTIN_HEAD_DIMS(ZYFA_EMU_INSTANTIATE)
ZYFA_EMU_INSTANTIATE_CONFIG(80_80, zyfa::bf16::KernelConfig<80, 80, 64, 64, 2>)
