// The balanced causal work order of the sm_90a persistent kernels (arch/sm90_work_order.hpp), checked on the host:
// every work tile is taken exactly once, and the CTAs' causal work differs by at most one pair's.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <vector>
#include <zyfa/arch/sm90_work_order.hpp>

namespace {

using zyfa::arch::sm90::causal_pair_tile;
using zyfa::arch::sm90::causal_work_order;
using zyfa::arch::sm90::WorkStep;
using zyfa::arch::sm90::WorkTile;

// Runs the order for `grid` CTAs; returns false when the host keeps the single-tile order. Work of m block m: m + 1
// key tiles (BlockM == BlockN).
bool check_order(int batch, int num_heads, int num_m_blocks, int grid) {
  const int bh = batch * num_heads;
  const std::int64_t blocks = std::int64_t{bh} * num_m_blocks;
  const auto wo = causal_work_order(true, bh, num_m_blocks, blocks, grid);
  if (wo.num_pairs == 0) return false;
  REQUIRE(wo.num_steps % grid == 0);
  std::vector<int> seen(static_cast<std::size_t>(blocks), 0);
  std::vector<std::int64_t> work(static_cast<std::size_t>(grid), 0);
  for (int cta = 0; cta < grid; ++cta)
    for (std::int64_t k = 0; k < wo.num_steps / grid; ++k) {
      WorkTile t{};
      if (causal_pair_tile(static_cast<unsigned>(k), static_cast<unsigned>(cta), static_cast<unsigned>(grid),
                           wo.num_pairs, wo.tail, num_m_blocks, num_heads, bh, &t) == WorkStep::skip)
        continue;
      REQUIRE(t.b >= 0);
      REQUIRE(t.b < batch);
      REQUIRE(t.h >= 0);
      REQUIRE(t.h < num_heads);
      REQUIRE(t.m_block >= 0);
      REQUIRE(t.m_block < num_m_blocks);
      ++seen[static_cast<std::size_t>((std::int64_t{t.b} * num_heads + t.h) * num_m_blocks + t.m_block)];
      work[static_cast<std::size_t>(cta)] += t.m_block + 1;
    }
  for (std::size_t i = 0; i < seen.size(); ++i) {
    INFO("tile " << i);
    CHECK(seen[i] == 1);
  }
  const auto mm = std::minmax_element(work.begin(), work.end());
  CHECK(*mm.second - *mm.first <= num_m_blocks + 1);  // one pair: m blocks i and num_m_blocks - 1 - i
  return true;
}

}  // namespace

TEST_CASE("sm90 work order: balanced pairs take every causal tile once, CTAs within one pair of work") {
  int used = 0;
  for (int grid : {1, 7, 22, 132})
    for (int batch : {1, 2, 3})
      for (int heads : {1, 5, 8, 32})
        for (int m : {1, 2, 3, 11, 16, 22, 43, 86}) {
          CAPTURE(grid);
          CAPTURE(batch);
          CAPTURE(heads);
          CAPTURE(m);
          used += check_order(batch, heads, m, grid) ? 1 : 0;
        }
  CHECK(used > 100);  // the pairs order ran (it needs at least one pair per CTA)
}

TEST_CASE("sm90 work order: too few pairs for the grid keeps the single-tile order") {
  const auto wo = causal_work_order(true, 2, 3, 6, 132);
  CHECK(wo.num_pairs == 0);
  CHECK(wo.num_steps == 6);
  CHECK(causal_work_order(false, 64, 43, 64 * 43, 132).num_pairs == 0);
}

TEST_CASE("sm90 work order: a short tail goes out as single m blocks nearest the middle") {
  using zyfa::arch::sm90::causal_pair_count;
  using zyfa::arch::sm90::causal_pair_tail;
  int split = 0;
  for (int grid : {7, 22, 132})
    for (int batch : {1, 2, 3})
      for (int heads : {1, 5, 8, 16, 32})
        for (int m : {2, 3, 11, 16, 22, 43, 86, 128}) {
          const int bh = batch * heads;
          const auto wo = causal_work_order(true, bh, m, std::int64_t{bh} * m, grid);
          if (wo.num_pairs == 0) continue;
          const auto& tail = wo.tail;
          if (tail.rem == 0) continue;
          ++split;
          CAPTURE(grid);
          CAPTURE(batch);
          CAPTURE(heads);
          CAPTURE(m);
          CHECK(2 * tail.rem <= grid);
          CHECK(tail.rem == wo.num_pairs % grid);
          const std::int64_t full_rounds = wo.num_pairs / grid;
          CHECK(wo.num_steps == grid * (2 * full_rounds + 1));
          std::int64_t most = 0;
          for (int cta = 0; cta < grid; ++cta) {
            std::int64_t work = 0;
            for (unsigned k = 0; k < wo.num_steps / grid; ++k) {
              WorkTile t{};
              if (causal_pair_tile(k, cta, grid, wo.num_pairs, wo.tail, m, heads, bh, &t) == WorkStep::tile)
                work += t.m_block + 1;
            }
            most = std::max(most, work);
          }
          // F pairs and at most the heavier half of the least central tail pair (m blocks i and m - 1 - i)
          const int i_least = m / 2 - 1 - tail.a;
          CHECK(most <= full_rounds * (m + 1) + (m - i_least));
          CHECK(most < (full_rounds + 1) * (m + 1));
        }
  CHECK(split > 20);
}

TEST_CASE("sm90 work order: hd64 causal 8K and 16K (192-row tiles, 132 SMs) split their tail") {
  using zyfa::arch::sm90::causal_pair_count;
  for (auto [bh, m] : {std::pair{64, 43}, std::pair{32, 86}}) {
    const auto wo = causal_work_order(true, bh, m, std::int64_t{bh} * m, 132);
    const std::int64_t full_rounds = wo.num_pairs / 132;
    CHECK(wo.num_steps == 132 * (2 * full_rounds + 1));
    std::vector<std::int64_t> work(132, 0);
    for (int cta = 0; cta < 132; ++cta)
      for (unsigned k = 0; k < wo.num_steps / 132; ++k) {
        WorkTile t{};
        if (causal_pair_tile(k, cta, 132, wo.num_pairs, wo.tail, m, 1, bh, &t) == WorkStep::tile)
          work[cta] += t.m_block + 1;
      }
    const double mean = static_cast<double>(std::int64_t{bh} * m * (m + 1) / 2) / 132;
    const auto mx = *std::max_element(work.begin(), work.end());
    CAPTURE(bh);
    CAPTURE(m);
    CAPTURE(mx);
    CAPTURE(mean);
    CHECK(mx <= full_rounds * (m + 1) + (m + 1) / 2 + 2);  // was (full_rounds + 1) * (m + 1)
    CHECK(static_cast<double>(mx) / mean < 1.02);
  }
}

TEST_CASE("sm90 work order: a long tail is dealt as single m blocks, heaviest first, in snake order") {
  int dealt = 0;
  for (int grid : {7, 22, 132})
    for (int batch : {1, 2, 3, 8})
      for (int heads : {1, 5, 8, 16, 17, 32, 33})
        for (int m : {2, 4, 16, 22, 32, 64, 86, 128}) {
          const int bh = batch * heads;
          const auto wo = causal_work_order(true, bh, m, std::int64_t{bh} * m, grid);
          if (wo.num_pairs == 0 || !wo.tail.dealt) continue;
          ++dealt;
          CAPTURE(grid);
          CAPTURE(batch);
          CAPTURE(heads);
          CAPTURE(m);
          const std::int64_t full_rounds = wo.num_pairs / grid, rem = wo.num_pairs % grid;
          CHECK(m % 2 == 0);
          CHECK(2 * rem > grid);
          CHECK(wo.tail.rem == 0);
          std::int64_t most = 0, least = std::int64_t{1} << 40, total = 0;
          for (int cta = 0; cta < grid; ++cta) {
            std::int64_t work = 0;
            int prev = m;  // the tail's blocks of one CTA come heaviest first
            for (unsigned k = 0; k < wo.num_steps / grid; ++k) {
              WorkTile t{};
              if (causal_pair_tile(k, cta, grid, wo.num_pairs, wo.tail, m, heads, bh, &t) != WorkStep::tile) continue;
              work += t.m_block + 1;
              if (k >= 2 * (full_rounds - wo.tail.dealt)) {
                CHECK(t.m_block <= prev);
                prev = t.m_block;
              }
            }
            most = std::max(most, work);
            least = std::min(least, work);
            total += work;
          }
          // Better than the pairs order's full extra pair (F + 1 pairs on the heaviest CTA): the heaviest CTA is
          // within one m block's work of the mean, and the last step is not all skips.
          const double mean = static_cast<double>(total) / grid;
          CAPTURE(most);
          CAPTURE(mean);
          CHECK(most <= (full_rounds + 1) * (m + 1));
          CHECK(static_cast<double>(most) <= mean + m);
          const std::int64_t dealt_blocks = 2 * (wo.tail.dealt * std::int64_t{grid} + rem);
          CHECK(wo.num_steps / grid == 2 * (full_rounds - wo.tail.dealt) + (dealt_blocks + grid - 1) / grid);
        }
  CHECK(dealt > 20);
}

TEST_CASE("sm90 work order: hd128 causal at 16K tokens (128-row tiles, 132 SMs, 1,024 pairs) deals its tail") {
  for (auto [bh, m] : {std::pair{128, 16}, std::pair{64, 32}, std::pair{32, 64}, std::pair{16, 128}}) {
    const auto wo = causal_work_order(true, bh, m, std::int64_t{bh} * m, 132);
    REQUIRE(wo.tail.dealt > 0);
    std::vector<std::int64_t> work(132, 0);
    for (int cta = 0; cta < 132; ++cta)
      for (unsigned k = 0; k < wo.num_steps / 132; ++k) {
        WorkTile t{};
        if (causal_pair_tile(k, cta, 132, wo.num_pairs, wo.tail, m, 1, bh, &t) == WorkStep::tile)
          work[cta] += t.m_block + 1;
      }
    const double mean = static_cast<double>(std::int64_t{bh} * m * (m + 1) / 2) / 132;
    const auto mx = *std::max_element(work.begin(), work.end());
    CAPTURE(bh);
    CAPTURE(m);
    CAPTURE(mx);
    CAPTURE(mean);
    CHECK(static_cast<double>(mx) / mean < 1.015);  // the pairs order: 8 / 7.76 = 1.031
  }
}

TEST_CASE("FastDivmod: floor(n / d) and n mod d by multiply and shift, for divisors 1 .. 2^31 - 1") {
  using zyfa::arch::FastDivmod;
  std::vector<std::uint32_t> divisors;
  for (std::uint32_t d = 1; d <= 300; ++d) divisors.push_back(d);
  for (int p = 2; p <= 31; ++p)
    for (std::int64_t delta : {-1, 0, 1}) {
      const std::int64_t d = (std::int64_t{1} << p) + delta;
      if (d >= 1 && d < (std::int64_t{1} << 31)) divisors.push_back(static_cast<std::uint32_t>(d));
    }
  divisors.push_back(132);  // the H100's SM count
  divisors.push_back(0x7FFFFFFFu);
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&]() {  // splitmix64
    state += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  for (const std::uint32_t d : divisors) {
    const FastDivmod f = FastDivmod::make(d);
    std::vector<std::uint32_t> ns = {0, 1, d - 1, d, d + 1, 0x7FFFFFFFu, 0x7FFFFFFEu};
    for (std::uint32_t j = 0; j < 8; ++j) {  // around multiples of d near the top of the range
      const std::uint32_t q = 0x7FFFFFFFu / d - j;
      for (std::int64_t off : {-1, 0, 1}) {
        const std::int64_t n = std::int64_t{q} * d + off;
        if (n >= 0 && n < (std::int64_t{1} << 31)) ns.push_back(static_cast<std::uint32_t>(n));
      }
    }
    for (int j = 0; j < 2000; ++j) ns.push_back(static_cast<std::uint32_t>(next() >> 33));
    for (const std::uint32_t n : ns) {
      if (n >= 0x80000000u) continue;
      const FastDivmod::QuotRem qr = f.divmod(n);
      if (f.div(n) != n / d || qr.quot != n / d || qr.rem != n % d) {
        CAPTURE(d);
        CAPTURE(n);
        CAPTURE(qr.quot);
        CAPTURE(qr.rem);
        FAIL("FastDivmod differs from integer division");
      }
    }
  }
  // A divisor of 0 (never divided by) acts as 1.
  CHECK(FastDivmod::make(0).div(12345) == 12345);
}
