// zyfa/arch/cdna_mfma_types.hpp -- clang vector types the AMD MFMA builtins take (HIP on ROCm only).
#pragma once
#include <cstdint>

#include "../platform/platform.hpp"

#if ZYFA_PLATFORM_HIP

namespace zyfa::arch::cdna {
typedef __bf16 bf16x8 __attribute__((ext_vector_type(8)));        ///< 8 bf16 = 4 VGPRs (one 16-byte load)
typedef short i16x4 __attribute__((ext_vector_type(4)));          ///< 4 bf16 bit patterns = 2 VGPRs
typedef float f32x16 __attribute__((ext_vector_type(16)));        ///< a 32x32 fp32 accumulator tile, per lane
typedef std::uint32_t u32x4 __attribute__((ext_vector_type(4)));  ///< 16 raw bytes
}  // namespace zyfa::arch::cdna

#endif  // ZYFA_PLATFORM_HIP
