// zyfa/bf16/sm90/fwd_kernel_ws.hpp -- the sm_90a BF16 forward attention kernel: TMA + mbarrier pipeline, one
// producer warpgroup and two or three consumer warpgroups (warp specialization with setmaxnreg), wgmma for S = Q.K^T
// (both operands in shared memory) and O += P.V (P from registers), ping-pong of the consumer warpgroups and the
// softmax of one key tile overlapped with the P.V of the previous one inside a warpgroup.
//
// Design: FlashAttention-3 (Shah, Bikshandi, Zhang, Thakkar, Ramani, Dao 2024, arXiv:2407.08608): §3.1 producer /
// consumer warp specialization and ping-pong scheduling, §3.2 intra-warpgroup overlap of softmax and GEMMs. The
// instruction facts (descriptors, fragment layouts, proxy fences) are in arch/sm90_wgmma.hpp, arch/sm90_tma.hpp,
// arch/sm90_mbarrier.hpp with their PTX ISA sections.
//
// Work tile = BlockM = 64 x (consumer warpgroups) query rows of one (batch, head); the grid is persistent (min(tiles,
// SMs) CTAs looping over tiles in a static order: tile_coord, or for causal calls balanced pairs of m blocks, tile_at).
// Warpgroup 0 is the producer: its warp 0 loads the Q tile of each work tile once and the K and V tiles of the visible
// key range, last tile first, into a ring of Stages buffers (128-byte swizzle), each completing on its `full` mbarrier;
// all four of its warps scan the V tiles that cross the causal diagonal in the careful pass (below). Consumer warpgroup
// c (c = 0, 1, and 2 with three) owns query rows [64c, 64c + 64) of the work tile; the turn to issue GEMMs passes 0 ->
// 1 (-> 2) -> 0. Per key tile (FA3 "fwd_step"):
//   [named barrier: my turn]  S = Q.K[n]^T issue;  O += P[n+1].V[n+1] issue  [named barrier: the next one's turn]
//   wait S; release K stage; mask (only tiles crossing the causal diagonal or seqlen_k); online softmax of S
//   (runs while P.V is on the tensor cores); wait P.V; release V stage; rescale O; P = bf16(S).
// A warpgroup whose rows see none of the block's first key tiles (causal; WsConfig::kSkipUnseenKeyTiles) takes
// their turns without wgmma and starts at the first tile it sees.
// Masking, online softmax and the epilogue follow bf16/online_softmax.hpp and bf16/epilogue.hpp exactly (log2
// domain with AttentionParams::scale_softmax_log2, empty rows out 0 / lse -inf, NaN rows NaN).
// Keys past seqlen_k and query rows past seqlen_q are outside the tensor maps: TMA zero-fills them on load and
// clips them on the output store. Inf/NaN in V at keys a row must not see (causal diagonal tiles) would be NaN in
// P.V (0 * Inf). A CTA therefore runs its work tiles in up to two passes. The first takes the V tiles as TMA lands them
// (varlen tail tiles still zeroed, below) and checks the outputs: a consumer that stores a non-finite O (causal calls)
// raises a flag, and after the pass the whole CTA meets on a barrier; with the flag up it runs the same work tiles
// again, carefully, and stores them over the first pass's (rows that see an Inf/NaN key are non-finite in both). In the
// careful pass the producer replaces non-finite V elements of diagonal tiles by 0 in shared memory before releasing the
// tile and raises a per-tile flag (the scan is split over the producer's 128 threads and checks 16 bytes in 8 integer
// operations; the fix itself runs only where a thread found Inf/NaN), and the consumers then add the non-finite values
// of the keys each row does see back into the output (read from global memory), as bf16/fwd_kernel.hpp's
// add_visible_nonfinite_v. Finite inputs never take the careful pass; the scan it replaces cost 1-4% of causal calls at
// 2K tokens (hd256 the most). Variable-length form (Varlen = true, flash_attn_varlen_func): the tensor maps cover the
// packed tensors ([1, total, heads, head_dim]); work tile (m block, sequence b, head) reads cu_seqlens_q/_k[b], [b + 1]
// and loads rows from the sequence's first query row / key on; tiles whose first row is past the sequence (or whose
// offsets are invalid) are skipped by every warpgroup. Keys past the sequence's seqlen_k are the next sequence's (not
// zero-filled by TMA): their scores are masked like the seqlen_k tail of a fixed-length call, and the producer zeroes
// those rows of the tail V tile in shared memory (what TMA's zero fill gives a fixed-length call), so Inf/NaN there
// never meets a zero probability. Query rows past the sequence are computed and discarded: a warpgroup whose 64 rows
// reach past the sequence stores its valid rows with st.global instead of the TMA store. Each sequence gives bit for
// bit what the fixed-length kernel gives on that sequence alone. Memory: inputs and outputs only (no workspace);
// deterministic (fixed reduction order, no atomics).
#pragma once
#include <cstdint>

#include "../../arch/sm90.hpp"
#include "../../arch/sm90_mbarrier.hpp"
#include "../../arch/sm90_tma.hpp"
#include "../../arch/sm90_wgmma.hpp"
#include "../../arch/sm90_work_order.hpp"
#include "../../numeric/constants.hpp"
#include "../../platform/platform.hpp"
#include "config_ws.hpp"

#if ZYFA_PLATFORM_CUDA

namespace zyfa::bf16::sm90ws {

/// Kernel arguments (one __grid_constant__ copy per launch). Tensor maps (arch/sm90_tma.hpp) of the BSHD tensors
/// as 4-D {head_dim, seqlen, heads, batch}: q with boxes of BlockM rows, o of 64 rows, k and v of BlockN rows, all
/// 64-column boxes. `v` (bf16 bits) and its element strides: the non-finite add-back reads V from global memory;
/// `out` and its strides: blocks that see no key write their zeros directly. lse: fp32 [batch, num_heads,
/// seqlen_q] (varlen: [num_heads, total_q]), natural log, or nullptr.
struct WsArgs {
  CUtensorMap tm_q, tm_k, tm_v, tm_o;
  const std::uint16_t* v;
  std::uint16_t* out;
  float* lse;
  std::int64_t v_batch_stride, v_row_stride, v_head_stride;
  std::int64_t o_batch_stride, o_row_stride, o_head_stride;
  std::int64_t num_blocks;  ///< work tiles: num_m_blocks * batch * num_heads
  int batch, seqlen_q, seqlen_k, num_heads, group_size;
  int num_m_blocks;   ///< ceil(seqlen_q / BlockM)
  int causal;         ///< 0 or 1
  int causal_offset;  ///< seqlen_k - seqlen_q: row i sees key j iff j <= i + causal_offset
  float scale_log2;   ///< AttentionParams::scale_softmax_log2
  /// Causal work order (tile_coord): (batch, head) pairs per L2 section, 1 .. batch * num_heads (= no sections).
  int section;
  int keys_ascending;  ///< 1: key tiles visited first to last; 0: last (diagonal) to first
  /// Causal, persistent grid only: > 0 = the balanced pairs of m blocks (arch/sm90_work_order.hpp), this many;
  /// 0 = the single-tile order of tile_coord.
  int num_pairs;
  arch::sm90::PairTail pair_tail;  ///< the pairs order's split tail (causal_pair_tail)
  /// The divisions of both work orders: the pairs order's (causal_pair_divisors; its `heads` also serves
  /// tile_coord) and tile_coord's by num_m_blocks.
  arch::sm90::PairDivisors pair_div;
  arch::FastDivmod m_blocks_div;
  std::int64_t num_steps;  ///< the CTAs' loop bound (arch/sm90_work_order.hpp, causal_work_order)
  /// Varlen only (else nullptr / 0): int32 [batch + 1] device offsets into the packed rows (sequence b: query rows
  /// [cu_seqlens_q[b], cu_seqlens_q[b+1]), keys [cu_seqlens_k[b], cu_seqlens_k[b+1])), and the packed row counts.
  /// batch is then the number of sequences and seqlen_q the longest query sequence (num_m_blocks from it).
  const std::int32_t* cu_seqlens_q;
  const std::int32_t* cu_seqlens_k;
  int total_q, total_k;
};

/// 1 in the device pass that compiled the kernel body (sm_90a), else 0; read by the host before dispatching
/// (launch_ws.hpp). One copy per translation unit.
static __device__ int g_ws_body_compiled = ZYFA_SM90A_PASS;

namespace detail {

/// Shared-memory layout offsets of the barriers (bytes from Cfg::kBarOff; up to 4 stages).
struct BarLayout {
  static constexpr int kQFull = 0, kQEmpty = 8, kKFull = 16, kKEmpty = 16 + 8 * 4, kVFull = 16 + 16 * 4,
                       kVEmpty = 16 + 24 * 4, kVFix = 16 + 32 * 4, kFlag = 24 + 32 * 4,  // kFlag: 2 ints
      kQFix = 32 + 32 * 4,                                                               // varlen only
      kOEmpty = 40 + 32 * 4,  // WsConfig::kOInV only: the O store has read the staging tile over the V stages
      kRedo = 48 + 32 * 4;    // int: a consumer found a non-finite O in the first pass (the careful pass follows)
};
/// Named barrier ids: 1 + c = "consumer warpgroup c may issue its GEMMs" (the turn passes c -> c + 1 -> ... -> 0);
/// 4 + c = epilogue of warpgroup c; 7 = the producer warpgroup's four warps at a diagonal V tile; 8 = every consumer
/// warpgroup has finished its last P.V of the work tile (WsConfig::kOInV: O is then staged over the V stages); 9 = the
/// whole CTA between the first and the careful pass.
constexpr int kSchedBar = 1, kEpiBar = 4, kProducerBar = 7, kPvDoneBar = 8, kPassBar = 9;

#if ZYFA_SM90A_PASS
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}
/// True if the bf16 bit pattern is Inf or NaN.
__device__ __forceinline__ bool bf16_nonfinite(std::uint32_t bits) { return (bits & 0x7F80u) == 0x7F80u; }
/// Both bf16 halves of a word at once: with x = w & 0x7F807F80, x + 0x00800080 sets bit 15 (31) exactly when the low
/// (high) half has an all-ones exponent, i.e. is Inf or NaN; the halves do not carry into each other. OR the results
/// of many words and test the OR against 0x80008000.
__device__ __forceinline__ std::uint32_t bf16x2_nonfinite_bits(std::uint32_t w) {
  return (w & 0x7F807F80u) + 0x00800080u;
}
#endif

/// Work tile t -> (m block, batch, head). Causal: the heaviest m blocks (the last ones) first over all heads
/// (longest-processing-time order for the static round-robin of the persistent grid); with Snake, every odd round
/// of gridDim.x tiles is taken in reverse, so that the CTA that got the heaviest tile of one round gets the lightest
/// of the next. Non-causal: the m blocks of one (batch, head) consecutive, so that the CTAs running together share
/// K and V in L2.
using arch::sm90::causal_pair_step;
using arch::sm90::WorkStep;
using TileCoord = arch::sm90::WorkTile;
template <bool Snake>
__device__ __forceinline__ TileCoord tile_coord(const WsArgs& a, std::int64_t t) {
  const int bh_count = a.batch * a.num_heads;
  int m_block, bh;
  if (a.causal) {
    if constexpr (Snake) {
      const std::int64_t g = gridDim.x, round = t / g, first = round * g;
      const std::int64_t len = a.num_blocks - first < g ? a.num_blocks - first : g;
      if (round & 1) t = first + (len - 1 - (t - first));
    }
    // Sections of a.section (batch, head) pairs, each with its m blocks heaviest first, heads fastest.
    const std::int64_t sec_tiles = static_cast<std::int64_t>(a.section) * a.num_m_blocks;
    const int sec = static_cast<int>(t / sec_tiles);
    const int first_bh = sec * a.section;
    const int len = bh_count - first_bh < a.section ? bh_count - first_bh : a.section;
    const std::int64_t r = t - sec * sec_tiles;
    m_block = a.num_m_blocks - 1 - static_cast<int>(r / len);
    bh = first_bh + static_cast<int>(r % len);
  } else if (t < (std::int64_t{1} << 31)) {  // multiply and shift (arch/fast_divmod.hpp)
    const arch::FastDivmod::QuotRem r = a.m_blocks_div.divmod(static_cast<std::uint32_t>(t));
    bh = static_cast<int>(r.quot);
    m_block = static_cast<int>(r.rem);
  } else {
    bh = static_cast<int>(t / a.num_m_blocks);
    m_block = static_cast<int>(t % a.num_m_blocks);
  }
  return arch::sm90::work_tile(m_block, bh, a.pair_div.heads);
}

/// The work tile of loop step t (t = blockIdx.x, + gridDim.x, ... below WsArgs::num_steps): tile t in tile_coord's
/// order, or (WsArgs::num_pairs > 0) the balanced pairs of arch/sm90_work_order.hpp.
template <bool Snake>
__device__ __forceinline__ WorkStep tile_at(const WsArgs& a, std::int64_t t, TileCoord* tc) {
  if (a.num_pairs > 0)
    return causal_pair_step(t, a.num_pairs, a.pair_tail, a.pair_div, a.num_m_blocks, a.batch * a.num_heads, tc);
  *tc = tile_coord<Snake>(a, t);
  return WorkStep::tile;
}

/// The sequence of a work tile: first query row q0() and first key k0() in the packed tensors (0 for fixed
/// length), its lengths and its bottom-right causal offset. load(b, m0): fixed length, always true (the accessors
/// read the call's sizes from the arguments where they are used, as the fixed-length kernel always did). Varlen:
/// sequence b's offsets (as bf16::select_sequence); false, the same in every thread, when the tile has nothing to
/// do: m0 is past the sequence's rows (also an empty sequence), or the offsets are inconsistent (negative,
/// decreasing, past total_q/total_k: neither read nor written).
template <bool Varlen>
struct WsSeq {
  const WsArgs& a;
  __device__ __forceinline__ bool load(int, int) { return true; }
  __device__ __forceinline__ int q0() const { return 0; }
  __device__ __forceinline__ int k0() const { return 0; }
  __device__ __forceinline__ int seqlen_q() const { return a.seqlen_q; }
  __device__ __forceinline__ int seqlen_k() const { return a.seqlen_k; }
  __device__ __forceinline__ int causal_offset() const { return a.causal_offset; }
};
template <>
struct WsSeq<true> {
  const WsArgs& a;
  int q0_, k0_, seqlen_q_, seqlen_k_;
  /// Volatile loads: a second load() (the consumers' epilogue) reads the offsets again instead of keeping them in
  /// registers across the key loop.
  __device__ __forceinline__ bool load(int b, int m0) {
    const volatile int* cq = a.cu_seqlens_q;
    const volatile int* ck = a.cu_seqlens_k;
    const int q0 = cq[b], q1 = cq[b + 1];
    const int k0 = ck[b], k1 = ck[b + 1];
    if (q0 < 0 || k0 < 0 || q1 > a.total_q || k1 > a.total_k || q1 < q0 || k1 < k0 || m0 >= q1 - q0) return false;
    q0_ = q0;
    k0_ = k0;
    seqlen_q_ = q1 - q0;
    seqlen_k_ = k1 - k0;
    return true;
  }
  __device__ __forceinline__ int q0() const { return q0_; }
  __device__ __forceinline__ int k0() const { return k0_; }
  __device__ __forceinline__ int seqlen_q() const { return seqlen_q_; }
  __device__ __forceinline__ int seqlen_k() const { return seqlen_k_; }
  __device__ __forceinline__ int causal_offset() const { return seqlen_k_ - seqlen_q_; }
};

}  // namespace detail

/// Key tiles visible to query rows [m0, m0 + BlockM) (as bf16::visible_key_tiles) of a sequence of seqlen_k keys.
template <int BlockM, int BlockN, class Seq>
__device__ __forceinline__ int ws_visible_key_tiles(const WsArgs& a, const Seq& sq, int m0) {
  int n_end = (sq.seqlen_k() + BlockN - 1) / BlockN;
  if (a.causal) {
    const std::int64_t last_key = static_cast<std::int64_t>(m0) + BlockM - 1 + sq.causal_offset();
    if (last_key < 0) return 0;
    const std::int64_t n_causal = last_key / BlockN + 1;
    if (n_causal < n_end) n_end = static_cast<int>(n_causal);
  }
  return n_end;
}

/// The kernel (persistent). Launch (launch_ws.hpp): min(num_blocks, SM count) CTAs in x (or num_blocks CTAs:
/// WsSchedule::tile_grid_long_causal), each looping over work tiles t = blockIdx.x, + gridDim.x, ...; Cfg::kThreads
/// threads, Cfg::kSmemBytes of dynamic shared memory; only on sm_90a devices and only when g_ws_body_compiled. The K/V
/// ring, the Q buffer and the ping-pong order carry over from one tile to the next, so the producer loads the next
/// tile's Q, K, V while the consumers finish the current one and store it. Snake: the causal tile order of tile_coord
/// (WsSchedule::persistent_snake). Varlen: the variable-length form (see the file comment; WsArgs::cu_seqlens_q/_k
/// set, tensor maps over the packed tensors); false compiles exactly the fixed-length kernel.
template <class Cfg, bool Snake = false, bool Varlen = false>
__global__ void __launch_bounds__(Cfg::kThreads, 1) fwd_kernel_ws(const __grid_constant__ WsArgs a) {
#if ZYFA_SM90A_PASS
  using namespace arch::sm90;
  using B = detail::BarLayout;
  constexpr int BM = Cfg::kBlockM, BN = Cfg::kBlockN, DQK = Cfg::kDQK, DV = Cfg::kDV, kStages = Cfg::kStages;
  constexpr int kConsumers = Cfg::kConsumers, kMBox = Cfg::kMBoxBytes;
  constexpr int kEmptyArrivals = 4 * kConsumers;  // per phase of an `empty` barrier: each consumer warp, after its wait
  constexpr int kSRegs = BN / 2, kORegs = DV / 2, kPRegs = BN / 4;
  static_assert(kStages <= 4, "fwd_kernel_ws: BarLayout holds up to 4 stages.");

  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t raw = smem_addr(smem_raw);
  const std::uint32_t base = (raw + 1023u) & ~1023u;
  unsigned char* const base_ptr = smem_raw + (base - raw);
  const std::uint32_t sQ = base + Cfg::kQOff, sK = base + Cfg::kKOff, sV = base + Cfg::kVOff, sO = base + Cfg::kOOff;
  const std::uint32_t bars = base + Cfg::kBarOff;
  volatile int* const fix_flags = reinterpret_cast<volatile int*>(base_ptr + Cfg::kBarOff + B::kFlag);
  volatile int* const redo = reinterpret_cast<volatile int*>(base_ptr + Cfg::kBarOff + B::kRedo);

  const int tid = static_cast<int>(threadIdx.x);
  const int warpgroup = tid / 128;

  if (tid == 0) {
    mbarrier_init(bars + B::kQFull, 1);
    mbarrier_init(bars + B::kQEmpty, kEmptyArrivals);
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(bars + B::kKFull + 8 * s, 1);
      mbarrier_init(bars + B::kKEmpty + 8 * s, kEmptyArrivals);
      mbarrier_init(bars + B::kVFull + 8 * s, 1);
      mbarrier_init(bars + B::kVEmpty + 8 * s, kEmptyArrivals);
    }
    mbarrier_init(bars + B::kVFix, 1);
    if constexpr (Cfg::kOInV) mbarrier_init(bars + B::kOEmpty, kEmptyArrivals);
    if constexpr (Varlen) mbarrier_init(bars + B::kQFix, 1);
    fix_flags[0] = 0;
    fix_flags[1] = 0;
    *redo = 0;
    mbarrier_init_fence();
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ---------------- producer (warpgroup 0) ----------------
    // Warp 0 waits for free stages and issues every TMA load; in the careful pass all four warps scan the V tiles that
    // cross the causal diagonal (a quarter each), so that the scan, which the consumers wait for, is short.
    setmaxnreg_dec<Cfg::kProducerRegs>();
    const int ptid = tid;           // 0..127
    const bool loader = ptid < 32;  // warp 0
    const int lane = ptid % 32;
    if (ptid == 0) {
      tma_prefetch(&a.tm_q);
      tma_prefetch(&a.tm_k);
      tma_prefetch(&a.tm_v);
      tma_prefetch(&a.tm_o);
    }
    // L2 policies of the loads: every m block of a head reads its K/V tiles, a Q tile is read once.
    const std::uint64_t pol_kv = l2_policy_evict_last(), pol_q = l2_policy_evict_first();
    int kq = 0;                               // keyed tiles (tiles with visible keys) loaded so far
    std::uint32_t kc = 0, vc = 0, fixes = 0;  // K / V tiles loaded, diagonal V tiles fixed (all tiles)
    std::uint32_t qfixes = 0;                 // varlen: Q tiles with rows zeroed
#pragma unroll 1
    for (int pass = 0; pass < 2; ++pass) {
      const bool careful = pass != 0;  // the diagonal V tiles scanned for Inf/NaN (above)
#pragma unroll 1
      for (std::int64_t t = blockIdx.x; t < a.num_steps; t += gridDim.x) {
        detail::TileCoord tc;
        if (detail::tile_at<Snake>(a, t, &tc) == arch::sm90::WorkStep::skip) continue;
        const int m0 = tc.m_block * BM, b = tc.b, h = tc.h, hk = h / a.group_size;
        detail::WsSeq<Varlen> sq{a};
        if (!sq.load(b, m0)) continue;
        const int n_tiles = ws_visible_key_tiles<BM, BN>(a, sq, m0);
        if (n_tiles == 0) continue;
        const int bc = Varlen ? 0 : b;  // batch coordinate of the tensor maps (varlen: the packed batch of one)
        // Warps 1-3 have no part in the first pass of a fixed-length call (no diagonal V scan, no varlen tail): they
        // count the work tile's K and V tiles (the careful pass reads V stages by that count) without walking them
        // (FA3's warps 1-3 exit). Two consumer warpgroups only: the 32-register producer of three spills with it.
        // Same bits; hd128 1.002-1.007x, other head dims 0.999-1.003x (bench/RESULTS.md, 2026-12-07, "item 29's three
        // smaller changes alone").
        if (!Varlen && Cfg::kConsumers == 2 && !careful && !loader) {
          kc += n_tiles;
          vc += n_tiles;
          ++kq;
          if constexpr (!Cfg::kPersistent) break;
          continue;
        }
        if (loader) {
          // Q: the consumers released the previous keyed tile's Q buffer (at its last Q.K^T, or after its epilogue
          // where O is staged in Q). The V-fix flag of this keyed tile's parity is free again then.
          mbarrier_wait(bars + B::kQEmpty, (kq & 1) ^ 1);
          // Varlen: a block reaching past its sequence lands Q on a private barrier and zeroes the rows past the
          // sequence (the next sequence's queries) before publishing it: the rows then are what TMA's zero fill gives
          // a fixed-length call, and the warp-wide rescale decisions of the online softmax are the same (bit for bit).
          const bool q_fix = Varlen && sq.seqlen_q() - m0 < BM;
          if (lane == 0) {
            fix_flags[kq & 1] = 0;
            const std::uint32_t qbar = q_fix ? bars + B::kQFix : bars + B::kQFull;
            mbarrier_arrive_expect_tx(qbar, Cfg::kQBytes);
#pragma unroll
            for (int bx = 0; bx < Cfg::kQBoxes; ++bx)
              tma_load_4d(sQ + bx * kMBox, &a.tm_q, qbar, 64 * bx, sq.q0() + m0, h, bc, pol_q);
          }
          if constexpr (Varlen) {
            if (q_fix) {
              mbarrier_wait(bars + B::kQFix, qfixes & 1);
              ++qfixes;
              const int valid_rows = sq.seqlen_q() - m0;
#pragma unroll 1
              for (int off = lane * 16; off < Cfg::kQBytes; off += 32 * 16)
                if ((off % kMBox) / 128 >= valid_rows)  // the query row (128-byte row of a box) of this chunk
                  st_shared_16(sQ + off, make_uint4(0, 0, 0, 0));
              fence_proxy_async_shared();
              __syncwarp();
              if (lane == 0) mbarrier_arrive(bars + B::kQFull);
            }
          }
        }
        const int first_diag_key = a.causal ? m0 + sq.causal_offset() + 1 : 0x7FFFFFFF;  // first key row 0 must not see
        bool any_fixed = false;
#pragma unroll 1
        for (int i = 0; i <= n_tiles; ++i) {
          if (i < n_tiles && loader) {  // K of tile i (key tiles from the last visible one down)
            const int n = a.keys_ascending ? i : n_tiles - 1 - i, s = static_cast<int>(kc % kStages);
            const std::uint32_t ph = (kc / kStages) & 1;
            ++kc;
            mbarrier_wait(bars + B::kKEmpty + 8 * s, ph ^ 1);
            if (lane == 0) {
              mbarrier_arrive_expect_tx(bars + B::kKFull + 8 * s, Cfg::kKBytes);
#pragma unroll
              for (int bx = 0; bx < Cfg::kQBoxes; ++bx)
                tma_load_4d(sK + s * Cfg::kKBytes + bx * BN * 128, &a.tm_k, bars + B::kKFull + 8 * s, 64 * bx,
                            sq.k0() + n * BN, hk, bc, pol_kv);
            }
          }
          if (i > 0) {  // V of tile i - 1 (P.V runs one tile behind S)
            const int n = a.keys_ascending ? i - 1 : n_tiles - i, s = static_cast<int>(vc % kStages);
            const std::uint32_t ph = (vc / kStages) & 1;
            ++vc;
            if (loader) {
              // WsConfig::kOInV: the previous keyed tile's O store has read the staging tile over the V stages.
              if (Cfg::kOInV && i == 1) mbarrier_wait(bars + B::kOEmpty, (kq & 1) ^ 1);
              mbarrier_wait(bars + B::kVEmpty + 8 * s, ph ^ 1);
            }
            const std::uint32_t dst = sV + s * Cfg::kVBytes;
            const bool diag = careful && n * BN + BN - 1 >= first_diag_key;
            // Varlen: keys [valid_keys, BN) of the tile belong to the next sequence (or lie past total_k)
            const int valid_keys = Varlen ? sq.seqlen_k() - n * BN : BN;
            if (!diag && (!Varlen || valid_keys >= BN)) {
              if (ptid == 0) {
                mbarrier_arrive_expect_tx(bars + B::kVFull + 8 * s, Cfg::kVBytes);
#pragma unroll
                for (int bx = 0; bx < Cfg::kVBoxes; ++bx)
                  tma_load_4d(dst + bx * BN * 128, &a.tm_v, bars + B::kVFull + 8 * s, 64 * bx, sq.k0() + n * BN, hk, bc,
                              pol_kv);
              }
            } else {
              // A tile crossing the diagonal: land it on the private barrier, replace Inf/NaN by 0, then publish.
              // Varlen: the keys past the sequence (a tail tile) are zeroed first, as TMA's zero fill does for a
              // fixed-length call (a row never sees them: they need no add-back). These loads (careful pass, varlen
              // tails only) keep L2's default policy.
              if (ptid == 0) {
                mbarrier_arrive_expect_tx(bars + B::kVFix, Cfg::kVBytes);
#pragma unroll
                for (int bx = 0; bx < Cfg::kVBoxes; ++bx)
                  tma_load_4d(dst + bx * BN * 128, &a.tm_v, bars + B::kVFix, 64 * bx, sq.k0() + n * BN, hk, bc);
              }
              // Warp 0 waits for the tile; warps 1-3 wait behind it on a named barrier, which issues nothing while it
              // waits (each of them polling the mbarrier woke on every barrier event of the CTA: about a fifth of the
              // consumers' instruction count at hd128 causal 2K, ncu on the H200).
              if (loader) mbarrier_wait(bars + B::kVFix, fixes & 1);
              named_barrier_sync(detail::kProducerBar, 128);
              ++fixes;
              bool wrote = false;
              if constexpr (Varlen) {
                if (valid_keys < BN) {  // each thread zeroes the 16-byte chunks it scans below (no barrier needed)
                  wrote = true;
#pragma unroll 1
                  for (int off = ptid * 16; off < Cfg::kVBytes; off += 128 * 16)
                    if ((off % (BN * 128)) / 128 >= valid_keys)  // the key (128-byte row) of this chunk
                      st_shared_16(dst + off, make_uint4(0, 0, 0, 0));
                }
              }
              const int scan_bytes = diag ? Cfg::kVBytes : 0;
              // Fast check of this thread's chunks, two elements per integer add.
              std::uint32_t acc = 0;
#pragma unroll Cfg::kScanUnroll
              for (int off = ptid * 16; off < scan_bytes; off += 128 * 16) {
                const uint4 w = ld_shared_16(dst + off);
                acc |= detail::bf16x2_nonfinite_bits(w.x) | detail::bf16x2_nonfinite_bits(w.y) |
                       detail::bf16x2_nonfinite_bits(w.z) | detail::bf16x2_nonfinite_bits(w.w);
              }
              const bool bad = (acc & 0x80008000u) != 0;
              if (bad) {  // rare: replace this thread's non-finite elements by 0
                wrote = true;
#pragma unroll 1
                for (int off = ptid * 16; off < scan_bytes; off += 128 * 16) {
                  const uint4 v = ld_shared_16(dst + off);
                  std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
                  for (int q = 0; q < 4; ++q) {
                    if (detail::bf16_nonfinite(w[q])) w[q] &= 0xFFFF0000u;
                    if (detail::bf16_nonfinite(w[q] >> 16)) w[q] &= 0x0000FFFFu;
                  }
                  st_shared_16(dst + off, make_uint4(w[0], w[1], w[2], w[3]));
                }
              }
              if (wrote) fence_proxy_async_shared();
              // All four warps done (their writes ordered before the release below); any_bad in every thread.
              const bool any_bad = named_barrier_sync_or(detail::kProducerBar, 128, bad);
              if (ptid == 0) {
                if (any_bad && !any_fixed) fix_flags[kq & 1] = 1;
                mbarrier_arrive(bars + B::kVFull + 8 * s);
              }
              any_fixed |= any_bad;
            }
          }
        }
        ++kq;
        if constexpr (!Cfg::kPersistent) break;
      }
      // Every consumer has stored its last work tile of the first pass (and raised `redo` if an O was not finite).
      if (pass == 0) {
        named_barrier_sync_unaligned(detail::kPassBar, Cfg::kThreads);
        if (*redo == 0) break;
      }
    }
    return;
  }

  // ---------------- consumers ----------------
  setmaxnreg_inc<Cfg::kConsumerRegs>();
  const int cw = warp_uniform(warpgroup) - 1;  // consumer warpgroup 0, 1 (, 2) (uniform: descriptors of Q from it)
  const int wtid = tid % 128, warp = wtid / 32, lane = tid % 32;
  const int row0 = cw * 64 + 16 * warp + lane / 4;  // this thread's rows in the block: row0, row0 + 8
  const int my_bar = detail::kSchedBar + cw, other_bar = detail::kSchedBar + (cw + 1) % kConsumers;
  const std::uint32_t q_base = sQ + cw * 64 * 128;  // this warpgroup's 64 rows inside each BlockM-row Q box
  const std::uint32_t o_base = sO + cw * 64 * 128;  // and inside each BlockM-row O staging box
  const float scale = a.scale_log2;
  // WsConfig::kRescaleThreshold in the units of the raw scores (scale > 0: validated on the host), kept finite so
  // that -inf + margin stays -inf and a row's first finite max is always taken.
  [[maybe_unused]] const float lazy_margin = fminf(Cfg::kRescaleThreshold / scale, __FLT_MAX__);
  if (cw == kConsumers - 1) named_barrier_arrive(detail::kSchedBar + 0, 256);  // consumer 0 issues first
  // With two consumer warpgroups only consumer 0 waits for the K-full / V-full mbarriers: the other reads a stage
  // only after its turn, which follows consumer 0's, taken after it has waited for that stage and issued its wgmma.
  // With three every one waits (WsConfig::kEveryConsumerWaitsFull). The empty arrivals stay per warp of every
  // consumer warpgroup.
  auto wait_full = [&](std::uint32_t bar, std::uint32_t phase) {
    if (Cfg::kEveryConsumerWaitsFull || cw == 0) mbarrier_wait(bar, phase);
  };

  int kq = 0;
  std::uint32_t kc = 0, vc = 0;
  bool store_pending = false;  // thread wtid == 0: a TMA store of this warpgroup may still read o_base
#pragma unroll 1
  for (int pass = 0; pass < 2; ++pass) {
#pragma unroll 1
    for (std::int64_t t = blockIdx.x; t < a.num_steps; t += gridDim.x) {
      detail::TileCoord tc;
      if (detail::tile_at<Snake>(a, t, &tc) == arch::sm90::WorkStep::skip) continue;
      const int m0 = tc.m_block * BM, b = tc.b, h = tc.h, hk = h / a.group_size;
      detail::WsSeq<Varlen> sq{a};
      if (!sq.load(b, m0)) continue;  // the producer skips it too
      const int n_tiles = ws_visible_key_tiles<BM, BN>(a, sq, m0);
      // WsConfig::kSkipUnseenKeyTiles: causal, last key tile first, the block's first key tiles may lie wholly past
      // this warpgroup's last row. It takes those turns of the ping-pong without wgmma (its P would be 0) and starts
      // its softmax at the first tile it sees; it keeps at least one tile (rows that see no key then come out as
      // before). nt: the key tiles it computes.
      int n_skip = 0;
      if (Cfg::kSkipUnseenKeyTiles && a.causal && !a.keys_ascending && n_tiles > 1) {
        const int last_key = m0 + cw * 64 + 63 + sq.causal_offset();
        const int n_wg = last_key < 0 ? 1 : last_key / BN + 1;
        if (n_wg < n_tiles) n_skip = n_tiles - n_wg;
      }
      const int nt = n_tiles - n_skip;

      float o[kORegs];
#pragma unroll
      for (int i = 0; i < kORegs; ++i) o[i] = 0.0f;
      float m[2] = {-__builtin_huge_valf(), -__builtin_huge_valf()};
      float l[2] = {0.0f, 0.0f};
      bool fixed = false;

      if (n_tiles > 0) {
        float s[kSRegs];
        // P of tile n and of tile n-1 (WsConfig::kDoubleP): the softmax packs P of tile n while P.V(n-1) still reads
        // the other buffer; single-buffered, p1 is unused and P is packed after the P.V wait.
        std::uint32_t p0[kPRegs], p1[kPRegs];

        // Descriptors: computed once per work tile; a k16 step or a stage moves the start address field (bytes / 16) by
        // a constant (CUTLASS advances GMMA descriptors the same way; shared addresses stay below 2^18, so the 14-bit
        // field never carries). The low words pass through warp_uniform once per work tile: ptxas then treats them as
        // opaque uniform values and advances them with one add per wgmma, where it otherwise re-derived the address
        // fields from the shared base every key tile (12 more uniform instructions per tile, hd128).
        auto opaque_lo = [](std::uint64_t d) {
          return (d & 0xFFFFFFFF00000000ull) |
                 static_cast<std::uint32_t>(warp_uniform(static_cast<int>(static_cast<std::uint32_t>(d))));
        };
        const std::uint64_t q_desc = opaque_lo(smem_desc_sw128(q_base, 16, 1024)),
                            k_desc = opaque_lo(smem_desc_sw128(sK, 16, 1024));
        const std::uint64_t v_desc = opaque_lo(smem_desc_sw128(sV, BN * 128, 1024));
        auto issue_s = [&](int stage) {
          const std::uint64_t kd = desc_advance(k_desc, static_cast<std::uint32_t>(stage * (Cfg::kKBytes / 16)));
#pragma unroll
          for (int kb = 0; kb < DQK / 16; ++kb) {
            const std::uint32_t q_off = ((kb / 4) * kMBox + (kb % 4) * 32) / 16,
                                k_off = ((kb / 4) * (BN * 128) + (kb % 4) * 32) / 16;
            WgmmaSS<BN>::mma(s, desc_advance(q_desc, q_off), desc_advance(kd, k_off), kb > 0 ? 1 : 0);
          }
        };
        auto issue_pv = [&](int stage, const std::uint32_t(&p)[kPRegs]) {
          const std::uint64_t vd = desc_advance(v_desc, static_cast<std::uint32_t>(stage * (Cfg::kVBytes / 16)));
#pragma unroll
          for (int kb = 0; kb < BN / 16; ++kb) {
            const std::uint32_t frag[4] = {p[4 * kb], p[4 * kb + 1], p[4 * kb + 2], p[4 * kb + 3]};
            WgmmaRS<DV>::mma(o, frag, desc_advance(vd, kb * (16 * 128 / 16)), 1);
          }
        };
        // Masks keys > the row's last visible key (causal) and keys >= seqlen_k, for tiles that cross either.
        // Key tiles n >= n_mask need it (both conditions grow with n): the seqlen_k tail from seqlen_k / BN on; the
        // causal diagonal from (R + 1) / BN on, R = the last key this warpgroup's first row sees (R < 0: every tile).
        // One comparison per tile instead of both conditions.
        int n_mask = sq.seqlen_k() / BN;
        if (a.causal) {
          const int r1 = m0 + cw * 64 + sq.causal_offset() + 1;
          const int n_diag = r1 <= 0 ? 0 : r1 / BN;
          if (n_diag < n_mask) n_mask = n_diag;
        }
        auto mask = [&](int n) {
          if (n < n_mask) return;
          const int n0 = n * BN;
          int limit[2];
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            const int row = m0 + row0 + 8 * r;
            const int lim = a.causal ? row + sq.causal_offset() : 0x7FFFFFFF;
            limit[r] = (lim < sq.seqlen_k() - 1 ? lim : sq.seqlen_k() - 1) - n0;
          }
          const int c0 = 2 * (lane % 4);
#pragma unroll
          for (int i = 0; i < kSRegs; ++i)
            if (c0 + 8 * (i / 4) + (i % 2) > limit[(i / 2) % 2]) s[i] = -__builtin_huge_valf();
        };
        // Online softmax of S (bf16/online_softmax.hpp): new row max, correction factors, S := exp2(S*scale - base).
        // Returns whether a row max of the warp moved; with WsConfig::kRescaleVotePerRow, rows_moved's bit r also
        // says whether one of the warp's rows r (the thread's first or second row) moved.
        unsigned rows_moved = 0;
        auto softmax = [&](float(&corr)[2]) -> bool {
          bool grew = false;
          bool grew_row[2] = {false, false};
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            float mx;
            if constexpr (Cfg::kFa3Step) {  // one serial chain (FA3's order; the same max)
              mx = m[r];
#pragma unroll
              for (int j = 0; j < kSRegs / 4; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e) mx = fmaxf(mx, s[4 * j + 2 * r + e]);
            } else {  // four chains
              float part[4] = {m[r], s[2 * r], s[2 * r + 1], s[2 * r + 4]};
#pragma unroll
              for (int j = 0; j < kSRegs / 4; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                  const int i = 4 * j + 2 * r + e;
                  if (i != 2 * r && i != 2 * r + 1 && i != 2 * r + 4)
                    part[(2 * j + e) % 4] = fmaxf(part[(2 * j + e) % 4], s[i]);
                }
              mx = fmaxf(fmaxf(part[0], part[1]), fmaxf(part[2], part[3]));
            }
            mx = detail::quad_max(mx);
            // Lazy rescaling: the running max moves only when the new one exceeds it by more than the margin.
            if constexpr (Cfg::kRescaleThreshold > 0.0f)
              if (!(mx > m[r] + lazy_margin)) mx = m[r];
            const float bse = (mx == -__builtin_huge_valf()) ? 0.0f : mx * scale;
            corr[r] = arch::sm90::exp2(m[r] * scale - bse);
            grew |= (mx != m[r]);
            grew_row[r] = mx != m[r];
            m[r] = mx;
            float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int j = 0; j < kSRegs / 4; ++j)
#pragma unroll
              for (int e = 0; e < 2; ++e) {
                const int i = 4 * j + 2 * r + e;
                const float pv = arch::sm90::exp2(fmaf(s[i], scale, -bse));
                s[i] = pv;
                sum[(2 * j + e) % 4] += pv;
              }
            l[r] = l[r] * corr[r] + ((sum[0] + sum[1]) + (sum[2] + sum[3]));
          }
          if constexpr (Cfg::kRescaleVotePerRow) {
            rows_moved =
                (__any_sync(0xffffffffu, grew_row[0]) ? 1u : 0u) | (__any_sync(0xffffffffu, grew_row[1]) ? 2u : 0u);
            return rows_moved != 0;
          }
          return __any_sync(0xffffffffu, grew);
        };
        auto to_p = [&](std::uint32_t(&p)[kPRegs]) {
#pragma unroll
          for (int j = 0; j < kPRegs; ++j) p[j] = pack_bf16x2(s[2 * j], s[2 * j + 1]);
        };
        auto release = [&](std::uint32_t bar) {
          if (lane == 0) mbarrier_arrive(bar);
        };

        // The stages of a turn: K of its tile and, with_v, V of the tile before (only consumer 0 waits for them to
        // land: the others read them after their turn).
        auto turn_stages = [&](bool with_v, int& ks, int& vs) {
          ks = warp_uniform(static_cast<int>(kc % kStages));
          wait_full(bars + B::kKFull + 8 * ks, (kc / kStages) & 1);
          ++kc;
          vs = -1;
          if (with_v) {
            vs = warp_uniform(static_cast<int>(vc % kStages));
            wait_full(bars + B::kVFull + 8 * vs, (vc / kStages) & 1);
            ++vc;
          }
        };
        // The skipped tiles' turns: K of tile j and V of tile j - 1 go by as in a step, with no wgmma.
#pragma unroll 1
        for (int j = 0; j < n_skip; ++j) {
          int ks, vs;
          turn_stages(j > 0, ks, vs);
          named_barrier_sync(my_bar, 256);
          named_barrier_arrive(other_bar, 256);
          release(bars + B::kKEmpty + 8 * ks);
          if (vs >= 0) release(bars + B::kVEmpty + 8 * vs);
        }
        mbarrier_wait(bars + B::kQFull, kq & 1);
        // Tile 0 (the last key tile this warpgroup sees): S only (and the last skipped tile's V goes by).
        {
          int ks, vs;
          turn_stages(n_skip > 0, ks, vs);
          named_barrier_sync(my_bar, 256);
          fence_operand(s);
          wgmma_fence();
          issue_s(ks);
          wgmma_commit();
          named_barrier_arrive(other_bar, 256);
          wgmma_wait<0>();
          fence_operand(s);
          release(bars + B::kKEmpty + 8 * ks);
          if (vs >= 0) release(bars + B::kVEmpty + 8 * vs);
          if (Cfg::kQFreeAfterLastQk && nt == 1) release(bars + B::kQEmpty);  // last read of Q
        }
        mask(a.keys_ascending ? 0 : nt - 1);
        {
          float corr[2];
          softmax(corr);  // O is still 0: no rescale
        }
        to_p(p0);

        float corr_pending[2] = {1.0f, 1.0f};  // kRescaleBeforePv: the last softmax's factors, not yet applied to O
        bool grew_pending = false;
        unsigned rows_pending = 0;  // kRescaleVotePerRow: the last softmax's rows_moved
        auto rescale_o = [&](const float(&corr)[2]) {
#pragma unroll
          for (int j = 0; j < kORegs; ++j) o[j] *= corr[(j / 2) % 2];
        };
        // The pending factors (kRescaleBeforePv), where grew_pending; with kRescaleVotePerRow only the rows r (the
        // O registers (j / 2) % 2 == r) whose warp-wide vote moved.
        auto rescale_o_pending = [&]() {
          if constexpr (Cfg::kRescaleVotePerRow) {
#pragma unroll
            for (int r = 0; r < 2; ++r)
              if (rows_pending & (1u << r)) {
#pragma unroll
                for (int j = 0; j < kORegs; ++j)
                  if ((j / 2) % 2 == r) o[j] *= corr_pending[r];
              }
          } else {
            rescale_o(corr_pending);
          }
        };

        // masked: the tile may need the mask (a constant at every call: the mask code is compiled where it is true).
        auto step = [&](const bool masked, int i, std::uint32_t(&pv_p)[kPRegs], std::uint32_t(&next_p)[kPRegs]) {
          const int n = a.keys_ascending ? i : nt - 1 - i;
          const int ks = warp_uniform(static_cast<int>(kc % kStages)),
                    vs = warp_uniform(static_cast<int>(vc % kStages));
          const std::uint32_t kph = (kc / kStages) & 1, vph = (vc / kStages) & 1;
          ++kc;
          ++vc;
          wait_full(bars + B::kKFull + 8 * ks, kph);
          named_barrier_sync(my_bar, 256);
          fence_operand(s);
          fence_operand(o);
          fence_operand(pv_p);
          wgmma_fence();
          issue_s(ks);
          wgmma_commit();
          // kRescaleEveryTile: on every tile, no branch; else where a row max of the warp moved
          if (Cfg::kRescaleBeforePv && (Cfg::kRescaleEveryTile || grew_pending)) {
            fence_operand(o);  // after the Q.K^T issue, not hoisted above it
            rescale_o_pending();
          }
          wait_full(bars + B::kVFull + 8 * vs, vph);
          wgmma_fence();  // ptxas wants one here too (C7519 otherwise)
          issue_pv(vs, pv_p);
          wgmma_commit();
          named_barrier_arrive(other_bar, 256);
          wgmma_wait<1>();
          fence_operand(s);
          release(bars + B::kKEmpty + 8 * ks);
          if (Cfg::kQFreeAfterLastQk && i == nt - 1) release(bars + B::kQEmpty);  // last read of Q
          if (masked) mask(n);
          float corr[2];
          const bool grew = softmax(corr);
          if constexpr (Cfg::kDoubleP) to_p(next_p);  // the buffer the P.V in flight does not read
          // The softmax must run while P.V is on the tensor cores: without these fences the compiler sinks all of its
          // (register-only) arithmetic below the wait, and the two never overlap.
          if constexpr (Cfg::kDoubleP) fence_operand(next_p);
          fence_operand(s);
          fence_operand(l);
          fence_operand(corr);
          auto finish_pv = [&]() {
            wgmma_wait<0>();
            fence_operand(o);
            fence_operand(pv_p);
            release(bars + B::kVEmpty + 8 * vs);
          };
          if constexpr (Cfg::kPvWaitAfterSoftmax) {
            // The P.V wait in both arms of a branch on the softmax's row sum: ptxas does not move it above the branch.
            // Issued right after the softmax, ptxas hoisted the wait above the whole softmax (that frees P's registers
            // for the softmax's temporaries: the SASS had WARPGROUP.DEPBAR.LE gsb0, 0x0 before the first MUFU.EX2),
            // and the softmax never overlapped the P.V. l >= 0 or NaN, so no thread's l is negative, the vote is
            // false in every warp and all warps of the warpgroup reach the same wait (wgmma.wait_group is .aligned: a
            // branch on the per-warp vote `grew` around the wait would break that). The branch is on a warp vote, not
            // on each thread's l, where registers allow (WsConfig::kPvWaitBranchUniform): a per-thread branch makes
            // ptxas treat the loop as divergent, so the stage and phase counters leave the uniform datapath.
            const bool never = Cfg::kPvWaitBranchUniform ? __any_sync(0xffffffffu, l[0] < 0.0f) : l[0] < 0.0f;
            if (!never) {
              finish_pv();
            } else {
              finish_pv();
              l[0] = 0.0f;
            }
          } else {
            finish_pv();
          }
          if constexpr (Cfg::kRescaleBeforePv) {
            grew_pending = grew;
            if constexpr (Cfg::kRescaleVotePerRow) rows_pending = rows_moved;
            corr_pending[0] = corr[0];
            corr_pending[1] = corr[1];
          } else if (grew) {
            rescale_o(corr);
          }
          if constexpr (!Cfg::kDoubleP) to_p(next_p);  // next_p is pv_p: after the wait
        };
        bool last_in_p1 = false;
        if constexpr (Cfg::kDoubleP) {  // unrolled by two so that the buffers swap at compile time
          int i = 1;
#pragma unroll 1
          for (; i + 1 < nt; i += 2) {
            step(true, i, p0, p1);
            step(true, i + 1, p1, p0);
          }
          last_in_p1 = i < nt;
          if (last_in_p1) step(true, i, p0, p1);
        } else if constexpr (Cfg::kFa3Step) {
          // The tiles that may need the mask first (tile n needs it from n_mask on: the first n_tiles - n_mask steps of
          // the last-to-first order; every step of the ascending order), then the others without the mask code.
          int split = a.keys_ascending ? nt : nt - n_mask;
          if (split > nt) split = nt;
          int i = 1;
#pragma unroll 1
          for (; i < split; ++i) step(true, i, p0, p0);
#pragma unroll 1
          for (; i < nt; ++i) step(false, i, p0, p0);
        } else {
#pragma unroll 1
          for (int i = 1; i < nt; ++i) step(true, i, p0, p0);
        }
        {  // P.V of the last tile
          const int vs = warp_uniform(static_cast<int>(vc % kStages));
          const std::uint32_t vph = (vc / kStages) & 1;
          ++vc;
          // No Q.K^T to overlap here: rescale before the turn, not while holding it.
          if (Cfg::kRescaleBeforePv && (Cfg::kRescaleEveryTile || grew_pending)) rescale_o_pending();
          fence_operand(o);
          wait_full(bars + B::kVFull + 8 * vs, vph);
          named_barrier_sync(my_bar, 256);
          fence_operand(o);
          if constexpr (Cfg::kDoubleP) {  // the last P into p0 (once per work tile): no wgmma under a branch
            if (last_in_p1) {
#pragma unroll
              for (int j = 0; j < kPRegs; ++j) p0[j] = p1[j];
            }
          }
          fence_operand(p0);
          wgmma_fence();
          issue_pv(vs, p0);
          wgmma_commit();
          named_barrier_arrive(other_bar, 256);
          wgmma_wait<0>();
          fence_operand(o);
          release(bars + B::kVEmpty + 8 * vs);
        }
        fixed = fix_flags[kq & 1] != 0;
      }

      // ---------------- epilogue (per consumer warpgroup) ----------------
      if constexpr (Varlen) sq.load(b, m0);  // the same values again (fewer registers live across the key loop)
      float inv[2];
      bool no_key[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        l[r] = detail::quad_sum(l[r]);
        no_key[r] = l[r] == 0.0f;  // NaN l is not "no key": it must propagate
        inv[r] = no_key[r] ? 0.0f : 1.0f / l[r];
      }
      if (a.lse != nullptr && lane % 4 == 0) {
        float* lse = Varlen ? a.lse + static_cast<std::int64_t>(h) * a.total_q + sq.q0()  // [num_heads, total_q]
                            : a.lse + (static_cast<std::int64_t>(b) * a.num_heads + h) * a.seqlen_q;
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int grow = m0 + row0 + 8 * r;
          if (grow < sq.seqlen_q())
            lse[grow] = no_key[r] ? -__builtin_huge_valf() : (m[r] * a.scale_log2 + __log2f(l[r])) * kLn2;
        }
      }
      if (n_tiles == 0) {
        // No key visible to the whole block: zeros, stored directly (the Q/O buffers may be in use by the producer).
        std::uint16_t* go = a.out + b * a.o_batch_stride + h * a.o_head_stride;
        if constexpr (Varlen) go += static_cast<std::int64_t>(sq.q0()) * a.o_row_stride;
#pragma unroll 1
        for (int e = wtid; e < 64 * (DV / 8); e += 128) {
          const int grow = m0 + cw * 64 + e / (DV / 8);
          if (grow < sq.seqlen_q())
            *reinterpret_cast<uint4*>(go + grow * a.o_row_stride + (e % (DV / 8)) * 8) = make_uint4(0, 0, 0, 0);
        }
        continue;
      }
      // O (bf16) into this warpgroup's 64 rows of the staging tile, 128-byte swizzled, then one TMA store per
      // 64-column box; the store clips rows >= seqlen_q. The previous tile's store must have read the buffer.
      // WsConfig::kOInV: O goes over the V stages, which the other warpgroups' last P.V may still read.
      if (wtid == 0 && store_pending) tma_store_wait_read();
      if constexpr (Cfg::kOInV)
        named_barrier_sync(detail::kPvDoneBar, 128 * kConsumers);
      else
        named_barrier_sync(detail::kEpiBar + cw, 128);
      // The staging addresses formed here, per work tile (volatile: not hoisted): formed once before the persistent
      // loop, they stay live across the key loop, and with 160-register consumers one is spilled.
      std::uint32_t o_tile;
      asm volatile("mov.b32 %0, %1;" : "=r"(o_tile) : "r"(o_base));
      std::uint32_t nonfinite = 0;  // detail::bf16x2_nonfinite_bits of the packed O, OR-ed
#pragma unroll
      for (int j = 0; j < DV / 8; ++j)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int row = 16 * warp + lane / 4 + 8 * r;  // within the warpgroup's 64 rows
          const int chunk = j % 8;
          const std::uint32_t addr = o_tile + (j / 8) * kMBox + row * 128 + ((chunk ^ (row % 8)) * 16) + (lane % 4) * 4;
          const std::uint32_t v = pack_bf16x2(o[4 * j + 2 * r] * inv[r], o[4 * j + 2 * r + 1] * inv[r]);
          nonfinite |= detail::bf16x2_nonfinite_bits(v);
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
        }
      // First pass (the diagonal V tiles not scanned): an Inf/NaN in V at a key some row must not see made that row NaN
      // (0 * Inf in P.V). Any non-finite output sends the CTA through the careful pass, which computes every work tile
      // again and stores it over this one (rows that see an Inf/NaN key are non-finite in both passes).
      // Non-causal calls have no diagonal tiles: their first pass is already careful.
      if (a.causal && __any_sync(0xffffffffu, (nonfinite & 0x80008000u) != 0) && lane == 0) *redo = 1;
      if (fixed) {
        // Cold path: non-finite V values of the diagonal tiles that a row does see, added back (bf16 result).
        named_barrier_sync(detail::kEpiBar + cw, 128);
        const int first_diag = (m0 + sq.causal_offset() + 1 > 0 ? m0 + sq.causal_offset() + 1 : 0) / BN;
        const int key_lo = first_diag * BN;
        const int key_hi = sq.seqlen_k() < n_tiles * BN ? sq.seqlen_k() : n_tiles * BN;
        const std::uint16_t* gv = a.v + b * a.v_batch_stride + hk * a.v_head_stride;
        if constexpr (Varlen) gv += static_cast<std::int64_t>(sq.k0()) * a.v_row_stride;
#pragma unroll 1
        for (int e = wtid; e < 64 * DV; e += 128) {
          const int row = e / DV, c = e % DV;
          const int grow = m0 + cw * 64 + row;
          if (grow >= sq.seqlen_q()) continue;
          int last = grow + sq.causal_offset();
          if (last > key_hi - 1) last = key_hi - 1;
          float add = 0.0f;
          bool any = false;
#pragma unroll 1
          for (int key = key_lo; key <= last; ++key) {
            const std::uint16_t bits = gv[static_cast<std::int64_t>(key) * a.v_row_stride + c];
            if (detail::bf16_nonfinite(bits)) {
              add += __uint_as_float(static_cast<std::uint32_t>(bits) << 16);
              any = true;
            }
          }
          if (any) {
            const std::uint32_t addr =
                o_base + (c / 64) * kMBox + row * 128 + ((((c % 64) / 8) ^ (row % 8)) * 16) + (c % 8) * 2;
            unsigned short cur;
            asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(cur) : "r"(addr));
            const float val = __uint_as_float(static_cast<std::uint32_t>(cur) << 16) + add;
            const std::uint32_t u = __float_as_uint(val);
            const unsigned short nb = static_cast<unsigned short>(
                (u & 0x7FFFFFFFu) > 0x7F800000u ? ((u >> 16) | 0x40u) : ((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16));
            asm volatile("st.shared.u16 [%0], %1;\n" ::"r"(addr), "h"(nb) : "memory");
          }
        }
      }
      fence_proxy_async_shared();
      named_barrier_sync(detail::kEpiBar + cw, 128);
      // Varlen: the TMA store clips only at total_q, so a warpgroup whose rows reach past its sequence stores its
      // valid rows itself (16-byte chunks from the swizzled staging tile; the rows past the sequence belong to the next
      // one and are not written).
      const int wg_rows = Varlen ? sq.seqlen_q() - (m0 + cw * 64) : 64;
      if (!Varlen || wg_rows >= 64) {
        if (wtid == 0) {
#pragma unroll
          for (int bx = 0; bx < Cfg::kVBoxes; ++bx)
            tma_store_4d(&a.tm_o, o_base + bx * kMBox, 64 * bx, sq.q0() + m0 + cw * 64, h, Varlen ? 0 : b);
          tma_store_commit();
          store_pending = true;
        }
      } else {
        std::uint16_t* go =
            a.out + h * a.o_head_stride + static_cast<std::int64_t>(sq.q0() + m0 + cw * 64) * a.o_row_stride;
#pragma unroll 1
        for (int e = wtid; e < wg_rows * (DV / 8); e += 128) {
          const int row = e / (DV / 8), c = e % (DV / 8);  // row within the warpgroup's 64, 16-byte chunk
          const std::uint32_t addr = o_base + (c / 8) * kMBox + row * 128 + (((c % 8) ^ (row % 8)) * 16);
          const uint4 w = ld_shared_16(addr);
          *reinterpret_cast<uint4*>(go + static_cast<std::int64_t>(row) * a.o_row_stride + c * 8) = w;
        }
      }
      if constexpr (!Cfg::kOSeparate) {
        // O was staged in the Q buffer (or over the V stages): release it once the store has read it.
        if (wtid == 0) {
          tma_store_wait_read();
          store_pending = false;
        }
        named_barrier_sync(detail::kEpiBar + cw, 128);
        if (lane == 0) mbarrier_arrive(bars + (Cfg::kOInV ? B::kOEmpty : B::kQEmpty));
      }
      ++kq;
      if constexpr (!Cfg::kPersistent) break;
    }
    if (pass == 0) {
      named_barrier_sync_unaligned(detail::kPassBar, Cfg::kThreads);
      if (*redo == 0) break;
      // The careful pass stores the same tiles again: the first pass's stores land first.
      if (wtid == 0 && store_pending) tma_store_wait();
    }
  }
  if (wtid == 0 && store_pending) tma_store_wait_read();
#endif  // ZYFA_SM90A_PASS
}

}  // namespace zyfa::bf16::sm90ws

#endif  // ZYFA_PLATFORM_CUDA
