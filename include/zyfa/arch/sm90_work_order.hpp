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
// Attention", arXiv:2311.09431), applied to the tiles of one GPU. When the pairs left after the full rounds would
// occupy at most half the CTAs, they go out as single m blocks instead (causal_pair_tail), so that no CTA does a whole
// pair more than the others. When they would occupy more than half, the last full round and they are dealt as single
// m blocks, heaviest first, in snake order (a static form of longest-processing-time-first list scheduling: Graham
// 1969, "Bounds on multiprocessing timing anomalies"): with 1,024 pairs on 132 SMs (7.76 rounds) the pairs order
// left 3% of the SMs' time idle.
#pragma once
#include <cstdint>

#include "../platform/platform.hpp"
#include "fast_divmod.hpp"

namespace zyfa::arch::sm90 {

/// A work tile: m block (the kernel's BlockM query rows: 128, or 192 for the 3-warpgroup BF16 tile), batch index,
/// query head.
struct WorkTile {
  int m_block, b, h;
};

/// The work tile of m block m_block of (batch, head) index bh = batch * num_heads + head (heads: num_heads).
ZYFA_HOST_DEVICE inline WorkTile work_tile(int m_block, int bh, const FastDivmod& heads) {
  const FastDivmod::QuotRem b_h = heads.divmod(static_cast<std::uint32_t>(bh));
  return {m_block, static_cast<int>(b_h.quot), static_cast<int>(b_h.rem)};
}

/// What a CTA's loop step holds: a tile, or none (past the last pair, or the missing second block of the last middle
/// pair when the number of (batch, head)s is odd).
enum class WorkStep { tile, skip };

/// Pairs of the order over batch_heads (batch, head)s of num_m_blocks m blocks: num_m_blocks / 2 per (batch, head),
/// plus one per two (batch, head)s for the middle blocks when num_m_blocks is odd.
inline std::int64_t causal_pair_count(std::int64_t batch_heads, int num_m_blocks) {
  return batch_heads * (num_m_blocks / 2) + (num_m_blocks % 2 != 0 ? (batch_heads + 1) / 2 : 0);
}

/// The tail of the pairs order (R = pairs mod grid pairs left after the full rounds), when it is split: each of its
/// R pairs goes to two CTAs as two single m blocks, one step per CTA after the full rounds. The tail's pairs are then
/// the ones nearest the middle of their (batch, head)s (m blocks i and num_m_blocks - 1 - i with i close to
/// num_m_blocks / 2, two nearly equal halves): a pairs from every (batch, head) and one more from each of the last b
/// (R = a * batch_heads + b). Split when 2R <= grid (at most one single per CTA) and every (batch, head) has those
/// pairs; the heaviest CTA then does F pairs and about half a pair where it did F + 1 pairs (F = full rounds). With
/// an odd number of m blocks and of (batch, head)s the last middle pair is a single m block; it is then the tail's
/// last pair (and its second half is skipped), so that every pair of the full rounds is a whole pair's work.
///
/// The dealt tail (`dealt`, rem stays 0): when 2R > grid, num_m_blocks is even and there is at least one full round,
/// the last grid + R pairs (numbered (batch, head) by (batch, head): the end of one (batch, head)'s run and the
/// (batch, head)s after it) become 2 (grid + R) single m blocks, sorted by m block descending (by work: the work of
/// an m block grows with m), and dealt over the CTAs in rounds that alternate direction (CTA 0 to grid - 1, then back).
/// On 132 SMs at 16K tokens with 128-row tiles (1,024 pairs) the most work on one CTA over the mean, counted in key
/// tiles: 1.031 for the pairs order, 1.008-1.014 dealt (tests/host/test_work_order.cpp).
struct PairTail {
  int rem = 0;       ///< R: 0 when the tail is not split
  int a = 0, b = 0;  ///< R - lone = a * batch_heads + b: the tail's pairs taken from the (batch, head)s' runs
  int lone = 0;      ///< 1: the single last middle m block is the tail's last pair
  int dealt = 0;     ///< > 0: the dealt tail (see above) holds the last `dealt` full rounds and the R pairs after them
};

/// Full rounds of pairs that the dealt tail takes besides the pairs after them (fewer when there are fewer). More
/// rounds balance better in the model but spread the CTAs running together over more heads' K/V: with 2 and 3 rounds
/// hd128, (192, 128) and hd256 causal measured 0.95-1.00x of 1 round at 2K-8K on the H200 (bench/RESULTS.md,
/// 2026-12-04, "the dealt tail").
inline constexpr int kDealtRounds = 1;

/// The tail of `num_pairs` pairs over `grid` CTAs: split (rem > 0), dealt (dealt > 0) or neither.
inline PairTail causal_pair_tail(unsigned grid, int num_pairs, int num_m_blocks, int batch_heads) {
  PairTail t;
  const unsigned rem = static_cast<unsigned>(num_pairs) % grid;
  const int per_head = num_m_blocks / 2;
  const int lone = (num_m_blocks % 2 != 0 && batch_heads % 2 != 0) ? 1 : 0;
  if (rem == 0 || per_head == 0) return t;
  if (2u * rem > grid) {
    const int rounds = static_cast<int>(static_cast<unsigned>(num_pairs) / grid);
    t.dealt = num_m_blocks % 2 == 0 && rounds >= 1 ? (rounds < kDealtRounds ? rounds : kDealtRounds) : 0;
    return t;
  }
  const int from_runs = static_cast<int>(rem) - lone;
  const int a = from_runs / batch_heads, b = from_runs % batch_heads;
  if (a + (b > 0 ? 1 : 0) > per_head) return t;
  t.rem = static_cast<int>(rem);
  t.a = a;
  t.b = b;
  t.lone = lone;
  return t;
}

/// The kernel arguments of a work order: num_pairs > 0 selects the pairs order (that many pairs), 0 the single-tile
/// order; tail its split tail (causal_pair_tail); num_steps is the CTAs' loop bound (t = blockIdx.x, + grid, ...
/// below it).
struct WorkOrderArgs {
  int num_pairs;
  std::int64_t num_steps;
  PairTail tail;
};

/// The host's choice for a launch of `grid` persistent CTAs over `blocks` work tiles ((batch * num_heads) *
/// num_m_blocks): the pairs order when `use_pairs` (causal, fixed length, persistent) and every CTA gets a pair,
/// causal_pair_count >= grid; then each CTA runs 2 * ceil(pairs / grid) steps (those past the last pair are
/// skipped), 2 * F + 1 when the tail is split, 2 * (F - D) + ceil(2 * (D * grid + R) / grid) when it is dealt
/// (causal_pair_tail; F full rounds, R pairs after them, D = PairTail::dealt), so the kernels keep their single-tile
/// loop (one 64-bit index). Pair indices are 32-bit on the device (fewer registers than 64-bit division in kernels that
/// have none to spare): calls of 2^30 pairs or more (2^38 query rows, beyond any tensor that fits a GPU) keep the
/// single-tile order.
inline WorkOrderArgs causal_work_order(bool use_pairs, std::int64_t batch_heads, int num_m_blocks, std::int64_t blocks,
                                       std::int64_t grid) {
  const std::int64_t pairs = causal_pair_count(batch_heads, num_m_blocks);
  if (!use_pairs || pairs < grid || pairs >= (std::int64_t{1} << 30)) return {0, blocks, {}};
  const PairTail tail = causal_pair_tail(static_cast<unsigned>(grid), static_cast<int>(pairs), num_m_blocks,
                                         static_cast<int>(batch_heads));
  if (tail.rem > 0) return {static_cast<int>(pairs), grid * (2 * (pairs / grid) + 1), tail};
  if (tail.dealt > 0) {
    const std::int64_t dealt_blocks = 2 * (tail.dealt * grid + pairs % grid);
    return {static_cast<int>(pairs), grid * (2 * (pairs / grid - tail.dealt) + (dealt_blocks + grid - 1) / grid), tail};
  }
  return {static_cast<int>(pairs), 2 * grid * ((pairs + grid - 1) / grid), tail};
}

/// The divisions of a pairs order's every step (causal_pair_tile), set up on the host (causal_pair_divisors) so that
/// the device multiplies and shifts (arch/fast_divmod.hpp): the loop step t by the grid, a pair index by the full
/// pairs per (batch, head) run (run_lo, run_hi: pair_runs' lo and hi), a (batch, head) index by num_heads; and the
/// full rounds, num_pairs / grid.
struct PairDivisors {
  FastDivmod grid, run_lo, run_hi, heads;
  std::uint32_t full_rounds = 0;
};

/// The full pairs left in each (batch, head)'s run of the pairs order: lo in the first batch_heads - PairTail::b
/// (batch, head)s (num_m_blocks / 2 - PairTail::a), hi in the last PairTail::b (one fewer).
struct PairRuns {
  unsigned lo, hi;
};
ZYFA_HOST_DEVICE inline PairRuns pair_runs(int num_m_blocks, const PairTail& tail) {
  const unsigned lo = static_cast<unsigned>(num_m_blocks / 2 - tail.a);
  return {lo, lo - (tail.b > 0 ? 1u : 0u)};
}

inline PairDivisors causal_pair_divisors(unsigned grid, int num_pairs, const PairTail& tail, int num_m_blocks,
                                         int num_heads) {
  PairDivisors d;
  const PairRuns runs = pair_runs(num_m_blocks, tail);
  d.grid = FastDivmod::make(grid);
  d.run_lo = FastDivmod::make(runs.lo);
  d.run_hi = FastDivmod::make(runs.hi);
  d.heads = FastDivmod::make(static_cast<std::uint32_t>(num_heads));
  d.full_rounds = static_cast<std::uint32_t>(num_pairs) / grid;
  return d;
}

/// Step k (0, 1, ...) of CTA `cta` of `grid` in the pairs order (`tail`: causal_pair_tail of the same call): pair
/// q = cta + (k / 2) * grid (skip from num_pairs on, num_pairs = causal_pair_count < 2^30). Pairs are numbered (batch,
/// head) by (batch, head); a full pair of a (batch, head) is m block num_m_blocks - 1 - i at even k (the heavy one
/// first) and i at odd k; a middle pair j (after all full pairs) is the middle m block of (batch, head) 2j at even k
/// and of 2j + 1 at odd k (skip past the last). With a split tail the tail's pairs are numbered last and left out of
/// their (batch, head)s' runs; at step 2F (F = full rounds) CTA c < 2R takes one half (c % 2) of tail pair c / 2.
/// With a dealt tail, step 2 (F - D) + s of CTA c takes the single m block of rank s * grid + c (s even) or s * grid +
/// grid - 1 - c (s odd) of the tail's blocks sorted by m block descending (skip past the last).
/// `div`: causal_pair_divisors of the same call.
ZYFA_HOST_DEVICE inline WorkStep causal_pair_tile(unsigned k, unsigned cta, unsigned grid, int num_pairs,
                                                  const PairTail& tail, const PairDivisors& div, int num_m_blocks,
                                                  int batch_heads, WorkTile* tile) {
  const unsigned full_rounds = div.full_rounds;
  auto set_tile = [&](int m_block, int bh) { *tile = work_tile(m_block, bh, div.heads); };
  const int per_head = num_m_blocks / 2;
  int bh, m;
  if (tail.dealt > 0 && (k >> 1) + static_cast<unsigned>(tail.dealt) >= full_rounds) {
    // The tail: (batch, head) bh0 from pair i0 of its run on (m blocks i0 .. num_m_blocks - 1 - i0), then nh whole
    // (batch, head)s. By m block descending: the top i0 levels from the nh whole ones, the middle band of
    // num_m_blocks - 2 i0 levels from all nh + 1 (bh0 first), the bottom i0 levels from the whole ones again.
    const unsigned s = k - 2 * (full_rounds - static_cast<unsigned>(tail.dealt));
    const unsigned tail_pairs = static_cast<unsigned>(tail.dealt) * grid + static_cast<unsigned>(num_pairs) % grid;
    unsigned r = s * grid + ((s & 1) ? grid - 1 - cta : cta);
    if (r >= 2 * tail_pairs) return WorkStep::skip;
    const unsigned q0 = static_cast<unsigned>(num_pairs) - tail_pairs;
    const int bh0 = static_cast<int>(q0 / static_cast<unsigned>(per_head));
    const unsigned i0 = q0 % static_cast<unsigned>(per_head);
    const unsigned nh = static_cast<unsigned>(batch_heads - 1 - bh0);
    const unsigned band = static_cast<unsigned>(num_m_blocks) - 2 * i0;
    if (r < i0 * nh) {
      m = num_m_blocks - 1 - static_cast<int>(r / nh);
      bh = bh0 + 1 + static_cast<int>(r % nh);
    } else if (r - i0 * nh < band * (nh + 1)) {
      r -= i0 * nh;
      m = num_m_blocks - 1 - static_cast<int>(i0 + r / (nh + 1));
      bh = bh0 + static_cast<int>(r % (nh + 1));
    } else {
      r -= i0 * nh + band * (nh + 1);
      m = static_cast<int>(i0) - 1 - static_cast<int>(r / nh);
      bh = bh0 + 1 + static_cast<int>(r % nh);
    }
    set_tile(m, bh);
    return WorkStep::tile;
  }
  if (tail.rem > 0 && (k >> 1) >= full_rounds) {  // the split tail: one single m block per CTA
    if (cta >= 2u * static_cast<unsigned>(tail.rem)) return WorkStep::skip;
    const int j = static_cast<int>(cta >> 1);
    if (j == tail.rem - tail.lone) {  // the single last middle m block
      if (cta & 1) return WorkStep::skip;
      set_tile(num_m_blocks / 2, batch_heads - 1);
      return WorkStep::tile;
    }
    const int t = j / batch_heads, u = j % batch_heads;
    bh = t < tail.a ? u : batch_heads - tail.b + u;
    const int i = per_head - 1 - t;
    m = (cta & 1) ? i : num_m_blocks - 1 - i;
    set_tile(m, bh);
    return WorkStep::tile;
  }
  const unsigned q = cta + (k >> 1) * grid;
  if (q >= static_cast<unsigned>(num_pairs)) return WorkStep::skip;
  // The (batch, head)s' runs of full pairs (pair_runs); the divisors of the same values are div.run_lo / run_hi.
  const PairRuns runs = pair_runs(num_m_blocks, tail);
  const unsigned n_lo = static_cast<unsigned>(batch_heads - tail.b);
  const unsigned full_lo = n_lo * runs.lo, full = full_lo + static_cast<unsigned>(tail.b) * runs.hi;
  if (q < full) {
    int i;
    if (q < full_lo) {
      const FastDivmod::QuotRem r = div.run_lo.divmod(q);
      bh = static_cast<int>(r.quot);
      i = static_cast<int>(r.rem);
    } else {
      const FastDivmod::QuotRem r = div.run_hi.divmod(q - full_lo);
      bh = static_cast<int>(n_lo + r.quot);
      i = static_cast<int>(r.rem);
    }
    m = (k & 1) ? i : num_m_blocks - 1 - i;
  } else {  // middle pairs (with a split tail, the single last middle block is in the tail: bh stays in range)
    bh = static_cast<int>(2u * (q - full) + (k & 1));
    if (bh >= batch_heads) return WorkStep::skip;
    m = num_m_blocks / 2;
  }
  set_tile(m, bh);
  return WorkStep::tile;
}

/// causal_pair_tile with its divisors set up here (host code: tests and models).
inline WorkStep causal_pair_tile(unsigned k, unsigned cta, unsigned grid, int num_pairs, const PairTail& tail,
                                 int num_m_blocks, int num_heads, int batch_heads, WorkTile* tile) {
  const PairDivisors div = causal_pair_divisors(grid, num_pairs, tail, num_m_blocks, num_heads);
  return causal_pair_tile(k, cta, grid, num_pairs, tail, div, num_m_blocks, batch_heads, tile);
}

#if ZYFA_PLATFORM_CUDA
/// Loop step t (= blockIdx.x + k * gridDim.x) of the pairs order: causal_pair_tile of this CTA's step k
/// (div.grid: the grid, gridDim.x).
__device__ __forceinline__ WorkStep causal_pair_step(std::int64_t t, int num_pairs, const PairTail& tail,
                                                     const PairDivisors& div, int num_m_blocks, int batch_heads,
                                                     WorkTile* tile) {
  // %ctaid.x read here (volatile: not hoisted to the kernel's start), where the 32-register producer of the 3-warpgroup
  // kernel otherwise keeps blockIdx.x live across its loop and spills it.
  unsigned cta;
  asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(cta));
  return causal_pair_tile(div.grid.div(static_cast<std::uint32_t>(t)), cta, div.grid.d, num_pairs, tail, div,
                          num_m_blocks, batch_heads, tile);
}
#endif

}  // namespace zyfa::arch::sm90
