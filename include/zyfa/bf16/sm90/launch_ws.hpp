// zyfa/bf16/sm90/launch_ws.hpp -- host side of the sm_90a warp-specialized BF16 kernel: the built-in tile table,
// tensor maps, the applicability check and the launch.
#pragma once
#include <cstdint>
#include <limits>
#include <string>

#include "../../arch/sm90_probe.hpp"
#include "../../params.hpp"
#include "../../platform/platform.hpp"
#include "../../status.hpp"
#include "config_ws.hpp"
#include "fwd_kernel_ws.hpp"

#if ZYFA_PLATFORM_CUDA

namespace zyfa::bf16::sm90ws {

/// How work tiles reach CTAs. `persistent` (the default; what flash_attn_func uses and the H200 suite tested):
/// min(tiles, SMs) CTAs, static round-robin; causal: balanced pairs of m blocks of one head (WsOrder::causal_pairs),
/// or heaviest first when there are fewer pairs than SMs. The other two address the causal imbalance that
/// ncu shows (8% idle SM cycles at hd128 causal 8K, docs/sm90-wgmma.md) and are not yet measured with this kernel:
/// `persistent_snake` reverses every other round; `tile_grid_long_causal` launches one CTA per tile when causal and
/// seqlen_q > 4096 (the hardware then balances dynamically; the same kernel code, each CTA's loop runs once).
enum class WsSchedule { persistent, persistent_snake, tile_grid_long_causal };

/// Run-time work order of the causal kernel. section_bytes: the K and V bytes of the (batch, head) pairs that one
/// L2 section groups (work tiles of a section are taken m block by m block, its heads fastest, so concurrently
/// running CTAs share K/V in L2; FlashAttention-3's tile scheduler groups 32 MiB of K/V the same way); 0: one
/// section (all heads of an m block before the next m block). keys_ascending: key tiles first to last instead of
/// last (the diagonal) to first, so the CTAs of one head that start together read the same K/V tiles together.
/// causal_pairs: with WsSchedule::persistent, causal fixed-length calls whose (batch, head) pairs of m blocks
/// number at least the SMs take them as balanced pairs (arch/sm90_work_order.hpp; section_bytes then does not
/// apply); false: the single-tile order.
struct WsOrder {
  std::int64_t section_bytes = 0;
  bool keys_ascending = false;
  bool causal_pairs = true;
};

/// The sm_90a tile of a built-in head-dim pair (after FlashAttention-3's sizes, FA3 hopper/tile_size.h): BlockN 128
/// for head dims up to 192, 80 for 256, 2 consumer warpgroups; hd64: 3 consumer warpgroups (BlockM 192 x BlockN 128,
/// FA3's causal hd64 tile; its non-causal 192 x 192 keeps P in shared memory, which this kernel does not). Same pass
/// on the H200 (bench/RESULTS.md, 2026-12-03) against 2 warpgroups: causal 0.93-1.14x, non-causal (which had 192-key
/// tiles) 1.09-1.20x. The tile depends on the head dims and causal only, never on the lengths: a varlen sequence then
/// gives its own flash_attn_func call's bits (a 192-key tile for hd64 causal calls from 8,192 keys measured +6-7% at
/// 8K-16K but would break that).
template <int DQK, int DV, bool Causal>
struct WsTile {
  static constexpr int kBlockN = DQK > 192 ? 80 : 128;
  static constexpr int kConsumers = DQK == 64 ? 3 : 2;
  using type = WsConfig<DQK, DV, kBlockN, 2, kConsumers>;
};

/// True if the current device can run the sm_90a kernel of this translation unit: compute capability 9.0 and the
/// kernel body compiled for sm_90a (g_ws_body_compiled, read once per device with cudaMemcpyFromSymbol, which
/// synchronizes: make the first call outside stream capture). Host function; never fails loudly (false on any
/// runtime error).
/// `*sm_count` receives the device's multiprocessor count (the persistent grid size).
inline bool ws_device_ok(int* sm_count) {
  static arch::sm90::KernelProbeCache cache;
  return arch::sm90::sm90a_kernel_ok(&cache, &g_ws_body_compiled, sm_count);
}

/// True if TMA can address params' tensors: bf16, base addresses 16-byte aligned, every stride of q/k/v/out a
/// multiple of 8 elements (16 bytes), > 0 and < 2^39, also the strides of dims of size 1 (which make_params does not
/// check). Varlen: the batch strides are not checked (make_varlen_params sets them to 0; the packed batch has one
/// element). The rule is the same for a varlen call and for the fixed-length calls on its sequences' rows
/// ([1, seqlen, heads, head_dim] views with the packed row and head strides, starting cu_seqlens[b] rows into the
/// packed tensors: same 16-byte alignment, since row strides are multiples of 8 elements) whose batch strides pass.
inline bool ws_tensors_ok(const AttentionParams& p) {
  if (p.qkv_dtype != DType::bf16 || p.out_dtype != DType::bf16) return false;
  for (const void* ptr : {p.q, p.k, p.v, static_cast<const void*>(p.out)})
    if (reinterpret_cast<std::uintptr_t>(ptr) % 16 != 0) return false;
  const std::int64_t strides[12] = {p.q_row_stride,   p.q_head_stride,  p.k_row_stride,   p.k_head_stride,
                                    p.v_row_stride,   p.v_head_stride,  p.out_row_stride, p.out_head_stride,
                                    p.q_batch_stride, p.k_batch_stride, p.v_batch_stride, p.out_batch_stride};
  const int n = p.is_varlen() ? 8 : 12;
  for (int i = 0; i < n; ++i)
    if (strides[i] <= 0 || strides[i] % 8 != 0 || strides[i] >= (std::int64_t{1} << 39)) return false;
  return true;
}

/// Varlen: the batch stride (elements) given to the tensor map of a packed tensor [1, rows, heads, head_dim] (its
/// batch dim has one element, so the value only has to be valid for TMA): one past its last element, at least
/// its row and head strides, rounded up to a multiple of 8; -1 when that reaches 2^39 (TMA does not apply).
inline std::int64_t ws_packed_batch_stride(std::int64_t rows, std::int64_t heads, std::int64_t head_dim,
                                           std::int64_t row_stride, std::int64_t head_stride) {
  const long double end = static_cast<long double>(rows - 1) * row_stride +
                          static_cast<long double>(heads - 1) * head_stride + static_cast<long double>(head_dim);
  if (end >= static_cast<long double>(std::int64_t{1} << 39)) return -1;
  std::int64_t s = static_cast<std::int64_t>(end);
  if (s < row_stride) s = row_stride;
  if (s < head_stride) s = head_stride;
  s = (s + 7) / 8 * 8;
  return s < (std::int64_t{1} << 39) ? s : -1;
}

/// Launches fwd_kernel_ws<Cfg> for validated params (make_params, or make_varlen_params: the variable-length
/// form, fwd_kernel_ws<Cfg, Snake, true>) with head dims (Cfg::kDQK, Cfg::kDV).
/// `*launched` = false (and success) when this kernel does not apply (device, alignment, tensor-map encoding):
/// the caller then runs the portable mma.sync kernel. A persistent configuration (Cfg::kPersistent) launches
/// min(work tiles, SM count) CTAs and accepts any number of Cfg::kBlockM-row work tiles; otherwise one CTA per tile.
/// Errors: StatusCode::unsupported when a non-persistent grid would exceed 2^31-1 blocks;
/// StatusCode::runtime_error with the runtime's message when the shared-memory opt-in or the launch fails.
template <class Cfg, WsSchedule Schedule = WsSchedule::persistent>
Status launch_ws(const AttentionParams& p, rt::stream_t stream, bool* launched, const WsOrder& order = {}) {
  *launched = false;
  int sm_count = 0;
  if (p.head_dim_qk != Cfg::kDQK || p.head_dim_v != Cfg::kDV || !ws_tensors_ok(p) || !ws_device_ok(&sm_count))
    return Status::success();
  const std::int64_t blocks = p.query_blocks(Cfg::kBlockM);
  if (blocks <= 0) return Status::success();
  bool persistent = Cfg::kPersistent;
  if (Schedule == WsSchedule::tile_grid_long_causal && p.causal && p.seqlen_q > 32 * Cfg::kBlockM &&
      blocks <= std::numeric_limits<std::int32_t>::max())
    persistent = false;
  if (!persistent && blocks > std::numeric_limits<std::int32_t>::max())
    return Status::unsupported("q: batch (" + std::to_string(p.batch) + ") * num_heads (" +
                               std::to_string(p.num_heads) + ") * ceil(seqlen_q (" + std::to_string(p.seqlen_q) +
                               ") / " + std::to_string(Cfg::kBlockM) + ") blocks exceeds the grid limit 2^31-1");
  WsArgs a{};
  using u64 = std::uint64_t;
  auto enc = [](CUtensorMap* map, const void* ptr, std::int64_t d, std::int64_t s, std::int64_t hds, std::int64_t bt,
                std::int64_t rs, std::int64_t hs, std::int64_t bs, int rows) {
    const u64 dims[4] = {static_cast<u64>(d), static_cast<u64>(s), static_cast<u64>(hds), static_cast<u64>(bt)};
    const u64 strides[3] = {static_cast<u64>(rs) * 2, static_cast<u64>(hs) * 2, static_cast<u64>(bs) * 2};
    return arch::sm90::encode_tensor_map_bf16_4d(map, ptr, dims, strides, static_cast<std::uint32_t>(rows));
  };
  // Fixed length: the BSHD tensors. Varlen: the packed tensors as a batch of one (rows total_q / total_k).
  const bool varlen = p.is_varlen();
  const std::int64_t map_b = varlen ? 1 : p.batch;
  const std::int64_t rows_q = varlen ? p.total_q : p.seqlen_q, rows_k = varlen ? p.total_k : p.seqlen_k;
  const std::int64_t bs_q =
      varlen ? ws_packed_batch_stride(rows_q, p.num_heads, p.head_dim_qk, p.q_row_stride, p.q_head_stride)
             : p.q_batch_stride;
  const std::int64_t bs_k =
      varlen ? ws_packed_batch_stride(rows_k, p.num_heads_k, p.head_dim_qk, p.k_row_stride, p.k_head_stride)
             : p.k_batch_stride;
  const std::int64_t bs_v =
      varlen ? ws_packed_batch_stride(rows_k, p.num_heads_k, p.head_dim_v, p.v_row_stride, p.v_head_stride)
             : p.v_batch_stride;
  const std::int64_t bs_o =
      varlen ? ws_packed_batch_stride(rows_q, p.num_heads, p.head_dim_v, p.out_row_stride, p.out_head_stride)
             : p.out_batch_stride;
  if (bs_q <= 0 || bs_k <= 0 || bs_v <= 0 || bs_o <= 0) return Status::success();
  if (!enc(&a.tm_q, p.q, p.head_dim_qk, rows_q, p.num_heads, map_b, p.q_row_stride, p.q_head_stride, bs_q,
           Cfg::kBlockM) ||
      !enc(&a.tm_k, p.k, p.head_dim_qk, rows_k, p.num_heads_k, map_b, p.k_row_stride, p.k_head_stride, bs_k,
           Cfg::kBlockN) ||
      !enc(&a.tm_v, p.v, p.head_dim_v, rows_k, p.num_heads_k, map_b, p.v_row_stride, p.v_head_stride, bs_v,
           Cfg::kBlockN) ||
      !enc(&a.tm_o, p.out, p.head_dim_v, rows_q, p.num_heads, map_b, p.out_row_stride, p.out_head_stride, bs_o, 64))
    return Status::success();  // not applicable: the portable kernel runs
  a.v = static_cast<const std::uint16_t*>(p.v);
  a.out = static_cast<std::uint16_t*>(p.out);
  a.lse = p.softmax_lse;
  a.v_batch_stride = p.v_batch_stride;
  a.v_row_stride = p.v_row_stride;
  a.v_head_stride = p.v_head_stride;
  a.o_batch_stride = p.out_batch_stride;
  a.o_row_stride = p.out_row_stride;
  a.o_head_stride = p.out_head_stride;
  a.num_blocks = blocks;
  a.batch = static_cast<int>(p.batch);
  a.seqlen_q = static_cast<int>(p.seqlen_q);
  a.seqlen_k = static_cast<int>(p.seqlen_k);
  a.num_heads = static_cast<int>(p.num_heads);
  a.group_size = static_cast<int>(p.group_size());
  a.num_m_blocks = static_cast<int>((p.seqlen_q + Cfg::kBlockM - 1) / Cfg::kBlockM);
  a.causal = p.causal ? 1 : 0;
  a.causal_offset = static_cast<int>(p.causal_offset());
  a.scale_log2 = p.scale_softmax_log2;
  {
    const std::int64_t bh = static_cast<std::int64_t>(p.batch) * p.num_heads;
    const std::int64_t kv_head_bytes = 2 * p.seqlen_k * (p.head_dim_qk + p.head_dim_v);  // one (batch, kv head)
    std::int64_t section = bh;
    if (order.section_bytes > 0) {
      const std::int64_t kv_heads = order.section_bytes / (kv_head_bytes > 0 ? kv_head_bytes : 1);
      section = (kv_heads > 1 ? kv_heads : 1) * p.group_size();
      if (section > bh) section = bh;
    }
    a.section = static_cast<int>(section);
    a.keys_ascending = order.keys_ascending ? 1 : 0;
    // Balanced pairs of m blocks (arch/sm90_work_order.hpp) when every CTA of the persistent grid gets one.
    const arch::sm90::WorkOrderArgs wo = arch::sm90::causal_work_order(
        order.causal_pairs && p.causal && !varlen && persistent && Schedule == WsSchedule::persistent, bh,
        a.num_m_blocks, blocks, sm_count);
    a.num_pairs = wo.num_pairs;
    a.pair_tail = wo.tail;
    a.num_steps = wo.num_steps;
  }
  a.pair_div = arch::sm90::causal_pair_divisors(static_cast<unsigned>(sm_count), a.num_pairs, a.pair_tail,
                                                a.num_m_blocks, a.num_heads);
  a.m_blocks_div = arch::FastDivmod::make(static_cast<std::uint32_t>(a.num_m_blocks));
  a.cu_seqlens_q = p.cu_seqlens_q;
  a.cu_seqlens_k = p.cu_seqlens_k;
  a.total_q = static_cast<int>(p.total_q);
  a.total_k = static_cast<int>(p.total_k);
  constexpr bool kSnake = Schedule == WsSchedule::persistent_snake;
  auto kernel = varlen ? fwd_kernel_ws<Cfg, kSnake, true> : fwd_kernel_ws<Cfg, kSnake, false>;
  const rt::error_t attr_err = rt::set_max_dynamic_shared_bytes(kernel, Cfg::kSmemBytes);
  if (attr_err != rt::success)
    return Status::runtime(std::string("setting the dynamic shared memory limit to ") +
                           std::to_string(Cfg::kSmemBytes) + " bytes failed: " + rt::error_string(attr_err));
  const unsigned grid = static_cast<unsigned>(persistent && blocks > sm_count ? sm_count : blocks);
  kernel<<<dim3(grid), dim3(Cfg::kThreads), Cfg::kSmemBytes, stream>>>(a);
  const rt::error_t err = rt::get_last_error();
  if (err != rt::success) return Status::runtime(std::string("kernel launch failed: ") + rt::error_string(err));
  *launched = true;
  return Status::success();
}

/// Runs the built-in sm_90a kernel of (DQK, DV) when it applies (see launch_ws).
template <int DQK, int DV, WsSchedule Schedule = WsSchedule::persistent>
Status launch_builtin_ws(const AttentionParams& p, rt::stream_t stream, bool* launched, const WsOrder& order = {}) {
  return p.causal ? launch_ws<typename WsTile<DQK, DV, true>::type, Schedule>(p, stream, launched, order)
                  : launch_ws<typename WsTile<DQK, DV, false>::type, Schedule>(p, stream, launched, order);
}

}  // namespace zyfa::bf16::sm90ws

#endif  // ZYFA_PLATFORM_CUDA
