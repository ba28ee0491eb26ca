// zyfa/bf16/launch.hpp -- zyfa::bf16::launch<Config>: runs one BF16 forward kernel configuration.
#pragma once
#include <cstdint>
#include <limits>
#include <string>

#include "../params.hpp"
#include "../platform/platform.hpp"
#include "../status.hpp"
#include "fwd_args.hpp"
#include "fwd_kernel.hpp"

#if !ZYFA_PLATFORM_HOST

namespace zyfa::bf16 {

/// Launches the BF16 forward kernel built from `Config` (a KernelConfig) on `stream`.
/// `params` must come from make_params (validated). Asynchronous: returns after the launch is queued.
/// Errors: StatusCode::unsupported when params' dtype is not bf16, its head dims differ from Config's
/// ("head_dim_qk: ..."), or the grid would exceed 2^31-1 blocks; StatusCode::runtime_error with the runtime's
/// message when the shared-memory opt-in or the launch fails.
template <class Config>
Status launch(const AttentionParams& params, rt::stream_t stream) {
  if (params.qkv_dtype != DType::bf16)
    return Status::unsupported(std::string("q: dtype ") + dtype_name(params.qkv_dtype) +
                               " is not supported by the BF16 kernels");
  if (params.head_dim_qk != Config::kDQK)
    return Status::unsupported("head_dim_qk: " + std::to_string(params.head_dim_qk) + " given to a kernel built for " +
                               std::to_string(Config::kDQK));
  if (params.head_dim_v != Config::kDV)
    return Status::unsupported("head_dim_v: " + std::to_string(params.head_dim_v) + " given to a kernel built for " +
                               std::to_string(Config::kDV));
  const std::int64_t blocks = params.query_blocks(Config::kBlockM);  // overflow-free (saturating)
  if (blocks > std::numeric_limits<std::int32_t>::max())
    return Status::unsupported("q: batch (" + std::to_string(params.batch) + ") * num_heads (" +
                               std::to_string(params.num_heads) + ") * ceil(seqlen_q (" +
                               std::to_string(params.seqlen_q) + ") / " + std::to_string(Config::kBlockM) +
                               ") blocks exceeds the grid limit 2^31-1");
  const FwdArgs args = make_fwd_args(params, Config::kBlockM);
  auto kernel = args.cu_seqlens_q != nullptr ? fwd_kernel<Config, true> : fwd_kernel<Config, false>;
  // Opt into > 48 KiB of dynamic shared memory on every launch (as FlashAttention does): the attribute belongs to
  // the current device's context, so a once-per-process opt-in would miss a second GPU. It is a cheap host call.
  const rt::error_t attr_err = rt::set_max_dynamic_shared_bytes(kernel, Config::kSmemBytes);
  if (attr_err != rt::success)
    return Status::runtime(std::string("setting the dynamic shared memory limit to ") +
                           std::to_string(Config::kSmemBytes) + " bytes failed: " + rt::error_string(attr_err));
  kernel<<<dim3(static_cast<unsigned>(blocks)), dim3(Config::kThreads), Config::kSmemBytes, stream>>>(args);
  const rt::error_t err = rt::get_last_error();
  if (err != rt::success) return Status::runtime(std::string("kernel launch failed: ") + rt::error_string(err));
  return Status::success();
}

}  // namespace zyfa::bf16

#endif  // !ZYFA_PLATFORM_HOST
