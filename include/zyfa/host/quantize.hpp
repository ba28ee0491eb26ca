// zyfa/host/quantize.hpp -- per-tensor FP8 (e4m3fn) quantization of host float data.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "../numeric/e4m3.hpp"
#include "../status.hpp"

namespace zyfa::host {

/// Per-tensor e4m3fn quantization, the convention of FP8 attention APIs (FlashAttention-3, AITER):
///   amax = max_i |x_i|;  descale = amax / 448 (fp32 division; 448 = largest e4m3fn value);
///   codes_i = float_to_e4m3fn(x_i / descale)  (fp32 division, RNE, saturating to +-448).
/// The dequantized value of element i is e4m3fn_to_float(codes_i) * descale; pass `descale` as the
/// q_descale / k_descale / v_descale of AttentionOptions. If amax == 0 the descale is 1 and all codes are 0.
/// `x` and `codes` hold `n` elements (host memory; the caller picks the order, e.g. dense BSHD).
/// Errors (invalid_argument): null `x`, `codes` or `descale` (named); a non-finite element ("x[i] is ...");
/// amax so small that amax / 448 is not a normal fp32 number (< 448 * 2^-126: descale would lose bits).
inline Status quantize_e4m3fn(const float* x, std::size_t n, std::uint8_t* codes, float* descale) {
  if (x == nullptr) return Status::invalid("x: data pointer is null");
  if (codes == nullptr) return Status::invalid("codes: output pointer is null");
  if (descale == nullptr) return Status::invalid("descale: output pointer is null");
  float amax = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i]))
      return Status::invalid("x[" + std::to_string(i) + "] is " + std::to_string(x[i]) +
                             "; FP8 quantization needs finite values");
    amax = std::fmax(amax, std::fabs(x[i]));
  }
  if (amax == 0.0f) {
    for (std::size_t i = 0; i < n; ++i) codes[i] = 0;
    *descale = 1.0f;
    return Status::success();
  }
  const float d = amax / kE4M3fnMax;
  if (!std::isnormal(d))
    return Status::invalid("x: largest magnitude " + std::to_string(amax) + " is too small for a normal fp32 descale");
  for (std::size_t i = 0; i < n; ++i) codes[i] = float_to_e4m3fn(x[i] / d);
  *descale = d;
  return Status::success();
}

}  // namespace zyfa::host
