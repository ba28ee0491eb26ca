// zyfa/fp8/sm90/launch.hpp -- host side of the sm_90a FP8 kernel (fp8/sm90/fwd_kernel.hpp): the built-in head dims,
// applicability, tensor maps and the launch.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>

#include "../../dtype.hpp"
#include "../../arch/sm90_probe.hpp"
#include "../../params.hpp"
#include "../../platform/platform.hpp"
#include "../../status.hpp"
#include "config.hpp"
#include "fwd_kernel.hpp"

#if ZYFA_PLATFORM_CUDA

namespace zyfa::fp8::sm90 {

/// True if the current device can run this translation unit's sm_90a FP8 kernel (compute capability 9.0 and the
/// body compiled for sm_90a, read once per device with cudaMemcpyFromSymbol, which synchronizes: make the first call
/// outside stream capture). `*sm_count`: the device's multiprocessor count. Never fails loudly.
inline bool device_ok(int* sm_count) {
  static arch::sm90::KernelProbeCache cache;
  return arch::sm90::sm90a_kernel_ok(&cache, &g_fp8_body_compiled, sm_count);
}

/// Why the TMA tensor maps cannot address params' tensors (empty when they can): base addresses 16-byte aligned,
/// q/k/v strides (e4m3fn, 1 byte) multiples of 16 elements, out strides (bf16) multiples of 8 elements, all > 0.
inline std::string tensors_unusable(const AttentionParams& p) {
  const struct {
    const char* name;
    const void* ptr;
    std::int64_t bs, rs, hs;
    int elems;  // elements per 16 bytes
  } t[4] = {{"q", p.q, p.q_batch_stride, p.q_row_stride, p.q_head_stride, 16},
            {"k", p.k, p.k_batch_stride, p.k_row_stride, p.k_head_stride, 16},
            {"v", p.v, p.v_batch_stride, p.v_row_stride, p.v_head_stride, 16},
            {"out", p.out, p.out_batch_stride, p.out_row_stride, p.out_head_stride, 8}};
  for (const auto& x : t) {
    if (reinterpret_cast<std::uintptr_t>(x.ptr) % 16 != 0)
      return std::string(x.name) + ": the sm_90a FP8 kernel needs a 16-byte aligned data pointer";
    for (std::int64_t s : {x.bs, x.rs, x.hs})
      if (s <= 0 || s % x.elems != 0 || s >= (std::int64_t{1} << 39))
        return std::string(x.name) + ": the sm_90a FP8 kernel needs strides that are positive multiples of 16 bytes (" +
               std::to_string(x.elems) + " elements), got " + std::to_string(s);
  }
  return {};
}

/// Launches fwd_kernel<Cfg> for validated e4m3fn params (make_params) with head dims (Cfg::kDQK, Cfg::kDV).
/// Errors: StatusCode::unsupported when the device is not an sm_90a GPU with this kernel compiled, or the tensors
/// cannot be addressed by TMA (tensors_unusable names the argument); StatusCode::runtime_error when the
/// shared-memory opt-in or the launch fails. causal_pairs: causal calls with at least one m-block pair per SM take
/// the balanced pairs order (arch/sm90_work_order.hpp); false: the single-tile order (for comparison).
template <class Cfg>
Status launch(const AttentionParams& p, rt::stream_t stream, bool causal_pairs = true) {
  int sm_count = 0;
  if (!device_ok(&sm_count))
    return Status::unsupported(
        "q: e4m3fn on this GPU: the FP8 kernel runs on sm_90a (H100/H200) and must be compiled with "
        "-gencode=arch=compute_90a,code=sm_90a");
  if (std::string why = tensors_unusable(p); !why.empty()) return Status::unsupported(why);
  const std::int64_t blocks = p.query_blocks(Cfg::kBlockM);
  if (blocks <= 0) return Status::success();
  Fp8Args a{};
  using u64 = std::uint64_t;
  auto enc_u8 = [](CUtensorMap* map, const void* ptr, std::int64_t d, std::int64_t s, std::int64_t hds, std::int64_t bt,
                   std::int64_t rs, std::int64_t hs, std::int64_t bs, int rows) {
    const u64 dims[4] = {static_cast<u64>(d), static_cast<u64>(s), static_cast<u64>(hds), static_cast<u64>(bt)};
    const u64 strides[3] = {static_cast<u64>(rs), static_cast<u64>(hs), static_cast<u64>(bs)};
    return arch::sm90::encode_tensor_map_u8_4d(map, ptr, dims, strides, static_cast<std::uint32_t>(rows));
  };
  const u64 odims[4] = {static_cast<u64>(p.head_dim_v), static_cast<u64>(p.seqlen_q), static_cast<u64>(p.num_heads),
                        static_cast<u64>(p.batch)};
  const u64 ostrides[3] = {static_cast<u64>(p.out_row_stride) * 2, static_cast<u64>(p.out_head_stride) * 2,
                           static_cast<u64>(p.out_batch_stride) * 2};
  if (!enc_u8(&a.tm_q, p.q, p.head_dim_qk, p.seqlen_q, p.num_heads, p.batch, p.q_row_stride, p.q_head_stride,
              p.q_batch_stride, Cfg::kBlockM) ||
      !enc_u8(&a.tm_k, p.k, p.head_dim_qk, p.seqlen_k, p.num_heads_k, p.batch, p.k_row_stride, p.k_head_stride,
              p.k_batch_stride, Cfg::kBlockN) ||
      !enc_u8(&a.tm_v, p.v, p.head_dim_v, p.seqlen_k, p.num_heads_k, p.batch, p.v_row_stride, p.v_head_stride,
              p.v_batch_stride, Cfg::kBlockN) ||
      !arch::sm90::encode_tensor_map_bf16_4d(&a.tm_o, p.out, odims, ostrides, 64))
    return Status::unsupported(
        "q: the driver rejected a TMA tensor map of q/k/v/out (sizes or strides beyond 2^32 "
        "elements or 2^40 bytes)");
  a.v = static_cast<const std::uint8_t*>(p.v);
  a.out = static_cast<std::uint16_t*>(p.out);
  a.lse = p.softmax_lse;
  a.v_batch_stride = p.v_batch_stride;
  a.v_row_stride = p.v_row_stride;
  a.v_head_stride = p.v_head_stride;
  a.o_batch_stride = p.out_batch_stride;
  a.o_row_stride = p.out_row_stride;
  a.o_head_stride = p.out_head_stride;
  a.num_blocks = blocks;
  // Causal: balanced pairs of m blocks (arch/sm90_work_order.hpp) when every CTA gets one.
  const int num_m_blocks = static_cast<int>((p.seqlen_q + Cfg::kBlockM - 1) / Cfg::kBlockM);
  const arch::sm90::WorkOrderArgs wo =
      arch::sm90::causal_work_order(causal_pairs && p.causal, p.batch * p.num_heads, num_m_blocks, blocks, sm_count);
  a.num_pairs = wo.num_pairs;
  a.pair_tail = wo.tail;
  a.pair_div = arch::sm90::causal_pair_divisors(static_cast<unsigned>(sm_count), wo.num_pairs, wo.tail, num_m_blocks,
                                                static_cast<int>(p.num_heads));
  a.num_steps = wo.num_steps;
  a.batch = static_cast<int>(p.batch);
  a.seqlen_q = static_cast<int>(p.seqlen_q);
  a.seqlen_k = static_cast<int>(p.seqlen_k);
  a.num_heads = static_cast<int>(p.num_heads);
  a.group_size = static_cast<int>(p.group_size());
  a.num_m_blocks = num_m_blocks;
  a.causal = p.causal ? 1 : 0;
  a.causal_offset = static_cast<int>(p.causal_offset());
  a.scale_log2 = p.scale_softmax_log2;
  a.v_descale = p.v_descale;
  a.lse_rest = lean_p_lse_rest(kBlockMaxCode);
  auto kernel = fwd_kernel<Cfg>;
  const rt::error_t attr_err = rt::set_max_dynamic_shared_bytes(kernel, Cfg::kSmemBytes);
  if (attr_err != rt::success)
    return Status::runtime(std::string("setting the dynamic shared memory limit to ") +
                           std::to_string(Cfg::kSmemBytes) + " bytes failed: " + rt::error_string(attr_err));
  const unsigned grid = static_cast<unsigned>(blocks > sm_count ? sm_count : blocks);
  kernel<<<dim3(grid), dim3(Cfg::kThreads), Cfg::kSmemBytes, stream>>>(a);
  const rt::error_t err = rt::get_last_error();
  if (err != rt::success) return Status::runtime(std::string("kernel launch failed: ") + rt::error_string(err));
  return Status::success();
}

/// The built-in sm_90a FP8 kernels: head dims (128, 128) and (192, 128), e4m3fn, `mode` PMode::lean_p (the `zyfa`
/// recipe, what flash_attn_func runs) or PMode::exp2 (the `zyfa_exact` ablation); causal_pairs as launch. Errors: as
/// launch; unsupported naming head_dim for other head dims and naming q for e4m3fnuz (an AMD format; Hopper's is
/// e4m3fn).
inline Status launch_builtin(const AttentionParams& p, rt::stream_t stream, PMode mode = PMode::lean_p,
                             bool causal_pairs = true) {
  if (p.qkv_dtype != DType::e4m3fn)
    return Status::unsupported(std::string("q: dtype ") + dtype_name(p.qkv_dtype) +
                               " has no kernel on NVIDIA GPUs (their FP8 format is e4m3fn)");
  const bool lean = mode == PMode::lean_p;
  if (p.head_dim_qk == 128 && p.head_dim_v == 128)
    return lean ? launch<Fp8Config<128, 128, PMode::lean_p>>(p, stream, causal_pairs)
                : launch<Fp8Config<128, 128, PMode::exp2>>(p, stream, causal_pairs);
  if (p.head_dim_qk == 192 && p.head_dim_v == 128)
    return lean ? launch<Fp8Config<192, 128, PMode::lean_p>>(p, stream, causal_pairs)
                : launch<Fp8Config<192, 128, PMode::exp2>>(p, stream, causal_pairs);
  return Status::unsupported(
      "head_dim: the sm_90a FP8 kernel is built for (head_dim_qk, head_dim_v) = (128, 128) and "
      "(192, 128), got (" +
      std::to_string(p.head_dim_qk) + ", " + std::to_string(p.head_dim_v) + ")");
}

}  // namespace zyfa::fp8::sm90

#endif  // ZYFA_PLATFORM_CUDA
