// zyfa/head_dims.hpp -- THE list of built-in (head_dim_qk, head_dim_v) pairs. It drives the kernels
// flash_attn_func instantiates and dispatches (bf16/builtin.hpp), the tile table (tile_config.hpp), error messages,
// the device-compile report, the tests (tests/gpu, tests/python read this line) and the docs (tests/python
// test_docs.py checks README.md and docs/interface.md against it). Any other pair that make_params accepts
// (head dims multiples of 8 for bf16, up to 256) runs through one explicit instantiation (examples/custom_head_dim).
#pragma once
#include <string>

/// X(head_dim_qk, head_dim_v) for every built-in pair, in dispatch order: MHA/GQA 64, 128, 256 and the MLA pair
/// (192, 128) of DeepSeek-V2/V3 prefill.
#define ZYFA_BUILTIN_HEAD_DIMS(X) X(64, 64) X(128, 128) X(256, 256) X(192, 128)

namespace zyfa {

/// One (head_dim_qk, head_dim_v) pair, in elements.
struct HeadDims {
  int qk;
  int v;
};

#define ZYFA_HEAD_DIMS_ENTRY_(QK, V) HeadDims{QK, V},
/// The built-in pairs as data (same order as ZYFA_BUILTIN_HEAD_DIMS).
inline constexpr HeadDims kBuiltinHeadDims[] = {ZYFA_BUILTIN_HEAD_DIMS(ZYFA_HEAD_DIMS_ENTRY_)};
#undef ZYFA_HEAD_DIMS_ENTRY_

/// True if (qk, v) is a built-in pair.
constexpr bool is_builtin_head_dims(int qk, int v) {
  for (const HeadDims& d : kBuiltinHeadDims)
    if (d.qk == qk && d.v == v) return true;
  return false;
}

/// "(64, 64), (128, 128), (256, 256), (192, 128)": the list for messages.
inline std::string builtin_head_dims_text() {
  std::string s;
  for (const HeadDims& d : kBuiltinHeadDims)
    s += (s.empty() ? "(" : ", (") + std::to_string(d.qk) + ", " + std::to_string(d.v) + ")";
  return s;
}

}  // namespace zyfa
