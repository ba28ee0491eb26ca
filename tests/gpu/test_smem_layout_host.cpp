// tests/gpu/test_smem_layout_host.cpp -- host checks (CI, no GPU) of the shared-memory layout the BF16 kernels use:
// bf16/smem_layout.hpp's XOR swizzle is a permutation of each row's 16-byte chunks, 8 consecutive rows read at
// one logical chunk land in 8 (or 4) distinct chunk positions (no bank conflicts for ldmatrix / 16-byte ds_read),
// and the closed form arch/sm90.hpp's LdsmAddr uses for precomputed ldmatrix addresses equals offset().
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <set>

#include <zyfa/bf16/smem_layout.hpp>

namespace {

template <int Rows, int Cols>
void check_layout() {
  using L = zyfa::bf16::SwizzledTile<Rows, Cols>;
  INFO("tile " << Rows << "x" << Cols);
  std::set<int> all;
  for (int r = 0; r < Rows; ++r) {
    std::set<int> row_chunks;
    for (int c = 0; c < L::kChunks; ++c) {
      const int off = L::offset(r, c * 8);
      CHECK(off % 8 == 0);
      CHECK(off / Cols == r);  // stays in its row
      row_chunks.insert(off);
      for (int e = 0; e < 8; ++e) all.insert(L::offset(r, c * 8 + e));
    }
    CHECK(static_cast<int>(row_chunks.size()) == L::kChunks);  // a permutation of the row's chunks
  }
  CHECK(static_cast<int>(all.size()) == Rows * Cols);  // bijection onto [0, Rows*Cols)
  CHECK(*all.rbegin() == Rows * Cols - 1);
  // 8 consecutive rows (aligned to 8) read at one logical chunk: distinct positions modulo the 8-chunk bank period
  // (128 bytes = 32 banks of 4 bytes) when G = 8; G = 4 tiles get 4 distinct positions (2-way conflicts).
  for (int r0 = 0; r0 < Rows; r0 += 8)
    for (int c = 0; c < L::kChunks; ++c) {
      std::set<int> banks;
      for (int r = r0; r < r0 + 8; ++r) banks.insert((L::offset(r, c * 8) / 8) % 8);
      CHECK(static_cast<int>(banks.size()) == L::kGroup);
    }
  // LdsmAddr's closed form: row = row_const + row_l (row_const % 8 == 0), chunk = 2j + c_l.
  constexpr int G = L::kGroup;
  for (int row_const = 0; row_const + 16 <= Rows; row_const += 8)
    for (int row_l = 0; row_l < 16 && row_const + row_l < Rows; ++row_l)
      for (int c_l = 0; c_l < 2; ++c_l)
        for (int j = 0; 2 * j + c_l < L::kChunks; ++j) {
          const int y = (c_l ^ row_l) & (G - 1);
          const int closed = (row_const + row_l) * Cols + (G * ((2 * j) / G) + (((2 * j) % G) ^ y)) * 8;
          CHECK(closed == L::offset(row_const + row_l, (2 * j + c_l) * 8));
        }
}

}  // namespace

TEST_CASE("BF16 kernels: swizzled shared-memory tiles of every built-in and example head dim") {
  check_layout<64, 64>();
  check_layout<128, 128>();
  check_layout<64, 256>();
  check_layout<128, 192>();
  check_layout<64, 96>();   // 12 chunks: groups of 4
  check_layout<64, 160>();  // 20 chunks: groups of 4
  check_layout<32, 32>();
}
