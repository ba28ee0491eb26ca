// zyfa/bf16/fwd_args.hpp -- the kernel-side argument struct of the BF16 forward kernels, built on the host
// from a validated AttentionParams (one copy per launch, passed by value).
#pragma once
#include <cstdint>

#include "../params.hpp"
#include "../platform/platform.hpp"

namespace zyfa::bf16 {

/// Raw pointers (bf16 as uint16_t bit patterns), element strides (int64: every offset is computed in 64
/// bits) and sizes of one attention call. Layouts as AttentionParams (BSHD; lse [batch, num_heads, seqlen_q]).
struct FwdArgs {
  const std::uint16_t* q;
  const std::uint16_t* k;
  const std::uint16_t* v;
  std::uint16_t* out;
  float* lse;  ///< nullptr: not written
  std::int64_t q_batch_stride, q_row_stride, q_head_stride;
  std::int64_t k_batch_stride, k_row_stride, k_head_stride;
  std::int64_t v_batch_stride, v_row_stride, v_head_stride;
  std::int64_t o_batch_stride, o_row_stride, o_head_stride;
  int batch, seqlen_q, seqlen_k, num_heads, group_size;
  int num_m_blocks;   ///< ceil(seqlen_q / BlockM)
  int causal;         ///< 0 or 1
  int causal_offset;  ///< seqlen_k - seqlen_q: row i sees key j iff j <= i + causal_offset
  float scale_log2;   ///< AttentionParams::scale_softmax_log2 = softmax_scale * log2(e): scores are exponentiated with
                      ///< exp2 in the log2 domain
  /// softmax_lse element strides of the batch and head dims (rows are contiguous): fixed length
  /// num_heads * seqlen_q and seqlen_q ([batch, num_heads, seqlen_q]); varlen 0 and total_q ([num_heads, total_q]).
  std::int64_t lse_batch_stride, lse_head_stride;
  /// Varlen: int32 [batch + 1] device offsets into the packed rows (AttentionParams::cu_seqlens_q/_k); nullptr for
  /// fixed length. seqlen_q/seqlen_k then hold the max lengths until select_sequence narrows a block's copy.
  const std::int32_t* cu_seqlens_q;
  const std::int32_t* cu_seqlens_k;
  int total_q, total_k;  ///< varlen: rows of the packed q/out and k/v
};

/// Fills FwdArgs from validated params; `block_m` = query rows per block (Config::kBlockM). Sizes fit int
/// (make_params rejects sizes > 2^31-1). No error return: the caller (bf16::launch) checks dtype and grid.
inline FwdArgs make_fwd_args(const AttentionParams& p, int block_m) {
  FwdArgs a{};
  a.q = static_cast<const std::uint16_t*>(p.q);
  a.k = static_cast<const std::uint16_t*>(p.k);
  a.v = static_cast<const std::uint16_t*>(p.v);
  a.out = static_cast<std::uint16_t*>(p.out);
  a.lse = p.softmax_lse;
  a.q_batch_stride = p.q_batch_stride;
  a.q_row_stride = p.q_row_stride;
  a.q_head_stride = p.q_head_stride;
  a.k_batch_stride = p.k_batch_stride;
  a.k_row_stride = p.k_row_stride;
  a.k_head_stride = p.k_head_stride;
  a.v_batch_stride = p.v_batch_stride;
  a.v_row_stride = p.v_row_stride;
  a.v_head_stride = p.v_head_stride;
  a.o_batch_stride = p.out_batch_stride;
  a.o_row_stride = p.out_row_stride;
  a.o_head_stride = p.out_head_stride;
  a.batch = static_cast<int>(p.batch);
  a.seqlen_q = static_cast<int>(p.seqlen_q);
  a.seqlen_k = static_cast<int>(p.seqlen_k);
  a.num_heads = static_cast<int>(p.num_heads);
  a.group_size = static_cast<int>(p.group_size());
  a.num_m_blocks = static_cast<int>((p.seqlen_q + block_m - 1) / block_m);
  a.causal = p.causal ? 1 : 0;
  a.causal_offset = static_cast<int>(p.causal_offset());
  a.scale_log2 = p.scale_softmax_log2;  // the one value every backend uses (params.hpp)
  a.lse_batch_stride = p.is_varlen() ? 0 : p.num_heads * p.seqlen_q;
  a.lse_head_stride = p.is_varlen() ? p.total_q : p.seqlen_q;
  a.cu_seqlens_q = p.cu_seqlens_q;
  a.cu_seqlens_k = p.cu_seqlens_k;
  a.total_q = static_cast<int>(p.total_q);
  a.total_k = static_cast<int>(p.total_k);
  return a;
}

#if !ZYFA_PLATFORM_HOST
/// Varlen: narrows the block's copy `a` of the arguments to sequence `b` (a.cu_seqlens_q/_k non-null):
/// seqlen_q/seqlen_k/causal_offset become its own (bottom-right causal per sequence), and *q_row0 / *k_row0 its first
/// query row and first key in the packed tensors, which the kernel adds to its pointers. Returns false, the same in
/// every thread of the block, when the block has nothing to do: its first row m0 is past the sequence's rows (also an
/// empty sequence), or the offsets are inconsistent (negative length, or past total_q/total_k: such a sequence is
/// neither read nor written instead of going out of bounds).
/// The pointers are not moved inside `a`: an earlier form that advanced a.q/a.k/a.v/a.out/a.lse here gave wrong
/// results for every sequence after the first on the H200 (nvcc 13.0, sm_90a; its PTX lacked the query row offset)
/// while the emulator ran it correctly; with the offsets as separate values it is bit for bit equal to per-sequence
/// calls on both (tests/gpu/test_flash_attn.cu, tests/python/test_emu_attention.py).
/// Register cost (nvcc 13.0, sm_90a): the per-sequence sizes live in registers across the key loop, and the varlen
/// kernels of the 128 and 192/128 tiles spill (tools/ci/compile_device.sh reports it as a known warning); the
/// fixed-length kernels are unchanged (Varlen = false never writes `a`).
__device__ __forceinline__ bool select_sequence(FwdArgs& a, int b, int m0, std::int64_t* q_row0, std::int64_t* k_row0) {
  const int q0 = a.cu_seqlens_q[b], q1 = a.cu_seqlens_q[b + 1];
  const int k0 = a.cu_seqlens_k[b], k1 = a.cu_seqlens_k[b + 1];
  if (m0 >= q1 - q0 || q0 < 0 || k0 < 0 || k1 < k0 || q1 > a.total_q || k1 > a.total_k) return false;
  *q_row0 = q0;
  *k_row0 = k0;
  a.seqlen_q = q1 - q0;
  a.seqlen_k = k1 - k0;
  a.causal_offset = a.seqlen_k - a.seqlen_q;
  return true;
}
#endif  // !ZYFA_PLATFORM_HOST

}  // namespace zyfa::bf16
