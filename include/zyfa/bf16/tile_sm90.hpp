// zyfa/bf16/tile_sm90.hpp -- the warp tile of the BF16 forward kernel on NVIDIA sm_90 with mma.sync m16n8k16
// (a model of the Tile contract, bf16/tile_contract.hpp).
//
// Fragment layouts: arch/sm90.hpp. This is the FlashAttention-2 arrangement (Dao 2023, arXiv:2307.08691): Q.K^T's
// C fragments are reused as the A fragments of P.V without leaving registers.
#pragma once
#include <cstdint>

#include "../arch/sm90.hpp"
#include "../platform/platform.hpp"
#include "smem_layout.hpp"

#if ZYFA_PLATFORM_CUDA

namespace zyfa::bf16 {

using arch::sm90::copy16_async;
using arch::sm90::copy_commit;
using arch::sm90::copy_wait_all;
using arch::sm90::ldmatrix_x4;
using arch::sm90::ldmatrix_x4_trans;
using arch::sm90::mma_bf16_16x8x16;
using arch::sm90::pack_bf16x2;
using arch::sm90::smem_addr;

/// ldmatrix row addresses into a SwizzledTile, precomputed once: every address the warp tile needs has the
/// form row = row_const + row_l (row_const a multiple of 8, so row % 8 = row_l % 8) and 16-byte chunk
/// c = 2*j + c_l (j compile-time, c_l in {0,1} per lane). Then the swizzled chunk is
/// G*floor(2j/G) + ((2j mod G) XOR y) with y = (c_l XOR row_l) mod G, so all addresses are one of G/2
/// per-lane registers plus a compile-time immediate (ldmatrix [reg + imm]): a handful of live registers
/// instead of one per (j, row_const) pair.
template <class Layout>
struct LdsmAddr {
  static constexpr int G = Layout::kGroup;
  std::uint32_t a[G / 2];
  __device__ void init(std::uint32_t tile_base, int row_l, int c_l) {
    const int y = (c_l ^ row_l) & (G - 1);
#pragma unroll
    for (int i = 0; i < G / 2; ++i)
      a[i] = tile_base + static_cast<std::uint32_t>(row_l * Layout::kCols * 2 + (((2 * i) ^ y) << 4));
  }
  /// Shared address (bytes) of (row_const + row_l, chunk 2j + c_l).
  __device__ std::uint32_t at(int row_const, int j) const {
    return a[((2 * j) % G) / 2] + static_cast<std::uint32_t>(row_const * Layout::kCols * 2 + G * ((2 * j) / G) * 16);
  }
};

/// The warp tile of the BF16 forward kernel on sm_90 with mma.sync m16n8k16.
///
/// A block of `Warps` warps owns `BlockM` query rows; warp w owns rows [w*BlockM/Warps, (w+1)*BlockM/Warps)
/// as `kMT` 16-row MMA tiles. Q stays in shared memory and is read with ldmatrix at every k-step (as in
/// FlashAttention-2 for head_dim >= 128; it keeps the register budget for the O accumulator).
/// Accumulators are indexed [thread row r][element i]:
///   S (scores, BlockN keys): r in [0, 2*kMT), i in [0, BlockN/4); O: i in [0, DV/4).
/// Elements i and i+1 (i even) of a row are adjacent columns (epilogue writes them as one bf16x2).
template <int BlockM, int BlockN, int DQK, int DV, int Warps>
struct Sm90WarpTile {
  static constexpr int kWarpThreads = 32;
  static constexpr int kWarpRows = BlockM / Warps;
  static_assert(BlockM % Warps == 0 && kWarpRows % 16 == 0,
                "sm90: BlockM / Warps (query rows per warp) must be a multiple of 16, the M of mma m16n8k16.");
  static_assert(BlockN % 16 == 0, "sm90: BlockN (keys per tile) must be a multiple of 16 (one ldmatrix.x4).");
  static_assert(DQK % 16 == 0, "sm90: head_dim_qk must be a multiple of 16 (the K of mma m16n8k16).");
  static_assert(DV % 16 == 0, "sm90: head_dim_v must be a multiple of 16 (two n8 tiles per ldmatrix.x4).");
  // kMT 16-row MMA tiles per warp; per thread 2*kMT rows of BlockN/4 scores and DV/4 output values.
  static constexpr int kMT = kWarpRows / 16;
  static constexpr int kRowsPerThread = 2 * kMT;
  static constexpr int kSCols = BlockN / 4;
  static constexpr int kOCols = DV / 4;
  static constexpr bool kQInSmem = true;
  struct QFrag {};  // Q is read from shared memory at each k-step

  using QLayout = SwizzledTile<BlockM, DQK>;
  using KLayout = SwizzledTile<BlockN, DQK>;
  using VLayout = SwizzledTile<BlockN, DV>;

  /// Query row (within the block) of thread row r.
  __device__ static int row_of(int warp, int lane, int r) {
    return warp * kWarpRows + (r / 2) * 16 + (r % 2) * 8 + lane / 4;
  }
  /// Key (within the key tile) of S element i; also the dv index of O element i.
  __device__ static int col_of(int lane, int i) { return (i / 2) * 8 + 2 * (lane % 4) + (i % 2); }
  /// True for the one lane per row that writes softmax_lse.
  __device__ static bool is_row_leader(int lane) { return lane % 4 == 0; }

  /// Max / sum over the 4 lanes (same g = lane/4) that hold parts of one query row.
  __device__ static float row_max(float x) {
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
  }
  __device__ static float row_sum(float x) {
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    return x + __shfl_xor_sync(0xffffffffu, x, 2);
  }
  /// 2^x (ex2.approx.ftz; base 2: the scores are already in the log2 domain).
  __device__ static float exp2(float x) { return arch::sm90::exp2(x); }
  /// True if `pred` holds in any lane of the warp.
  __device__ static bool warp_any(bool pred) { return __any_sync(0xffffffffu, pred) != 0; }

  /// Q comes from shared memory; nothing to preload.
  __device__ static void load_q(QFrag&, const std::uint16_t*, std::int64_t, int, int, int, int) {}

  /// s = Q.K^T for this warp's rows of the Q tile in `sq` and the BlockN keys of the tile in `sk` (both
  /// SwizzledTile layouts in shared memory): raw fp32 scores, softmax_scale not applied.
  __device__ static void qk(float (&s)[kRowsPerThread][kSCols], const QFrag&, const std::uint16_t* sq,
                            const std::uint16_t* sk, int warp, int lane) {
#pragma unroll
    for (int r = 0; r < kRowsPerThread; ++r)
#pragma unroll
      for (int i = 0; i < kSCols; ++i) s[r][i] = 0.0f;
    LdsmAddr<QLayout> qa;
    qa.init(smem_addr(sq) + warp * kWarpRows * DQK * 2, lane % 16, lane / 16);
    LdsmAddr<KLayout> ka;
    ka.init(smem_addr(sk), (lane / 16) * 8 + lane % 8, (lane / 8) % 2);
#pragma unroll
    for (int ks = 0; ks < DQK / 16; ++ks) {
      std::uint32_t a[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) ldmatrix_x4(a[mt], qa.at(mt * 16, ks));
#pragma unroll
      for (int p = 0; p < BlockN / 16; ++p) {
        std::uint32_t b[4];
        ldmatrix_x4(b, ka.at(p * 16, ks));
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma_bf16_16x8x16(s[2 * mt][4 * p], s[2 * mt][4 * p + 1], s[2 * mt + 1][4 * p], s[2 * mt + 1][4 * p + 1],
                           a[mt], b[0], b[1]);
          mma_bf16_16x8x16(s[2 * mt][4 * p + 2], s[2 * mt][4 * p + 3], s[2 * mt + 1][4 * p + 2],
                           s[2 * mt + 1][4 * p + 3], a[mt], b[2], b[3]);
        }
      }
    }
  }

  /// o += P.V with P = the probabilities in `p` (fp32, rounded to bf16 here) and V the tile in `sv`.
  __device__ static void pv(float (&o)[kRowsPerThread][kOCols], const float (&p)[kRowsPerThread][kSCols],
                            const std::uint16_t* sv, int lane) {
    LdsmAddr<VLayout> va;
    va.init(smem_addr(sv), ((lane / 8) % 2) * 8 + lane % 8, lane / 16);
#pragma unroll
    for (int kk = 0; kk < BlockN / 16; ++kk) {
      std::uint32_t a[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        a[mt][0] = pack_bf16x2(p[2 * mt][4 * kk], p[2 * mt][4 * kk + 1]);
        a[mt][1] = pack_bf16x2(p[2 * mt + 1][4 * kk], p[2 * mt + 1][4 * kk + 1]);
        a[mt][2] = pack_bf16x2(p[2 * mt][4 * kk + 2], p[2 * mt][4 * kk + 3]);
        a[mt][3] = pack_bf16x2(p[2 * mt + 1][4 * kk + 2], p[2 * mt + 1][4 * kk + 3]);
      }
#pragma unroll
      for (int q = 0; q < DV / 16; ++q) {
        std::uint32_t b[4];
        ldmatrix_x4_trans(b, va.at(kk * 16, q));
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma_bf16_16x8x16(o[2 * mt][4 * q], o[2 * mt][4 * q + 1], o[2 * mt + 1][4 * q], o[2 * mt + 1][4 * q + 1],
                           a[mt], b[0], b[1]);
          mma_bf16_16x8x16(o[2 * mt][4 * q + 2], o[2 * mt][4 * q + 3], o[2 * mt + 1][4 * q + 2],
                           o[2 * mt + 1][4 * q + 3], a[mt], b[2], b[3]);
        }
      }
    }
  }

  /// `x` through a volatile move: values derived from it (tile-copy and mask indices) are recomputed where used
  /// instead of being hoisted out of the key loop and kept live (register pressure: without it ptxas spills).
  __device__ static int opaque(int x) {
    int y;
    asm volatile("mov.b32 %0, %1;\n" : "=r"(y) : "r"(x));
    return y;
  }
  /// 16-byte global -> shared copy (cp.async; zeros when !valid), group commit, wait for all groups.
  __device__ static void copy16(void* dst, const void* src, bool valid) { copy16_async(dst, src, valid); }
  __device__ static void commit() { copy_commit(); }
  __device__ static void wait_all() { copy_wait_all(); }
};

}  // namespace zyfa::bf16

#endif  // ZYFA_PLATFORM_CUDA
