// bench/work_order_balance.cpp -- modelled load balance of the causal work order of the sm_90a kernels
// (arch/sm90_work_order.hpp) against a dynamic longest-first order (FlashAttention-3's DynamicPersistentTileScheduler:
// work tiles heaviest first, each to the first CTA that is free) and against the sectioned dynamic order of
// bench/patches/sm90_ws_dynamic_order.patch, at the benchmark's shapes (hd128: 16 heads, 16K tokens, 128-row work
// tiles, 132 SMs). A work tile costs its key tiles (m block + 1) plus C key tiles for its start and epilogue; printed:
// the heaviest CTA's work over the mean, for the three orders (modelled, no GPU).
//   g++ -std=c++17 -O2 -Iinclude bench/work_order_balance.cpp -o /tmp/work_order_balance && /tmp/work_order_balance
// (tests/run_all.sh also builds it: build/tests/host/zyfa_work_order_balance).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <queue>
#include <utility>
#include <vector>
#include <zyfa/arch/sm90_work_order.hpp>

namespace {
/// A dynamic order's finishing time: tiles (costs in key tiles) taken in `order` by `grid` CTAs; each CTA starts with
/// one tile and claims its next `lead` key tiles before the current one ends (0: when it is free); claims are served
/// in time order.
double dynamic_max(const std::vector<double>& order, int grid, double lead) {
  using Claim = std::pair<double, double>;  // (time of the claim, time the CTA's current tile ends)
  std::priority_queue<Claim, std::vector<Claim>, std::greater<Claim>> claims;
  std::size_t taken = 0;
  auto start = [&](double t0, double w) { claims.push({t0 + std::max(0.0, w - lead), t0 + w}); };
  for (int i = 0; i < grid && taken < order.size(); ++i) start(0.0, order[taken++]);
  double last = 0.0;
  while (!claims.empty()) {
    const Claim cl = claims.top();
    claims.pop();
    if (taken < order.size())
      start(cl.second, order[taken++]);
    else
      last = std::max(last, cl.second);
  }
  return last;
}
}  // namespace

int main() {
  using namespace zyfa::arch::sm90;
  const int grid = 132, tokens = 16384, heads = 16, block_m = 128;
  for (double c : {0.0, 1.0, 3.0})
    for (int seqlen : {2048, 4096, 8192, 16384}) {
      const int bh = tokens / seqlen * heads, m = seqlen / block_m;
      const auto wo = causal_work_order(true, bh, m, std::int64_t{bh} * m, grid);
      std::vector<double> work(grid, 0.0);
      double total = 0.0;
      for (int cta = 0; cta < grid; ++cta)
        for (unsigned k = 0; k < wo.num_steps / grid; ++k) {
          WorkTile t{};
          if (causal_pair_tile(k, cta, grid, wo.num_pairs, wo.tail, m, 1, bh, &t) != WorkStep::tile) continue;
          work[cta] += t.m_block + 1 + c;
          total += t.m_block + 1 + c;
        }
      const double mean = total / grid, zyfa_max = *std::max_element(work.begin(), work.end());
      // FA3's order: every tile heaviest first, each claimed by the first CTA that is free.
      std::vector<double> tiles;
      for (int i = 0; i < bh; ++i)
        for (int mb = 0; mb < m; ++mb) tiles.push_back(mb + 1 + c);
      std::sort(tiles.begin(), tiles.end(), std::greater<double>());
      const double lpt_max = dynamic_max(tiles, grid, 0.0);
      // bench/patches/sm90_ws_dynamic_order.patch's order: (batch, head)s in sections whose K and V fit 32 MiB
      // (hd128: 512 bytes per key), m blocks heaviest first inside a section, heads fastest; a CTA claims the next
      // tile when the current one's loads are issued, 2 key tiles (the K/V stages) before its consumers finish it.
      const int section = std::max(1, std::min(bh, static_cast<int>((std::int64_t{32} << 20) / (512LL * seqlen))));
      std::vector<double> order;
      for (int first = 0; first < bh; first += section)
        for (int mb = m - 1; mb >= 0; --mb)
          for (int i = first; i < std::min(bh, first + section); ++i) order.push_back(mb + 1 + c);
      const double section_max = dynamic_max(order, grid, 2.0);
      std::printf(
          "C=%.0f seqlen %5d: static order %.4f, dynamic longest-first %.4f, the patch's sectioned dynamic order %.4f "
          "(max / mean, modelled)\n",
          c, seqlen, zyfa_max / mean, lpt_max / mean, section_max / mean);
    }
}
