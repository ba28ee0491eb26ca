// zyfa/numeric/constants.hpp -- the fp32 constants every backend shares, so host specification, validation and
// kernels round them identically.
#pragma once

namespace zyfa {

/// log2(e) rounded to fp32: converts natural-log-domain logits to the log2 domain (exp(x) = 2^(x * kLog2e)).
inline constexpr float kLog2e = 1.44269504088896340736f;
/// ln(2) rounded to fp32: converts a log2-domain LSE back to the natural log softmax_lse is given in.
inline constexpr float kLn2 = 0.693147180559945309417f;

}  // namespace zyfa
