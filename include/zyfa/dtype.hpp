// zyfa/dtype.hpp -- element types zyfa's interface speaks about (run-time tags; the C++ value types and
// their conversions live in numeric/).
#pragma once
#include <cstdint>

namespace zyfa {

/// Element type of a tensor. Sources: OCP 8-bit Floating Point Specification (OFP8) rev 1.0 for e4m3fn;
/// docs/design/gfx950-facts.md section 2 and numeric/e4m3.hpp for both E4M3 flavours.
enum class DType : std::uint8_t {
  bf16,      ///< bfloat16: 1 sign, 8 exponent, 7 mantissa bits
  fp32,      ///< IEEE binary32
  e4m3fn,    ///< OCP FP8 E4M3 "fn": bias 7, no inf, NaN = S.1111.111, max 448 (gfx950, sm_90)
  e4m3fnuz,  ///< FP8 E4M3 "fnuz": bias 8, no inf, no -0, NaN = 0x80, max 240 (gfx942 only)
};

/// Size of one element in bytes.
constexpr int dtype_size(DType t) { return t == DType::fp32 ? 4 : (t == DType::bf16 ? 2 : 1); }

/// Lower-case name as used in messages and file formats ("bf16", "fp32", "e4m3fn", "e4m3fnuz").
constexpr const char* dtype_name(DType t) {
  switch (t) {
    case DType::bf16:
      return "bf16";
    case DType::fp32:
      return "fp32";
    case DType::e4m3fn:
      return "e4m3fn";
    case DType::e4m3fnuz:
      return "e4m3fnuz";
  }
  return "?";
}

/// True for the FP8 types (e4m3fn, e4m3fnuz).
constexpr bool is_fp8(DType t) { return t == DType::e4m3fn || t == DType::e4m3fnuz; }

}  // namespace zyfa
