// zyfa/bf16/tile_contract.hpp -- THE contract a warp/wave tile must meet to run the BF16 forward kernel
// (bf16/fwd_kernel.hpp). A new GPU target is added by writing one struct with these members (models:
// Sm90WarpTile in tile_sm90.hpp, CdnaWaveTile32 in tile_cdna.hpp) and selecting it in tile_select.hpp;
// check_tile<Tile, ...>() (called by KernelConfig) turns a missing or mistyped member into a compile error that
// names it.
//
// A block of `Warps` warps (wave64s on AMD) owns BlockM query rows and walks the keys BlockN at a time; head dims
// DQK (q/k) and DV (v) are in elements. Where data lives:
//   Q    shared memory (kQInSmem = true: SwizzledTile<BlockM, DQK> at `sq`) or registers (QFrag, load_q).
//   K, V shared memory/LDS, SwizzledTile<BlockN, DQK> at `sk` and SwizzledTile<BlockN, DV> at `sv`, filled by
//        bf16/tile_copy.hpp through the tile's copy16/commit/wait_all.
//   S, P registers: float s[kRowsPerThread][kSCols] per thread; element (r, i) is query row
//        row_of(warp, lane, r) of the block and key col_of(lane, i) of the key tile.
//   O    registers: float o[kRowsPerThread][kOCols]; element (r, i) is row row_of(warp, lane, r), head-dim
//        index col_of(lane, i) of v (elements i, i+1 with i even are adjacent columns: written as one pair).
// Members (all static; __device__ functions):
//   kWarpThreads              threads per warp/wave (32 or 64)
//   kRowsPerThread, kSCols, kOCols   accumulator shape per thread, as above
//   kQInSmem                  true: Q is read from shared memory in qk(); false: from QFrag
//   QFrag                     type holding this warp's Q in registers (empty when kQInSmem)
//   int  row_of(warp, lane, r), int col_of(lane, i), bool is_row_leader(lane) (one lane per row writes the LSE)
//   float row_max(x), row_sum(x)  reduction over the lanes that share a query row
//   float exp2(x)             2^x, exp2(-inf) = +0
//   bool warp_any(pred)       any lane of the warp/wave
//   void load_q(QFrag&, const uint16_t* gq, int64_t row_stride, int rows_valid, int cols_valid, int warp, int lane)
//                             (rows >= rows_valid and head-dim columns >= cols_valid read as 0, never from memory)
//   void qk(float (&s)[R][SC], const QFrag&, const uint16_t* sq, const uint16_t* sk, int warp, int lane)
//                             s = Q.K^T, raw fp32 scores (softmax_scale not applied)
//   void pv(float (&o)[R][OC], const float (&p)[R][SC], const uint16_t* sv, int lane)   o += P.V (P rounded to bf16)
//   int  opaque(x)            x, hidden from the optimizer where the target needs it (register pressure)
//   void copy16(void* smem, const void* gmem, bool valid), commit(), wait_all()   16-byte global -> shared copy
//                             (zeros when !valid), its group commit and wait
#pragma once
#include <cstdint>
#include <type_traits>

#include "../platform/platform.hpp"

namespace zyfa::bf16 {

/// Compile-time check of the Tile contract above for tile shape (BlockM, BlockN, DQK, DV); always true when it
/// compiles. Each static_assert names the missing or mistyped member.
template <class Tile>
constexpr bool check_tile() {
  constexpr int R = Tile::kRowsPerThread, SC = Tile::kSCols, OC = Tile::kOCols;
  static_assert(Tile::kWarpThreads == 32 || Tile::kWarpThreads == 64, "Tile contract: kWarpThreads must be 32 or 64.");
  static_assert(R > 0 && SC > 0 && OC > 0 && OC % 2 == 0,
                "Tile contract: kRowsPerThread, kSCols > 0 and kOCols > 0 even (output written in pairs).");
  static_assert(std::is_same_v<decltype(Tile::kQInSmem), const bool>, "Tile contract: kQInSmem (bool).");
  using QFrag = typename Tile::QFrag;
  static_assert(std::is_same_v<decltype(&Tile::row_of), int (*)(int, int, int)>,
                "Tile contract: int row_of(warp, lane, r).");
  static_assert(std::is_same_v<decltype(&Tile::col_of), int (*)(int, int)>, "Tile contract: int col_of(lane, i).");
  static_assert(std::is_same_v<decltype(&Tile::is_row_leader), bool (*)(int)>,
                "Tile contract: bool is_row_leader(lane).");
  static_assert(std::is_same_v<decltype(&Tile::row_max), float (*)(float)>, "Tile contract: float row_max(float).");
  static_assert(std::is_same_v<decltype(&Tile::row_sum), float (*)(float)>, "Tile contract: float row_sum(float).");
  static_assert(std::is_same_v<decltype(&Tile::exp2), float (*)(float)>, "Tile contract: float exp2(float).");
  static_assert(std::is_same_v<decltype(&Tile::warp_any), bool (*)(bool)>, "Tile contract: bool warp_any(bool).");
  static_assert(
      std::is_same_v<decltype(&Tile::load_q), void (*)(QFrag&, const std::uint16_t*, std::int64_t, int, int, int, int)>,
      "Tile contract: void load_q(QFrag&, const uint16_t* gq, int64_t row_stride, int rows_valid, int cols_valid, int "
      "warp, int lane).");
  static_assert(std::is_same_v<decltype(&Tile::qk), void (*)(float(&)[R][SC], const QFrag&, const std::uint16_t*,
                                                             const std::uint16_t*, int, int)>,
                "Tile contract: void qk(float (&s)[R][SC], const QFrag&, const uint16_t* sq, const uint16_t* sk, int "
                "warp, int lane).");
  static_assert(
      std::is_same_v<decltype(&Tile::pv), void (*)(float(&)[R][OC], const float(&)[R][SC], const std::uint16_t*, int)>,
      "Tile contract: void pv(float (&o)[R][OC], const float (&p)[R][SC], const uint16_t* sv, int lane).");
  static_assert(std::is_same_v<decltype(&Tile::opaque), int (*)(int)>, "Tile contract: int opaque(int).");
  static_assert(std::is_same_v<decltype(&Tile::copy16), void (*)(void*, const void*, bool)>,
                "Tile contract: void copy16(void* smem, const void* gmem, bool valid).");
  static_assert(std::is_same_v<decltype(&Tile::commit), void (*)()>, "Tile contract: void commit().");
  static_assert(std::is_same_v<decltype(&Tile::wait_all), void (*)()>, "Tile contract: void wait_all().");
  return true;
}

}  // namespace zyfa::bf16
