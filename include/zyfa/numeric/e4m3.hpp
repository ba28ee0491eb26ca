// zyfa/numeric/e4m3.hpp -- FP8 E4M3 codes <-> float, for both E4M3 flavours zyfa meets (host and device).
//
//   format     used by        bias  max finite          NaN                  inf   zero      subnormal step
//   e4m3fn     gfx950, sm_90   7    448  (0x7E / 0xFE)  0x7F, 0xFF (S.1111.111) none  +0, -0    2^-9
//   e4m3fnuz   gfx942          8    240  (0x7F / 0xFF)  0x80 only            none  +0 only   2^-10
//
// Sources: OCP 8-bit Floating Point Specification (OFP8) rev 1.0 (e4m3fn); the gfx942 "fnuz" variant as
// described in zyfa's gfx950 fact sheet (docs/design/gfx950-facts.md section 2) and
// implemented by ml_dtypes (float8_e4m3fn, float8_e4m3fnuz), against which tests/python checks all codes.
//
// A code is the raw byte: bit 7 sign, bits 6..3 exponent field e, bits 2..0 mantissa m.
// Value: e > 0: (-1)^s (1 + m/8) 2^(e - bias);  e == 0: (-1)^s m 2^(1 - bias - 3).
// Read as an integer, the code of a positive value grows by 8 per doubling (3 mantissa bits): the fact
// Lean P builds on (host/fp8_spec.hpp).
#pragma once
#include <cstdint>

#include "../platform/platform.hpp"
#include "bit_cast.hpp"

namespace zyfa {

/// What float -> e4m3 does with values outside the finite range.
enum class Fp8Overflow : std::uint8_t {
  /// Default. Finite values that round above the largest finite value become +-max finite (448 or 240),
  /// and +-inf also becomes +-max finite; NaN stays NaN. This is PTX `cvt.rn.satfinite.e4m3x2.f32`
  /// (sm_90) and what AMD's helpers do in software before `v_cvt_pk_fp8_f32` (a v_med3 clamp;
  /// docs/design/gfx950-facts.md section 2 and item 8.12).
  saturate,
  /// OCP "non-saturating" mode (ml_dtypes' astype): overflow and +-inf become NaN.
  to_nan,
};

/// Compile-time description of an E4M3 flavour (E4M3fnFormat, E4M3fnuzFormat; values from the table
/// above). `exp_bias`: exponent bias; `max_code`: code of the largest positive finite value; `nan_code`: the
/// canonical (positive) NaN; `has_neg_zero`: whether 0x80 is -0 (e4m3fn) or NaN (e4m3fnuz).
struct E4M3fnFormat {
  static constexpr int exp_bias = 7;
  static constexpr std::uint8_t max_code = 0x7E;  // 448
  static constexpr std::uint8_t nan_code = 0x7F;
  static constexpr bool has_neg_zero = true;
};
struct E4M3fnuzFormat {
  static constexpr int exp_bias = 8;
  static constexpr std::uint8_t max_code = 0x7F;  // 240
  static constexpr std::uint8_t nan_code = 0x80;
  static constexpr bool has_neg_zero = false;
};

namespace detail {

template <class F>
ZYFA_HOST_DEVICE constexpr float e4m3_to_float(std::uint8_t code) {
  const std::uint32_t sign = static_cast<std::uint32_t>(code & 0x80u) << 24;
  const int e = (code >> 3) & 0xF;
  const std::uint32_t m = code & 0x7u;
  if (F::has_neg_zero) {
    if ((code & 0x7Fu) == 0x7Fu) return float_from_bits(sign | 0x7FC00000u);  // NaN
  } else if (code == 0x80u) {
    return float_from_bits(0x7FC00000u);  // the only NaN of fnuz
  }
  if (e == 0) {
    // subnormal: m * 2^(1 - bias - 3); m < 8 and a power-of-two factor: exact in fp32.
    const float step = float_from_bits(static_cast<std::uint32_t>(127 + 1 - F::exp_bias - 3) << 23);
    return float_from_bits(sign | float_bits(static_cast<float>(m) * step));
  }
  return float_from_bits(sign | (static_cast<std::uint32_t>(e - F::exp_bias + 127) << 23) | (m << 20));
}

template <class F>
ZYFA_HOST_DEVICE constexpr std::uint8_t float_to_e4m3(float x, Fp8Overflow overflow) {
  const std::uint32_t u = float_bits(x);
  const std::uint8_t sign = static_cast<std::uint8_t>((u >> 24) & 0x80u);
  const std::uint32_t a = u & 0x7FFFFFFFu;  // |x|
  const std::uint8_t nan = F::has_neg_zero ? static_cast<std::uint8_t>(F::nan_code | sign) : F::nan_code;
  const std::uint8_t too_big = overflow == Fp8Overflow::saturate ? static_cast<std::uint8_t>(F::max_code | sign) : nan;
  if (a > 0x7F800000u) return nan;                // NaN
  if (a == 0x7F800000u) return too_big;           // +-inf
  const int E = static_cast<int>(a >> 23) - 127;  // unbiased fp32 exponent (-127 for fp32 subnormals/zero)
  // The largest finite value has unbiased exponent 8 (fn: 1.75 * 2^8) or 7 (fnuz: 1.875 * 2^7).
  if (E > 15 - F::exp_bias) return too_big;
  const int emin = 1 - F::exp_bias;  // exponent of the smallest normal e4m3 value
  std::uint32_t code = 0;
  if (E == -127) {
    code = 0;  // fp32 zero or subnormal (< 2^-126): far below half the smallest e4m3 subnormal
  } else {
    const std::uint32_t mant = (a & 0x7FFFFFu) | 0x800000u;  // 24-bit significand, value mant * 2^(E-23)
    // Keep 3 fraction bits for a normal result; for a subnormal result keep the bits above 2^(emin-3).
    const int shift = E >= emin ? 20 : 20 + (emin - E);
    if (shift > 24) {
      code = 0;  // |x| < 2^(emin-4) = a quarter of the smallest subnormal: rounds to zero
    } else {
      std::uint32_t q = mant >> shift;
      const std::uint32_t rem = mant & ((1u << shift) - 1u);
      const std::uint32_t half = 1u << (shift - 1);
      if (rem > half || (rem == half && (q & 1u))) ++q;  // round to nearest, ties to even
      // Normal: q in [8, 16] holds the implicit bit; q == 16 carries into the exponent field.
      // Subnormal: q in [0, 8] is the code itself; q == 8 is the smallest normal (e = 1, m = 0).
      code = E >= emin ? (static_cast<std::uint32_t>(E + F::exp_bias) << 3) + q - 8u : q;
    }
  }
  if (code > F::max_code) return too_big;
  if (code == 0 && !F::has_neg_zero) return 0;  // fnuz has no -0: negative values that round to 0 give +0
  return static_cast<std::uint8_t>(code | sign);
}

}  // namespace detail

/// e4m3fn code (OCP FP8 E4M3, bias 7) -> float. Exact for every code; 0x7F/0xFF decode to NaN.
ZYFA_HOST_DEVICE constexpr float e4m3fn_to_float(std::uint8_t code) {
  return detail::e4m3_to_float<E4M3fnFormat>(code);
}

/// float -> e4m3fn code, round to nearest, ties to even, subnormals kept (smallest 2^-9; values up to
/// 2^-10 inclusive round to +-0). Overflow and inf per `overflow` (default: saturate to +-448); NaN ->
/// 0x7F with the input's sign (0x7F or 0xFF). -0.0f -> 0x80.
ZYFA_HOST_DEVICE constexpr std::uint8_t float_to_e4m3fn(float x, Fp8Overflow overflow = Fp8Overflow::saturate) {
  return detail::float_to_e4m3<E4M3fnFormat>(x, overflow);
}

/// e4m3fnuz code (bias 8, gfx942) -> float. Exact for every code; 0x80 decodes to NaN.
ZYFA_HOST_DEVICE constexpr float e4m3fnuz_to_float(std::uint8_t code) {
  return detail::e4m3_to_float<E4M3fnuzFormat>(code);
}

/// float -> e4m3fnuz code, round to nearest, ties to even, subnormals kept (smallest 2^-10). Overflow
/// and inf per `overflow` (default: saturate to +-240); NaN -> 0x80. Results of zero are always 0x00
/// (the format has no -0; -0.0f and tiny negative values give 0x00).
ZYFA_HOST_DEVICE constexpr std::uint8_t float_to_e4m3fnuz(float x, Fp8Overflow overflow = Fp8Overflow::saturate) {
  return detail::float_to_e4m3<E4M3fnuzFormat>(x, overflow);
}

/// Largest finite e4m3fn value (code 0x7E).
inline constexpr float kE4M3fnMax = 448.0f;
/// Largest finite e4m3fnuz value (code 0x7F).
inline constexpr float kE4M3fnuzMax = 240.0f;

}  // namespace zyfa
