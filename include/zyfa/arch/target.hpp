// zyfa/arch/target.hpp -- facts of the GPU target being compiled: threads per warp/wave, shared memory (LDS) per
// block, and (AMD) the bf16 MFMA step. nvcc: sm_90 (built for sm_90a; the mma.sync forms need sm_80+). HIP device
// passes: gfx950 or gfx942; any other AMD target is a compile error. The HIP host pass sees gfx950's facts (it never
// runs device code). Kernel folders read these facts; nothing here depends on a kernel.
#pragma once
#include "../platform/platform.hpp"

#if ZYFA_PLATFORM_CUDA
namespace zyfa::arch {
inline constexpr int kWarpThreads = 32;  ///< threads per warp
/// sm_90 opt-in limit of dynamic shared memory per block, bytes (CUDA C++ Programming Guide, "Technical
/// Specifications per Compute Capability", 9.0: 227 KB).
inline constexpr int kMaxSmemBytes = 227 * 1024;
inline constexpr const char* kName = "sm90 mma.sync m16n8k16";  ///< for messages and benchmarks
}  // namespace zyfa::arch
#elif ZYFA_PLATFORM_HIP
#include "gfx942.hpp"
#include "gfx950.hpp"
#if ZYFA_DEVICE_PASS && !defined(__gfx950__) && !defined(__gfx942__)
#error "zyfa: the BF16 kernels support the AMD targets gfx950 and gfx942 only (--offload-arch)."
#endif
namespace zyfa::arch {
/// The bf16 MFMA step (32x32, k16) of the AMD target being compiled.
#if defined(__gfx942__)
using MfmaBf16 = gfx942::MfmaBf16_32x32x8x2;
#else
using MfmaBf16 = gfx950::MfmaBf16_32x32x16;
#endif
inline constexpr int kWarpThreads = 64;  ///< wave64
/// LDS per workgroup, bytes: gfx942's 64 KiB, the smaller of the two AMD targets (gfx950 has 160 KiB,
/// docs/design/gfx950-facts.md section 4), so one tile table serves both.
inline constexpr int kMaxSmemBytes = 64 * 1024;
inline constexpr const char* kName = "cdna mfma 32x32 bf16";  ///< for messages and benchmarks
}  // namespace zyfa::arch
#endif
