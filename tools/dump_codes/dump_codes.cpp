// dump_codes -- prints zyfa's numeric conversions so tests/python/test_numeric_codes.py can compare them
// with ml_dtypes (an independent implementation).
//
//   dump_codes decode   256 lines: "<code> <e4m3fn float bits> <e4m3fnuz float bits>" (hex)
//   dump_codes encode   reads fp32 bit patterns (hex, one per line) on stdin; per input prints
//                       "<e4m3fn sat> <e4m3fn to_nan> <e4m3fnuz sat> <e4m3fnuz to_nan> <bf16>" (hex)
//   dump_codes bf16dec  65536 lines: "<bf16 bits> <float bits>" (hex)
// Built by the pytest itself with the host compiler (g++ -std=c++17 -Iinclude).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <zyfa/numeric/bf16.hpp>
#include <zyfa/numeric/e4m3.hpp>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: dump_codes decode|encode|bf16dec\n");
    return 2;
  }
  if (std::strcmp(argv[1], "decode") == 0) {
    for (unsigned c = 0; c < 256; ++c)
      std::printf("%02x %08x %08x\n", c, zyfa::float_bits(zyfa::e4m3fn_to_float(static_cast<std::uint8_t>(c))),
                  zyfa::float_bits(zyfa::e4m3fnuz_to_float(static_cast<std::uint8_t>(c))));
    return 0;
  }
  if (std::strcmp(argv[1], "bf16dec") == 0) {
    for (unsigned c = 0; c < 65536; ++c)
      std::printf("%04x %08x\n", c, zyfa::float_bits(zyfa::bf16_to_float(static_cast<std::uint16_t>(c))));
    return 0;
  }
  if (std::strcmp(argv[1], "encode") == 0) {
    unsigned bits = 0;
    using zyfa::Fp8Overflow;
    while (std::scanf("%x", &bits) == 1) {
      const float x = zyfa::float_from_bits(bits);
      std::printf("%02x %02x %02x %02x %04x\n", zyfa::float_to_e4m3fn(x, Fp8Overflow::saturate),
                  zyfa::float_to_e4m3fn(x, Fp8Overflow::to_nan), zyfa::float_to_e4m3fnuz(x, Fp8Overflow::saturate),
                  zyfa::float_to_e4m3fnuz(x, Fp8Overflow::to_nan), zyfa::float_to_bf16(x));
    }
    return 0;
  }
  std::fprintf(stderr, "dump_codes: unknown mode '%s'\n", argv[1]);
  return 2;
}
