// zyfa/arch/sm90_work_order.hpp -- the causal work order that the sm_90a persistent kernels
// (bf16/sm90/fwd_kernel_ws.hpp, fp8/sm90/fwd_kernel.hpp) share: balanced pairs of m blocks.
//
// A persistent grid of G CTAs (G = SM count) takes work tiles (BlockM query rows of one (batch, head)) in a static
// round-robin. Causal, the work of m block m grows linearly in m, so m blocks i and num_m_blocks - 1 - i together are
// the same work for every i: with pairs as the unit the round-robin stays balanced. With an odd count the middle m
// block of a (batch, head) is half a pair's work; the middle blocks of two (batch, head)s form one pair (numbered
// after all the others), so no CTA collects half pairs (when G is a multiple of the pairs per head, the same CTAs
// would take the middle block in every round: hd64 causal, 192-row tiles, 2K and 8K). Pairs are numbered (batch,
// head) by (batch, head), so the G CTAs running together work on one or two heads, whose K/V then stays in L2 (the
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

/// What a CTA's loop step holds: a tile, or none (past the last pair, or the missing second block of the last middle
/// pair when the number of (batch, head)s is odd).
enum class WorkStep { tile, skip };

/// The kernel arguments of a work order: num_pairs > 0 selects the pairs order (that many pairs), 0 the single-tile
/// order; num_steps is the CTAs' loop bound (t = blockIdx.x, + grid, ... below it).
struct WorkOrderArgs {
  int num_pairs;
  std::int64_t num_steps;
};

/// Pairs of the order over batch_heads (batch, head)s of num_m_blocks m blocks: num_m_blocks / 2 per (batch, head),
/// plus one per two (batch, head)s for the middle blocks when num_m_blocks is odd.
inline std::int64_t causal_pair_count(std::int64_t batch_heads, int num_m_blocks) {
  return batch_heads * (num_m_blocks / 2) + (num_m_blocks % 2 != 0 ? (batch_heads + 1) / 2 : 0);
}

/// The host's choice for a launch of `grid` persistent CTAs over `blocks` work tiles ((batch * num_heads) *
/// num_m_blocks): the pairs order when `use_pairs` (causal, fixed length, persistent) and every CTA gets a pair,
/// causal_pair_count >= grid; then each CTA runs 2 * ceil(pairs / grid) steps (those past the last pair are
/// skipped), so the kernels keep their single-tile loop (one 64-bit index). Pair indices are 32-bit on the device
/// (fewer registers than 64-bit division in kernels that have none to spare): calls of 2^30 pairs or more (2^38
/// query rows, beyond any tensor that fits a GPU) keep the single-tile order.
inline WorkOrderArgs causal_work_order(bool use_pairs, std::int64_t batch_heads, int num_m_blocks, std::int64_t blocks,
                                       std::int64_t grid) {
  const std::int64_t pairs = causal_pair_count(batch_heads, num_m_blocks);
  if (!use_pairs || pairs < grid || pairs >= (std::int64_t{1} << 30)) return {0, blocks};
  return {static_cast<int>(pairs), 2 * grid * ((pairs + grid - 1) / grid)};
}

/// Step k (0, 1, ...) of CTA `cta` of `grid` in the pairs order: pair q = cta + (k / 2) * grid (skip from num_pairs
/// on, num_pairs = causal_pair_count < 2^30). A full pair q < batch_heads * (num_m_blocks / 2) is pair i of its
/// (batch, head): m block num_m_blocks - 1 - i at even k (the heavy one first) and i at odd k; a middle pair j is
/// the middle m block of (batch, head) 2j at even k and of 2j + 1 at odd k (skip past the last).
ZYFA_HOST_DEVICE inline WorkStep causal_pair_tile(unsigned k, unsigned cta, unsigned grid, int num_pairs,
                                                  int num_m_blocks, int num_heads, int batch_heads, WorkTile* tile) {
  const unsigned q = cta + (k >> 1) * grid;
  if (q >= static_cast<unsigned>(num_pairs)) return WorkStep::skip;
  const unsigned per_head = static_cast<unsigned>(num_m_blocks) / 2u;
  const unsigned full = static_cast<unsigned>(batch_heads) * per_head;
  int bh, m;
  if (q < full) {
    bh = static_cast<int>(q / per_head);
    const int i = static_cast<int>(q % per_head);
    m = (k & 1) ? i : num_m_blocks - 1 - i;
  } else {
    bh = static_cast<int>(2u * (q - full) + (k & 1));
    if (bh >= batch_heads) return WorkStep::skip;
    m = num_m_blocks / 2;
  }
  *tile = {m, bh / num_heads, bh % num_heads};
  return WorkStep::tile;
}

#if ZYFA_PLATFORM_CUDA
/// Loop step t (= blockIdx.x + k * gridDim.x) of the pairs order: causal_pair_tile of this CTA's step k.
__device__ __forceinline__ WorkStep causal_pair_step(std::int64_t t, int num_pairs, int num_m_blocks, int num_heads,
                                                     int batch_heads, WorkTile* tile) {
  return causal_pair_tile(static_cast<unsigned>(t) / gridDim.x, blockIdx.x, gridDim.x, num_pairs, num_m_blocks,
                          num_heads, batch_heads, tile);
}
#endif

}  // namespace zyfa::arch::sm90
