// zyfa/arch/fast_divmod.hpp -- division by a divisor fixed at launch as a multiply and a shift (the persistent
// kernels' work orders divide tile indices by call constants once per work tile; nvcc's 32-bit unsigned division is
// a sequence of about 20 instructions with a MUFU.RCP).
//
// Granlund & Montgomery 1994, "Division by invariant integers using multiplication" (PLDI), section 4: for a divisor
// d in [1, 2^31) take p = ceil(log2 d) (2^p >= d) and m = ceil(2^(31+p) / d) < 2^32. Then for every n in [0, 2^31),
// floor(n * m / 2^(31+p)) = floor(n / d): with m * d = 2^(31+p) + e, 0 <= e < d, n * m / 2^(31+p) = n / d +
// n * e / (d * 2^(31+p)), whose second term is below n / 2^(31+p) < 2^-p <= 1 / d, and the fractional part of n / d
// is at most (d - 1) / d, so the floor does not move. CUTLASS's FastDivmod (cutlass/fast_math.h) is the same idea.
#pragma once
#include <cstdint>

#include "../platform/platform.hpp"

namespace zyfa::arch {

/// floor(n / d) and n mod d for n in [0, 2^31) and a divisor d in [1, 2^31) chosen on the host (make). A divisor
/// of 0 is taken as 1 (callers that never divide by it may pass it). Plain data: it travels in kernel arguments.
struct FastDivmod {
  std::uint32_t d = 1;         ///< the divisor
  std::uint32_t m = 1u << 31;  ///< ceil(2^shift / d)
  std::uint32_t shift = 31;    ///< 31 + ceil(log2 d)

  static FastDivmod make(std::uint32_t divisor) {
    FastDivmod f;
    f.d = divisor == 0 ? 1 : divisor;
    std::uint32_t p = 0;
    while ((std::uint64_t{1} << p) < f.d) ++p;
    f.shift = 31 + p;
    f.m = static_cast<std::uint32_t>(((std::uint64_t{1} << f.shift) + f.d - 1) / f.d);
    return f;
  }
  /// floor(n / d), n < 2^31.
  ZYFA_HOST_DEVICE std::uint32_t div(std::uint32_t n) const {
    return static_cast<std::uint32_t>((static_cast<std::uint64_t>(n) * m) >> shift);
  }
  /// A quotient and its remainder: quot = floor(n / d), rem = n - quot * d (in [0, d)).
  struct QuotRem {
    std::uint32_t quot, rem;
  };
  /// floor(n / d) and n mod d in one call (one multiply-high and shift, one multiply-subtract). n must be below 2^31
  /// (the bound of the proof above); larger n gives wrong values, not an error.
  ZYFA_HOST_DEVICE QuotRem divmod(std::uint32_t n) const {
    const std::uint32_t q = div(n);
    return {q, n - q * d};
  }
};

}  // namespace zyfa::arch
