// zyfa/bf16/fwd_kernel.hpp -- the BF16 causal/non-causal forward attention kernel (one template for
// sm_90 and AMD CDNA; the arch differences live in Config::Tile, arch/*.hpp).
//
// One block computes BlockM query rows of one (batch, head): FlashAttention-2's forward loop (Dao 2023,
// arXiv:2307.08691) -- Q tile (shared memory on sm_90, VGPRs on AMD), K and V tiles in shared memory/LDS,
// S = Q.K^T and the online softmax in registers, O += P.V in registers, one pass over the keys.
// Pipelining (sm_90, cp.async; FlashAttention-2's order): V[n] is loaded while S[n] is computed, K[n-1] while
// the softmax and P.V[n] run; two barriers per key tile. AMD copies synchronously (simple, emulator-friendly).
// Keys are visited from the last visible tile down to the first, so the tiles that need masking (the
// causal diagonal, the seqlen_k tail) come first and the rest run the unmasked path.
// Grid: one linear x dimension (limit 2^31-1, never the 65,535 of y/z): block b -> m-block-reversed index
// b / (batch*num_heads), (batch, head) = b % (batch*num_heads). The heaviest causal row blocks (the last ones)
// are launched first. GQA/MQA: head h reads key/value head h / group_size.
// Memory: inputs and outputs only -- no workspace, never a seqlen_q x seqlen_k buffer.
#pragma once
#include <cstdint>

#include "../platform/platform.hpp"
#include "device_math.hpp"
#include "config.hpp"
#include "epilogue.hpp"
#include "fwd_args.hpp"
#include "online_softmax.hpp"
#include "tile_copy.hpp"

#if !ZYFA_PLATFORM_HOST

namespace zyfa::bf16 {

/// Number of key tiles (of BlockN) visible to the query rows [m0, m0 + BlockM): 0 when every row of the
/// block sees no key (causal with seqlen_q > seqlen_k).
template <int BlockM, int BlockN>
__device__ __forceinline__ int visible_key_tiles(const FwdArgs& a, int m0) {
  int n_end = (a.seqlen_k + BlockN - 1) / BlockN;
  if (a.causal) {
    const std::int64_t last_key = static_cast<std::int64_t>(m0) + BlockM - 1 + a.causal_offset;  // of the last row
    if (last_key < 0) return 0;
    const std::int64_t n_causal = last_key / BlockN + 1;
    if (n_causal < n_end) n_end = static_cast<int>(n_causal);
  }
  return n_end;
}

/// True if some element V[key][d], key in [key_lo, key_hi), d < DV (bf16 bits at `gv`, row stride in elements) is
/// Inf or NaN. The calling warp reads every element (lane-strided) and votes: the answer is warp-uniform, and the
/// same in every warp of the block (no barrier needed).
template <class Tile, int DV>
__device__ bool keys_have_nonfinite_v(const std::uint16_t* gv, std::int64_t row_stride, int key_lo, int key_hi,
                                      int lane) {
  std::uint32_t bad = 0;
  const int n = (key_hi - key_lo) * DV;
#pragma unroll 1
  for (int e = lane; e < n; e += Tile::kWarpThreads)
    bad |= !__builtin_isfinite(__builtin_bit_cast(
        float, static_cast<std::uint32_t>(gv[static_cast<std::int64_t>(key_lo + e / DV) * row_stride + e % DV]) << 16));
  return Tile::warp_any(bad != 0);
}

/// Adds to each stored output element (row, d) of the block (rows < rows_valid, bf16 at `go`) the Inf/NaN values
/// V[key][d] of the keys in [key_lo, the row's last visible key] (the tiles that crossed the diagonal, whose
/// non-finite V elements were zeroed in shared memory before P.V), read again from global memory. p > 0 times +-Inf
/// is +-Inf and NaN stays NaN, so the element becomes what P.V would have given; rows that do not see a key never
/// read it. The block's threads split the elements; call after a barrier that follows the epilogue's stores. Runs
/// only for blocks that met a non-finite V on the diagonal.
template <int Threads, int DV>
ZYFA_COLD_DEVICE_FN void add_visible_nonfinite_v(std::uint16_t* go, std::int64_t o_row_stride, const std::uint16_t* gv,
                                                 std::int64_t v_row_stride, int key_lo, int seqlen_k, int causal_offset,
                                                 int m0, int rows_valid, int tid) {
#pragma unroll 1
  for (int e = tid; e < rows_valid * DV; e += Threads) {
    const int row = e / DV, d = e % DV;
    const int last = imin_(seqlen_k - 1, m0 + row + causal_offset);
    float add = 0.0f;
    bool any = false;
#pragma unroll 1
    for (int j = key_lo; j <= last; ++j) {
      const float x = __builtin_bit_cast(
          float, static_cast<std::uint32_t>(gv[static_cast<std::int64_t>(j) * v_row_stride + d]) << 16);
      if (!__builtin_isfinite(x)) {
        add += x;
        any = true;
      }
    }
    if (any) {
      std::uint16_t* dst = go + static_cast<std::int64_t>(row) * o_row_stride + d;
      *dst = static_cast<std::uint16_t>(
          bf16_bits_rne(__builtin_bit_cast(float, static_cast<std::uint32_t>(*dst) << 16) + add));
    }
  }
}

/// The forward kernel for one KernelConfig. Launch (bf16::launch does it): grid = ceil(seqlen_q / BlockM) *
/// batch * num_heads blocks in x (<= 2^31-1), Config::kThreads threads, Config::kSmemBytes bytes of dynamic
/// shared memory (LDS). Reads q/k/v and writes out (and softmax_lse if non-null) as described by `a`.
/// Varlen = true: the variable-length kernel (FwdArgs::cu_seqlens_q/_k set): each block narrows its copy of the
/// arguments to its sequence (select_sequence, fwd_args.hpp) and then runs exactly the fixed-length code on it.
template <class Config, bool Varlen = false>
__global__ void __launch_bounds__(Config::kThreads) fwd_kernel(const FwdArgs args) {
  FwdArgs a = args;  // Varlen: narrowed to the block's sequence below (fixed length: never written)
  using Tile = typename Config::Tile;
  constexpr int kBlockM = Config::kBlockM, kBlockN = Config::kBlockN;
  // Tile head dims (padded to multiples of 32) and the real ones: padding columns are zero-filled, never read.
  constexpr int kDQK = Config::kDQKPad, kDV = Config::kDVPad, kThreads = Config::kThreads;
  constexpr int kDQKReal = Config::kDQK, kDVReal = Config::kDV;
  constexpr int R = Tile::kRowsPerThread, SC = Tile::kSCols, OC = Tile::kOCols;

  extern __shared__ __align__(128) unsigned char smem_raw[];
  std::uint16_t* sq = reinterpret_cast<std::uint16_t*>(smem_raw);
  std::uint16_t* sk = sq + Config::kQSmemBytes / 2;
  std::uint16_t* sv = sk + SwizzledTile<kBlockN, kDQK>::kElems;

  const int tid = static_cast<int>(zyfa::dev::thread_idx_x());
  const int warp = tid / Tile::kWarpThreads;
  const int lane = tid % Tile::kWarpThreads;

  // Block -> (m block, batch, head); heaviest (last) m blocks first.
  const int bh_count = a.batch * a.num_heads;
  const int bid = static_cast<int>(zyfa::dev::block_idx_x());
  const int bh = bid % bh_count;
  const int m_block = a.num_m_blocks - 1 - bid / bh_count;
  const int b = bh / a.num_heads, h = bh % a.num_heads, hk = h / a.group_size;
  const int m0 = m_block * kBlockM;
  std::int64_t q_row0 = 0, k_row0 = 0;  // varlen: the sequence's first query row and key in the packed tensors
  if constexpr (Varlen)
    if (!select_sequence(a, b, m0, &q_row0, &k_row0)) return;  // this block's sequence (fwd_args.hpp)
  const int rows_valid = imin_(kBlockM, a.seqlen_q - m0);

  const std::uint16_t* gq = a.q + b * a.q_batch_stride + h * a.q_head_stride + (q_row0 + m0) * a.q_row_stride;
  const std::uint16_t* gk = a.k + b * a.k_batch_stride + hk * a.k_head_stride + k_row0 * a.k_row_stride;
  const std::uint16_t* gv = a.v + b * a.v_batch_stride + hk * a.v_head_stride + k_row0 * a.v_row_stride;
  std::uint16_t* go = a.out + b * a.o_batch_stride + h * a.o_head_stride + (q_row0 + m0) * a.o_row_stride;
  float* glse = a.lse == nullptr ? nullptr : a.lse + b * a.lse_batch_stride + h * a.lse_head_stride + q_row0 + m0;

  float o[R][OC];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int i = 0; i < OC; ++i) o[r][i] = 0.0f;
  OnlineSoftmax<Tile, R, Config::kSkipRescale> sm;
  sm.init();
  bool v_nonfinite = false;  // a diagonal tile's V held Inf/NaN (block-uniform; where sync_threads_or exists)

  const int n_tiles = visible_key_tiles<kBlockM, kBlockN>(a, m0);
  if (n_tiles > 0) {
    typename Tile::QFrag qf;
    if constexpr (Tile::kQInSmem)
      copy_tile<Tile, kThreads, kBlockM, kDQK, kDQKReal>(sq, gq, a.q_row_stride, rows_valid, tid);
    {
      const int n = n_tiles - 1;
      copy_tile<Tile, kThreads, kBlockN, kDQK, kDQKReal>(sk,
                                                         gk + static_cast<std::int64_t>(n) * kBlockN * a.k_row_stride,
                                                         a.k_row_stride, a.seqlen_k - n * kBlockN, tid);
      Tile::commit();
    }
    if constexpr (!Tile::kQInSmem) Tile::load_q(qf, gq, a.q_row_stride, rows_valid, kDQKReal, warp, lane);

#pragma unroll 1
    for (int n = n_tiles - 1; n >= 0; --n) {
      const int n0 = n * kBlockN;
      const int tid_l = Tile::opaque(tid);
      Tile::wait_all();
      zyfa::dev::sync_threads();  // K[n] (and Q) visible; every warp is done with V[n+1]
      copy_tile<Tile, kThreads, kBlockN, kDV, kDVReal>(sv, gv + static_cast<std::int64_t>(n0) * a.v_row_stride,
                                                       a.v_row_stride, a.seqlen_k - n0, tid_l);
      Tile::commit();
      const bool diag = a.causal && (n0 + kBlockN - 1 > m0 + a.causal_offset);

      float s[R][SC];
      Tile::qk(s, qf, sq, sk, warp, lane);

      // Mask keys past seqlen_k and (causal) keys right of the diagonal; only tiles that cross them.
      const bool tail = n0 + kBlockN > a.seqlen_k;
      if (tail || diag) {
        const int lane_l = Tile::opaque(lane);
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const int row = m0 + Tile::row_of(warp, lane_l, r);
          const int limit = a.causal ? imin_(a.seqlen_k - 1, row + a.causal_offset) : a.seqlen_k - 1;
#pragma unroll
          for (int i = 0; i < SC; ++i)
            if (n0 + Tile::col_of(lane_l, i) > limit) s[r][i] = -__builtin_huge_valf();
        }
      }

      Tile::wait_all();
      // A tile crossing the causal diagonal holds keys some rows must not see: Inf/NaN in its V are replaced by 0
      // (P.V's MMA would turn 0 * Inf into NaN) by the thread that copied them; the rows that do see them get them
      // back after the loop (add_visible_nonfinite_v). Keys past seqlen_k are zero-filled by every copy.
      if (diag) {
        const bool v_bad = sanitize_own_chunks<kThreads, kBlockN, kDV>(sv, tid_l);
        if constexpr (zyfa::dev::kHasSyncThreadsOr)
          v_nonfinite |= zyfa::dev::sync_threads_or(v_bad);  // V[n] visible; every warp is done with K[n]
        else
          zyfa::dev::sync_threads();
      } else {
        zyfa::dev::sync_threads();  // V[n] visible; every warp is done with K[n]
      }
      if (n > 0) {
        copy_tile<Tile, kThreads, kBlockN, kDQK, kDQKReal>(
            sk, gk + static_cast<std::int64_t>(n0 - kBlockN) * a.k_row_stride, a.k_row_stride, kBlockN, tid_l);
        Tile::commit();
      }
      sm.update(s, o, a.scale_log2);
      Tile::pv(o, s, sv, lane);
    }
  }
  store_output<kDVReal>(o, sm, go, a.o_row_stride, glse, rows_valid, a.scale_log2, warp, lane);
  // Inf/NaN in V at keys of the diagonal tiles (zeroed in shared memory): rows that see them get them back.
  if (a.causal && n_tiles > 0) {
    const int first_diag = imax_(0, m0 + a.causal_offset + 1) / kBlockN;  // lowest tile crossing the diagonal
    const int key_lo = first_diag * kBlockN, key_hi = imin_(a.seqlen_k, n_tiles * kBlockN);
    bool any;
    if constexpr (zyfa::dev::kHasSyncThreadsOr)
      any = v_nonfinite;
    else  // no barrier-with-OR (AMD): every wave scans the diagonal tiles' V again
      any = key_lo < key_hi && keys_have_nonfinite_v<Tile, kDVReal>(gv, a.v_row_stride, key_lo, key_hi, lane);
    if (any) {                    // block-uniform
      zyfa::dev::sync_threads();  // every thread's output stores are visible
      add_visible_nonfinite_v<kThreads, kDVReal>(go, a.o_row_stride, gv, a.v_row_stride, key_lo, a.seqlen_k,
                                                 a.causal_offset, m0, rows_valid, tid);
    }
  }
}

}  // namespace zyfa::bf16

#endif  // !ZYFA_PLATFORM_HOST
