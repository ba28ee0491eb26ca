// zyfa/fp8/gfx950/code_object.hpp -- loads zyfa's generated gfx950 code objects (include/zyfa/fp8/gfx950/*.inc) with
// hipModuleLoadData, once per (code object, device), thread-safe; launches with hipModuleLaunchKernel.
// HIP on AMD only: the FP8 kernels are pre-generated gfx950 assembly (docs/design/DESIGN.md, docs/generator.md).
// On other platforms this
// header declares nothing.
//
// Pattern (docs/design/gfx950-facts.md section 5.3, after ROCm/aiter aiter_hip_common.h):
// hipModuleLoadData(bytes) ->
// hipModuleGetFunction(name) -> kernel arguments packed in one buffer laid out as the kernarg segment ->
// hipModuleLaunchKernel(f, grid in workgroups, block, dynamic LDS 0, stream, nullptr,
// {HIP_LAUNCH_PARAM_BUFFER_POINTER, buf, HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END}).
// Compiled in CI (tools/ci/check_generated.sh) but never run on a GPU: no MI355X has loaded these code objects.
// Modules stay loaded for the life of the process (never unloaded: a static destructor would run after the HIP
// runtime may have been torn down).
#pragma once
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "../../platform/platform.hpp"
#include "../../status.hpp"
#include "arch_name.hpp"

#if ZYFA_PLATFORM_HIP
namespace zyfa::fp8 {

/// One generated kernel inside a code object (all members point into a generated .inc).
struct CodeObjectRef {
  const unsigned char* data;  ///< ELF code object bytes (gfx950, code object v5)
  std::size_t size;           ///< size of data in bytes
  const char* kernel_name;    ///< kernel symbol for hipModuleGetFunction
};

namespace detail {
struct LoadedKernel {
  hipModule_t module = nullptr;
  hipFunction_t function = nullptr;
};

inline std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}
/// (code object address, device) -> loaded kernel. Entries are never erased.
inline std::map<std::pair<const void*, int>, LoadedKernel>& cache() {
  static std::map<std::pair<const void*, int>, LoadedKernel> c;
  return c;
}

inline Status hip_status(hipError_t e, const char* what, const char* kernel) {
  return Status::runtime(std::string(what) + " failed for " + kernel + ": " + hipGetErrorString(e));
}
}  // namespace detail

/// Checks that `device` (a HIP device ordinal) is a gfx950. Returns unsupported ("device 0 is gfx942
/// (gfx942:sramecc+:xnack-); zyfa's FP8 kernels are gfx950 (MI350X/MI355X) code") otherwise, runtime_error if
/// hipGetDeviceProperties fails.
inline Status check_gfx950(int device) {
  hipDeviceProp_t prop{};
  hipError_t e = hipGetDeviceProperties(&prop, device);
  if (e != hipSuccess) return detail::hip_status(e, "hipGetDeviceProperties", "zyfa fp8");
  if (!is_gfx950(prop.gcnArchName)) {
    return Status::unsupported("device " + std::to_string(device) + " is " + arch_base_name(prop.gcnArchName) +
                               " (" + prop.gcnArchName + "); zyfa's FP8 kernels are gfx950 (MI350X/MI355X) code");
  }
  return Status::success();
}

/// The hipFunction_t of `co` on the current device, loading the code object on first use. Thread-safe: the
/// first caller per (code object, device) loads under a mutex, later callers get the cached function.
/// Errors: invalid_argument if `fn` is null ("fn") or `co` is empty ("co"); unsupported if the current
/// device is not gfx950; runtime_error with HIP's message if
/// hipGetDevice / hipModuleLoadData / hipModuleGetFunction fail (a failed load is not cached; the next call
/// retries). `fn` is written only on success.
inline Status get_kernel(const CodeObjectRef& co, hipFunction_t* fn) {
  if (fn == nullptr) return Status::invalid("fn: null output pointer");
  if (co.data == nullptr || co.size == 0 || co.kernel_name == nullptr)
    return Status::invalid("co: empty code object reference");
  int device = -1;
  hipError_t e = hipGetDevice(&device);
  if (e != hipSuccess) return detail::hip_status(e, "hipGetDevice", co.kernel_name);
  std::lock_guard<std::mutex> lock(detail::cache_mutex());
  auto key = std::make_pair(static_cast<const void*>(co.data), device);
  auto it = detail::cache().find(key);
  if (it != detail::cache().end()) {
    *fn = it->second.function;
    return Status::success();
  }
  Status arch = check_gfx950(device);
  if (!arch) return arch;
  detail::LoadedKernel k;
  e = hipModuleLoadData(&k.module, co.data);
  if (e != hipSuccess) return detail::hip_status(e, "hipModuleLoadData", co.kernel_name);
  e = hipModuleGetFunction(&k.function, k.module, co.kernel_name);
  if (e != hipSuccess) {
    (void)hipModuleUnload(k.module);
    return detail::hip_status(e, "hipModuleGetFunction", co.kernel_name);
  }
  detail::cache().emplace(key, k);
  *fn = k.function;
  return Status::success();
}

/// Launches `co`'s kernel with the packed argument struct `args` (one of the generated *_args structs, whose
/// layout is pinned to the kernel's metadata) on `stream`. grid_x/y/z are in workgroups; block_x threads per
/// workgroup (y = z = 1); no dynamic LDS. Errors as get_kernel, plus runtime_error if the launch fails.
template <typename Args>
inline Status launch(const CodeObjectRef& co, const Args& args, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                     unsigned block_x, hipStream_t stream) {
  hipFunction_t fn = nullptr;
  Status st = get_kernel(co, &fn);
  if (!st) return st;
  Args copy = args;  // hipModuleLaunchKernel reads the buffer during the call; keep it alive and mutable
  std::size_t size = sizeof(Args);
  void* config[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, &copy, HIP_LAUNCH_PARAM_BUFFER_SIZE, &size,
                    HIP_LAUNCH_PARAM_END};
  hipError_t e = hipModuleLaunchKernel(fn, grid_x, grid_y, grid_z, block_x, 1, 1, 0, stream, nullptr, config);
  if (e != hipSuccess) return detail::hip_status(e, "hipModuleLaunchKernel", co.kernel_name);
  return Status::success();
}

}  // namespace zyfa::fp8
#endif  // ZYFA_PLATFORM_HIP
