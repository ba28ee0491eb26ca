// zyfa/numeric/bf16.hpp -- bfloat16 <-> float conversions on raw 16-bit patterns (host and device).
//
// bfloat16 is the upper half of an IEEE binary32: 1 sign, 8 exponent (bias 127), 7 mantissa bits. It has
// the same exponent range as fp32, so subnormals, infinities and NaN carry over.
#pragma once
#include <cstdint>

#include "../platform/platform.hpp"
#include "bit_cast.hpp"

namespace zyfa {

/// bf16 bit pattern -> float. Exact for every pattern (a bf16 is a float with 16 zero low bits).
ZYFA_HOST_DEVICE constexpr float bf16_to_float(std::uint16_t bits) {
  return float_from_bits(static_cast<std::uint32_t>(bits) << 16);
}

/// float -> bf16 bit pattern, IEEE round to nearest, ties to even (what PyTorch, ml_dtypes, gfx950's
/// v_cvt_pk_bf16_f32 and sm_90's cvt.rn.bf16.f32 do).
/// - Subnormal inputs round like any other value (bf16 has fp32's subnormal range; no flush to zero).
/// - Finite values that round above bf16's largest finite value (3.3895e38) become +-inf (IEEE
///   overflow; bf16 has infinities, so there is no saturation); +-inf stays +-inf.
/// - NaN -> a quiet NaN with the input's sign (0x7FC0 / 0xFFC0); the payload is not kept.
ZYFA_HOST_DEVICE constexpr std::uint16_t float_to_bf16(float x) {
  const std::uint32_t u = float_bits(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>(((u >> 16) & 0x8000u) | 0x7FC0u);
  // Adding 0x7FFF plus the lowest kept bit rounds the 16 dropped bits to nearest even; a carry out of the
  // mantissa correctly increments the exponent (and turns the largest finite values into inf).
  const std::uint32_t rounding = 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>((u + rounding) >> 16);
}

}  // namespace zyfa
