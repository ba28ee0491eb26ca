// zyfa/platform/host.hpp -- runtime names when no GPU toolchain is compiling (host backend only).
#pragma once

namespace zyfa::rt {
/// Opaque stream handle; on a host-only build every call runs synchronously and the stream is ignored.
using stream_t = void*;
/// Error code of the (absent) GPU runtime; always `success` on the host.
using error_t = int;
inline constexpr error_t success = 0;
/// Fixed text: a host-only build has no runtime to report errors.
inline const char* error_string(error_t) { return "no GPU runtime (host-only build)"; }
/// False: only the host backend (host/backend.hpp) is available; flash_attn.hpp declares nothing.
inline constexpr bool has_gpu_runtime = false;
}  // namespace zyfa::rt
