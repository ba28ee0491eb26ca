// zyfa/bf16/tile_cdna.hpp -- the wave tile of the BF16 forward kernel on AMD CDNA (gfx950, gfx942),
// built on a 32x32 (k16 per step) bf16 MFMA given as `Mfma` (gfx950.hpp / gfx942.hpp).
//
// A wave64 owns 32 query rows. Scores are computed transposed, S^T = K.Q^T (keys x queries), so that a
// lane's accumulator registers all belong to ONE query (column l%32 of the C tile) -- the row max/sum of
// the softmax is in-lane plus one exchange between the two 32-lane halves -- and the C registers of S^T
// are already the B operand of O^T = V^T.P^T (the CK/AITER arrangement):
//   S^T tile kt (32 keys): register r of lane l = key kt*32 + 8*(r/4) + 4*(l/32) + r%4, query l%32.
//   O^T tile dt (32 dv):   register r of lane l = dv  dt*32 + 8*(r/4) + 4*(l/32) + r%4, query l%32.
//   P^T as B (k16 step st of tile kt): element j of lane half h = key kt*32 + 16*st + 8*(j/4) + 4*h + j%4,
//   i.e. registers 8*st + j of S^T; V^T as A is read for exactly those keys (2-byte LDS reads).
//   Q^T as B (k16 step st): lane l holds query l%32, head-dim elements 16*st + 8*(l/32) + 0..7, loaded once
//   from global memory into VGPRs (Q in registers); K as A: key row l%32, the same head-dim elements
//   (one 16-byte LDS read).
// Kept simple on purpose (no LDS prefetch, scalar V reads): zyfa's gfx950 CPU emulator runs this code.
#pragma once
#include <cstdint>

#include "../platform/platform.hpp"
#include "../arch/cdna_mfma_types.hpp"
#include "device_math.hpp"
#include "smem_layout.hpp"

#if ZYFA_PLATFORM_HIP

namespace zyfa::bf16 {

using arch::cdna::bf16x8;
using arch::cdna::f32x16;
using arch::cdna::u32x4;

/// 16 bytes from LDS or global memory (16-byte aligned).
__device__ __forceinline__ bf16x8 load16(const std::uint16_t* p) {
  return __builtin_bit_cast(bf16x8, *reinterpret_cast<const u32x4*>(p));
}

/// Lane index within the wave (wave64).
__device__ __forceinline__ int lane_id() { return static_cast<int>(zyfa::dev::thread_idx_x() & 63u); }

/// Value of `x` in lane `lane ^ 32` (ds_bpermute_b32; byte address = lane * 4).
__device__ __forceinline__ float swap_halves(float x, int lane) {
  return __builtin_bit_cast(float, __builtin_amdgcn_ds_bpermute((lane ^ 32) << 2, __builtin_bit_cast(int, x)));
}

/// The wave tile (matrix-op traits) fwd_kernel uses on AMD: a model of the Tile contract (bf16/tile_contract.hpp),
/// as Sm90WarpTile. BlockM query rows and BlockN keys per block, head
/// dims DQK (q/k) and DV (v) in elements, Warps wave64s, Mfma one 32x32 k16 bf16 step (arch/gfx950.hpp,
/// arch/gfx942.hpp). Per lane: one query row (kRowsPerThread = 1), kSCols = BlockN/2 scores and
/// kOCols = DV/2 output values, indexed as in the file comment (col_of maps element i to its key / dv index).
template <int BlockM, int BlockN, int DQK, int DV, int Warps, class Mfma>
struct CdnaWaveTile32 {
  static constexpr int kWarpThreads = 64;
  static_assert(BlockM == 32 * Warps,
                "cdna: each wave64 owns 32 query rows (the N of the 32x32 MFMA), so BlockM must be 32 * Warps.");
  static_assert(BlockN % 32 == 0, "cdna: BlockN (keys per tile) must be a multiple of 32 (the M of the 32x32 MFMA).");
  static_assert(DQK % 16 == 0, "cdna: head_dim_qk must be a multiple of 16 (one MFMA k16 step).");
  static_assert(DV % 32 == 0, "cdna: head_dim_v must be a multiple of 32 (the M of the O^T MFMA).");
  // Accumulator shape per lane (see the struct comment); Q lives in VGPRs, not in LDS.
  static constexpr int kRowsPerThread = 1;
  static constexpr int kSCols = (BlockN / 32) * 16;
  static constexpr int kOCols = (DV / 32) * 16;
  static constexpr bool kQInSmem = false;
  struct QFrag {
    bf16x8 q[DQK / 16];
  };

  using QLayout = SwizzledTile<BlockM, DQK>;  // unused (Q lives in VGPRs)
  using KLayout = SwizzledTile<BlockN, DQK>;
  using VLayout = SwizzledTile<BlockN, DV>;

  /// Query row (within the block) of this lane's accumulators.
  __device__ static int row_of(int warp, int lane, int) { return warp * 32 + lane % 32; }
  /// Key (within the key tile) of S element i; also the dv index of O element i.
  __device__ static int col_of(int lane, int i) {
    return (i / 16) * 32 + 8 * ((i % 16) / 4) + 4 * (lane / 32) + (i % 4);
  }
  /// True for the one lane per query row that writes softmax_lse (lanes l and l + 32 share a row).
  __device__ static bool is_row_leader(int lane) { return lane < 32; }

  /// Max / sum over the two lanes (l, l ^ 32) that hold parts of one query row.
  __device__ static float row_max(float x) { return fmax_(x, swap_halves(x, lane_id())); }
  __device__ static float row_sum(float x) { return x + swap_halves(x, lane_id()); }
  /// 2^x (v_exp_f32; base 2: the scores are already in the log2 domain).
  __device__ static float exp2(float x) { return zyfa::dev::exp2f_fast(x); }
  /// True if `pred` holds in any lane of the wave (s_ballot; wave-uniform result).
  __device__ static bool warp_any(bool pred) { return __builtin_amdgcn_ballot_w64(pred) != 0; }

  /// Loads this wave's Q rows into VGPRs. `gq` points to row 0 of the block's Q tile (bf16 bits, 16-byte
  /// aligned rows), `row_stride` in elements; rows >= rows_valid and head-dim columns >= cols_valid (a multiple of 8)
  /// read as zero.
  __device__ static void load_q(QFrag& f, const std::uint16_t* gq, std::int64_t row_stride, int rows_valid,
                                int cols_valid, int warp, int lane) {
    const int row = row_of(warp, lane, 0);
    const std::uint16_t* src = gq + static_cast<std::int64_t>(row) * row_stride + 8 * (lane / 32);
#pragma unroll
    for (int st = 0; st < DQK / 16; ++st) {
      u32x4 v = {0u, 0u, 0u, 0u};
      if (row < rows_valid && 16 * st + 8 * (lane / 32) < cols_valid)
        v = *reinterpret_cast<const u32x4*>(src + 16 * st);
      f.q[st] = __builtin_bit_cast(bf16x8, v);
    }
  }

  /// s = (K.Q^T) for the BlockN keys in `sk` (KLayout, LDS) and this wave's 32 queries: raw fp32 scores,
  /// softmax_scale not applied. The `sq` and `warp` arguments are unused (Q is in `f`).
  __device__ static void qk(float (&s)[1][kSCols], const QFrag& f, const std::uint16_t*, const std::uint16_t* sk, int,
                            int lane) {
#pragma unroll
    for (int kt = 0; kt < BlockN / 32; ++kt) {
      f32x16 acc = {};
#pragma unroll
      for (int st = 0; st < DQK / 16; ++st) {
        const bf16x8 a = load16(sk + KLayout::offset(kt * 32 + lane % 32, 16 * st + 8 * (lane / 32)));
        acc = Mfma::mma(a, f.q[st], acc);
      }
#pragma unroll
      for (int r = 0; r < 16; ++r) s[0][kt * 16 + r] = acc[r];
    }
  }

  /// o^T += V^T.P^T with P = `p` (fp32, rounded to bf16 here) and V the tile in `sv`.
  __device__ static void pv(float (&o)[1][kOCols], const float (&p)[1][kSCols], const std::uint16_t* sv, int lane) {
    f32x16 acc[DV / 32];
#pragma unroll
    for (int dt = 0; dt < DV / 32; ++dt)
#pragma unroll
      for (int r = 0; r < 16; ++r) acc[dt][r] = o[0][dt * 16 + r];
    const int h = lane / 32;
#pragma unroll
    for (int kt = 0; kt < BlockN / 32; ++kt) {
#pragma unroll
      for (int st = 0; st < 2; ++st) {
        bf16x8 b;
#pragma unroll
        for (int j = 0; j < 8; ++j) b[j] = static_cast<__bf16>(p[0][kt * 16 + 8 * st + j]);
#pragma unroll
        for (int dt = 0; dt < DV / 32; ++dt) {
          bf16x8 a;
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            const int key = kt * 32 + 16 * st + 8 * (j / 4) + 4 * h + (j % 4);
            a[j] = __builtin_bit_cast(__bf16, sv[VLayout::offset(key, dt * 32 + lane % 32)]);
          }
          acc[dt] = Mfma::mma(a, b, acc[dt]);
        }
      }
    }
#pragma unroll
    for (int dt = 0; dt < DV / 32; ++dt)
#pragma unroll
      for (int r = 0; r < 16; ++r) o[0][dt * 16 + r] = acc[dt][r];
  }

  /// Identity (the sm90 tile uses it to stop address hoisting; not needed here).
  __device__ static int opaque(int x) { return x; }
  /// Synchronous 16-byte copy (zeros when !valid); commit/wait are no-ops on this path.
  __device__ static void copy16(void* dst, const void* src, bool valid) {
    u32x4 v = {0u, 0u, 0u, 0u};
    if (valid) v = *reinterpret_cast<const u32x4*>(src);
    *reinterpret_cast<u32x4*>(dst) = v;
  }
  __device__ static void commit() {}    ///< no-op (copies are synchronous)
  __device__ static void wait_all() {}  ///< no-op (copies are synchronous)
};

}  // namespace zyfa::bf16

#endif  // ZYFA_PLATFORM_HIP
