// zyfa/fp8/gfx950/arch_name.hpp -- parsing of the device architecture string for the FP8 code-object loader.
// Platform-free (host C++), so it is testable without a GPU runtime.
#pragma once
#include <cstring>
#include <string>

namespace zyfa::fp8 {

/// Base processor of a HIP gcnArchName string: the part before the first ':' (target features such as
/// ":sramecc+:xnack-" follow it). "gfx950:sramecc+:xnack-" -> "gfx950"; nullptr -> "".
/// Source of the format: docs/design/gfx950-facts.md section 5.3 (AITER splits gcnArchName at ':').
inline std::string arch_base_name(const char* gcn_arch_name) {
  if (gcn_arch_name == nullptr) return {};
  const char* colon = std::strchr(gcn_arch_name, ':');
  return colon ? std::string(gcn_arch_name, colon) : std::string(gcn_arch_name);
}

/// True iff the device string names gfx950 (AMD Instinct MI350X/MI355X), with any target features.
/// zyfa's generated FP8 code objects are assembled for gfx950 only (v_mfma_scale_f32_32x32x64_f8f6f4, OCP e4m3fn).
inline bool is_gfx950(const char* gcn_arch_name) { return arch_base_name(gcn_arch_name) == "gfx950"; }

}  // namespace zyfa::fp8
