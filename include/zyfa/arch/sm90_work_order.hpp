// zyfa/arch/sm90_work_order.hpp -- the causal work order that the sm_90a persistent kernels
// (bf16/sm90/fwd_kernel_ws.hpp, fp8/sm90/fwd_kernel.hpp) share: balanced pairs of m blocks.
//
// A persistent grid of G CTAs (G = SM count) takes work tiles (BlockM query rows of one (batch, head)) in a static
// round-robin. Causal, the work of m block m grows linearly in m, so m blocks i and num_m_blocks - 1 - i together are
// the same work for every i: with pairs as the unit the round-robin stays balanced. Pairs are numbered (batch, head)
// by (batch, head), so the G CTAs running together work on one or two heads, whose K/V then stays in L2 (the
// heaviest-first order over all heads had every head's K/V in flight at once: on the H200, hd128 causal 16K, DRAM
// 44% busy). This is the load-balancing idea of striped / zigzag causal attention (Brandon et al. 2023, "Striped
// Attention", arXiv:2311.09431), applied to the tiles of one GPU.
#pragma once
#include <cstdint>

#include "../platform/platform.hpp"

namespace zyfa::arch::sm90 {

/// A work tile: m block (the kernel's BlockM query rows: 128, or 192 for the 3-warpgroup BF16 tile), batch index,
/// query head.
struct WorkTile {
  int m_block, b, h;
};

/// What a CTA's loop step holds: a tile, or none (past the last pair, or the missing partner of the middle m block of
/// an odd count).
enum class WorkStep { tile, skip };

/// The kernel arguments of a work order: num_pairs > 0 selects the pairs order (that many pairs), 0 the single-tile
/// order; num_steps is the CTAs' loop bound (t = blockIdx.x, + grid, ... below it).
struct WorkOrderArgs {
  int num_pairs;
  std::int64_t num_steps;
};

/// The host's choice for a launch of `grid` persistent CTAs over `blocks` work tiles ((batch * num_heads) *
/// num_m_blocks): the pairs order when `use_pairs` (causal, fixed length, persistent) and every CTA gets a pair,
/// (batch * num_heads) * ceil(num_m_blocks / 2) >= grid; then each CTA runs 2 * ceil(pairs / grid) steps (those past
/// the last pair are skipped), so the kernels keep their single-tile loop (one 64-bit index). Pair indices are
/// 32-bit on the device (fewer registers than 64-bit division in kernels that have none to spare): calls of 2^30
/// pairs or more (2^38 query rows, beyond any tensor that fits a GPU) keep the single-tile order.
inline WorkOrderArgs causal_work_order(bool use_pairs, std::int64_t batch_heads, int num_m_blocks, std::int64_t blocks,
                                       std::int64_t grid) {
  const std::int64_t pairs = batch_heads * ((num_m_blocks + 1) / 2);
  if (!use_pairs || pairs < grid || pairs >= (std::int64_t{1} << 30)) return {0, blocks};
  return {static_cast<int>(pairs), 2 * grid * ((pairs + grid - 1) / grid)};
}

#if ZYFA_PLATFORM_CUDA
/// Loop step t (= blockIdx.x + k * gridDim.x) of the pairs order: pair q = blockIdx.x + (k / 2) * gridDim.x (skip
/// from num_pairs on, num_pairs < 2^30); pair i of its (batch, head) is m block num_m_blocks - 1 - i at
/// even k (the heavy one first) and i at odd k.
__device__ __forceinline__ WorkStep causal_pair_step(std::int64_t t, int num_pairs, int num_m_blocks, int num_heads,
                                                     WorkTile* tile) {
  const unsigned k = static_cast<unsigned>(t) / gridDim.x;
  const unsigned q = blockIdx.x + (k >> 1) * gridDim.x;
  if (q >= static_cast<unsigned>(num_pairs)) return WorkStep::skip;
  const unsigned per_head = static_cast<unsigned>(num_m_blocks + 1) / 2u;
  const int bh = static_cast<int>(q / per_head), i = static_cast<int>(q % per_head);
  const int heavy = num_m_blocks - 1 - i;
  if ((k & 1) && i == heavy) return WorkStep::skip;
  *tile = {(k & 1) ? i : heavy, bh / num_heads, bh % num_heads};
  return WorkStep::tile;
}
#endif

}  // namespace zyfa::arch::sm90
