// zyfa/numeric/bit_cast.hpp -- float <-> uint32 reinterpretation usable in host and device code.
//
// std::bit_cast is C++20 and std::memcpy is not a device function everywhere; GCC >= 11, clang >= 9 and
// nvcc (EDG front end, host and device passes) all provide __builtin_bit_cast, which is constexpr and
// compiles to a plain register move.
#pragma once
#include <cstdint>

#include "../platform/platform.hpp"

namespace zyfa {

/// The IEEE binary32 bit pattern of `x` (sign bit 31, exponent bits 30..23, mantissa bits 22..0).
ZYFA_HOST_DEVICE constexpr std::uint32_t float_bits(float x) { return __builtin_bit_cast(std::uint32_t, x); }

/// The float whose IEEE binary32 bit pattern is `u` (inverse of float_bits).
ZYFA_HOST_DEVICE constexpr float float_from_bits(std::uint32_t u) { return __builtin_bit_cast(float, u); }

}  // namespace zyfa
