// Numeric conversions (zyfa/numeric/): exhaustive round trips and hand-checked ties/saturation.
// tests/python/test_numeric_codes.py compares the same functions with ml_dtypes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <zyfa/zyfa.hpp>

// Usable in constant expressions (and therefore free of host-only calls).
static_assert(zyfa::float_to_e4m3fn(448.0f) == 0x7E);
static_assert(zyfa::e4m3fn_to_float(0x38) == 1.0f);
static_assert(zyfa::float_to_bf16(1.0f) == 0x3F80);
static_assert(zyfa::e4m3fnuz_to_float(0x7F) == 240.0f);

TEST_CASE("e4m3fn/e4m3fnuz: every finite code decodes and encodes back to itself") {
  for (unsigned c = 0; c < 256; ++c) {
    CAPTURE(c);
    const auto code = static_cast<std::uint8_t>(c);
    const float fn = zyfa::e4m3fn_to_float(code);
    if ((c & 0x7F) == 0x7F) {
      CHECK(std::isnan(fn));
    } else {
      CHECK(zyfa::float_to_e4m3fn(fn) == code);
      CHECK(zyfa::float_to_e4m3fn(fn, zyfa::Fp8Overflow::to_nan) == code);
    }
    const float fnuz = zyfa::e4m3fnuz_to_float(code);
    if (c == 0x80) {
      CHECK(std::isnan(fnuz));
    } else {
      CHECK(zyfa::float_to_e4m3fnuz(fnuz) == code);
    }
  }
}

TEST_CASE("e4m3fn decode follows the OCP formula") {
  for (unsigned c = 0; c < 0x7F; ++c) {
    const int e = c >> 3, m = c & 7;
    const double want = e == 0 ? m * std::ldexp(1.0, -9) : (1 + m / 8.0) * std::ldexp(1.0, e - 7);
    CHECK(zyfa::e4m3fn_to_float(static_cast<std::uint8_t>(c)) == want);
    CHECK(zyfa::e4m3fn_to_float(static_cast<std::uint8_t>(c | 0x80)) == -want);
  }
  for (unsigned c = 0; c < 0x80; ++c) {
    const int e = c >> 3, m = c & 7;
    const double want = e == 0 ? m * std::ldexp(1.0, -10) : (1 + m / 8.0) * std::ldexp(1.0, e - 8);
    CHECK(zyfa::e4m3fnuz_to_float(static_cast<std::uint8_t>(c)) == want);
  }
}

TEST_CASE("e4m3 encode: ties to even between every pair of neighbours, and just off the tie") {
  for (int fmt = 0; fmt < 2; ++fmt) {
    auto dec = [&](unsigned c) {
      return fmt ? zyfa::e4m3fnuz_to_float(static_cast<std::uint8_t>(c))
                 : zyfa::e4m3fn_to_float(static_cast<std::uint8_t>(c));
    };
    auto enc = [&](float x) { return fmt ? zyfa::float_to_e4m3fnuz(x) : zyfa::float_to_e4m3fn(x); };
    const unsigned top = fmt ? 0x7F : 0x7E;
    for (unsigned c = 0; c < top; ++c) {
      CAPTURE(fmt);
      CAPTURE(c);
      const float lo = dec(c), hi = dec(c + 1), mid = (lo + hi) / 2;  // exact in fp32
      CHECK(enc(mid) == ((c & 1) ? c + 1 : c));
      CHECK(enc(std::nextafter(mid, 0.0f)) == c);
      CHECK(enc(std::nextafter(mid, 1000.0f)) == c + 1);
      if (c > 0) CHECK(enc(-mid) == (((c & 1) ? c + 1 : c) | 0x80));
    }
  }
}

TEST_CASE("e4m3 encode: saturation, infinities, NaN, zeros, tiny values") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  using zyfa::Fp8Overflow;
  CHECK(zyfa::float_to_e4m3fn(464.0f) == 0x7E);                       // tie between 448 and (480): even
  CHECK(zyfa::float_to_e4m3fn(464.1f) == 0x7E);                       // saturates
  CHECK(zyfa::float_to_e4m3fn(464.1f, Fp8Overflow::to_nan) == 0x7F);  // OCP non-saturating
  CHECK(zyfa::float_to_e4m3fn(1e30f) == 0x7E);
  CHECK(zyfa::float_to_e4m3fn(-1e30f) == 0xFE);
  CHECK(zyfa::float_to_e4m3fn(inf) == 0x7E);
  CHECK(zyfa::float_to_e4m3fn(-inf) == 0xFE);
  CHECK(zyfa::float_to_e4m3fn(inf, Fp8Overflow::to_nan) == 0x7F);
  CHECK((zyfa::float_to_e4m3fn(nan) & 0x7F) == 0x7F);
  CHECK(zyfa::float_to_e4m3fn(0.0f) == 0x00);
  CHECK(zyfa::float_to_e4m3fn(-0.0f) == 0x80);
  CHECK(zyfa::float_to_e4m3fn(1e-40f) == 0x00);                 // fp32 subnormal
  CHECK(zyfa::float_to_e4m3fn(std::ldexp(1.0f, -10)) == 0x00);  // half the smallest subnormal: tie to 0
  CHECK(zyfa::float_to_e4m3fn(std::nextafter(std::ldexp(1.0f, -10), 1.0f)) == 0x01);
  CHECK(zyfa::float_to_e4m3fnuz(248.0f) == 0x7F);
  CHECK(zyfa::float_to_e4m3fnuz(-inf) == 0xFF);
  CHECK(zyfa::float_to_e4m3fnuz(300.0f, Fp8Overflow::to_nan) == 0x80);
  CHECK(zyfa::float_to_e4m3fnuz(nan) == 0x80);
  CHECK(zyfa::float_to_e4m3fnuz(-0.0f) == 0x00);  // no -0
  CHECK(zyfa::float_to_e4m3fnuz(-1e-5f) == 0x00);
}

TEST_CASE("bf16: every non-NaN pattern round-trips; ties to even; overflow to inf; NaN stays NaN") {
  for (unsigned b = 0; b < 65536; ++b) {
    const float f = zyfa::bf16_to_float(static_cast<std::uint16_t>(b));
    if (std::isnan(f)) {
      CHECK(std::isnan(zyfa::bf16_to_float(zyfa::float_to_bf16(f))));
    } else {
      CHECK(zyfa::float_to_bf16(f) == b);
    }
  }
  CHECK(zyfa::float_to_bf16(zyfa::float_from_bits(0x3F808000u)) == 0x3F80);  // tie, even stays
  CHECK(zyfa::float_to_bf16(zyfa::float_from_bits(0x3F818000u)) == 0x3F82);  // tie, odd rounds up
  CHECK(zyfa::float_to_bf16(zyfa::float_from_bits(0x3F808001u)) == 0x3F81);
  CHECK(zyfa::float_to_bf16(zyfa::float_from_bits(0x7F7FFFFFu)) == 0x7F80);  // fp32 max -> inf
  CHECK(zyfa::float_to_bf16(zyfa::float_from_bits(0x00008000u)) == 0x0000);  // subnormal tie -> even (0)
  CHECK(zyfa::float_to_bf16(zyfa::float_from_bits(0x00018000u)) == 0x0002);
  CHECK(zyfa::float_to_bf16(-std::numeric_limits<float>::quiet_NaN()) == 0xFFC0);
}
