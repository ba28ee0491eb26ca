// One BF16 forward-attention tile configuration (include/zyfa/bf16), chosen with
// -DZYFA_TILE=DQK,DV,BlockM,BlockN,Warps, compiled for gfx950 so that the cycle model can run the emulator's trace of
// it (tests/python/test_cycle_model_bf16.py). Its launch shape is exported as a device constant, read from the
// assembly.
#include <zyfa/bf16/launch.hpp>

#ifndef ZYFA_TILE
#define ZYFA_TILE 128, 128, 128, 64, 4
#endif

using ZyfaTile = zyfa::bf16::KernelConfig<ZYFA_TILE>;
template __global__ void zyfa::bf16::fwd_kernel<ZyfaTile>(const zyfa::bf16::FwdArgs);
extern "C" __device__ const int zyfa_emu_launch_tile[3] = {ZyfaTile::kSmemBytes, ZyfaTile::kThreads, ZyfaTile::kBlockM};
