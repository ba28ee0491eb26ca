// zyfa/bf16/fwd_args.hpp -- the kernel-side argument struct of the BF16 forward kernels, built on the host
// from a validated AttentionParams (one copy per launch, passed by value).
#pragma once
#include <cstdint>

#include "../params.hpp"

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
  int num_m_blocks;  ///< ceil(seqlen_q / BlockM)
  int causal;        ///< 0 or 1
  int causal_offset; ///< seqlen_k - seqlen_q: row i sees key j iff j <= i + causal_offset
  float scale_log2;  ///< AttentionParams::scale_softmax_log2 = softmax_scale * log2(e): scores are exponentiated with exp2 in the log2 domain
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
  return a;
}

}  // namespace zyfa::bf16
