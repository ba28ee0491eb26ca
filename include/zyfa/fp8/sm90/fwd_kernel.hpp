// zyfa/fp8/sm90/fwd_kernel.hpp -- the sm_90a FP8 (e4m3fn) forward attention kernel with zyfa's numerics: Lean P
// codes (or the exp2 ablation), a power-of-two scale per 64-key block, the output divided by the sum of the rounded P.
//
// Algorithm: host/fp8_spec.hpp, recipes `zyfa` (PMode::lean_p) and `zyfa_exact` (PMode::exp2), STEP 2 per 64-key
// block in increasing key order. Pipeline: the BF16 kernel's (bf16/sm90/fwd_kernel_ws.hpp, FlashAttention-3's design,
// arXiv:2407.08608): a producer warpgroup, two consumer warpgroups of 64 query rows in ping-pong, the softmax of one
// key tile overlapped with the P.V of the previous one, persistent grid.
//
// What differs from the BF16 kernel:
// * FP8 wgmma (m64nNk32 e4m3, PTX §9.7.15.5.2) takes both operands K-major, so P.V needs V^T (keys contiguous):
//   warp 0 of the producer loads V tiles as they are stored ([key][d], TMA, 128B swizzle) into a staging ring and
//   warps 1-3 transpose them with byte permutes into the V^T ring (64B swizzle, 64 keys per row). Within every 16
//   keys, V^T position k holds key sigma(k) = 2(k/4) + (k%2) + 8((k%4)/2): then the A fragment of P (register j,
//   byte b: row 16w + l/4 + 8(j%2), k = 16(j/2) + 4(l%4) + b) is four accumulator registers of S packed in order,
//   without shuffles (the permutation is on the keys, which a sum over keys does not see).
// * Rows 128..135 of each V^T stage are constant: row 128 all 1.0 (e4m3fn 0x38), the rest 0. The P.V wgmma is
//   m64n136k32 and its column 128 is the block's row sum l_blk of the ROUNDED P, formed by the same tensor-core
//   accumulation as every output column (V = 1 gives exactly 1.0).
// * Each 64-key block's P.V goes to a fresh accumulator pv (FP8 wgmma keeps about 13 mantissa bits of the
//   accumulator it adds into, sm90-facts) and is folded in fp32 as the specification does:
//   acc = fma(acc, alpha, pv * s_blk), s_blk = 2^-(kb + 8) exactly. acc is kept scaled by 2^(kb + 8) of the last
//   block (at most 2^64), which makes the fold one FMA per element, A = fma(A, beta, pv), with the same bits up to
//   that power of two. The fold of block n-1 runs after block n's softmax, so the P.V of block n-1 overlaps it.
// * Lean P per element (bit-exact with the specification given the same fp32 S), the specification's fused form
//   (|m_new| < 2^16, every row of the warp): y / 128 = fma.sat(S, c / 16, (8 kb + 121 - 8 m_new) / 128) (y = fma(S,
//   8c, b) scaled by 2^-7; the saturation is the clamp at 0), then fma(y / 128, 128, 1.5 * 2^23) leaves
//   round-half-even(y) in the low mantissa bits: 2 FP32 operations per element, as the exp2 twin's FMA and ex2.
//   Byte permutes pack four codes into one A register. Rows beyond 2^16 take the two-step form (4 operations).
//   A NaN logit (NaN in q or k) would saturate to code 0: the block max propagates NaN instead
//   (max.NaN) and marks the row, whose output and LSE become NaN as the specification's NaN code makes them.
// * NaN in V at keys a row must not see: the transposers replace NaN codes of tiles that cross the causal diagonal
//   by 0 and raise a flag; the epilogue then makes the output NaN where a row does see such a key (0 * NaN would
//   otherwise poison rows that do not see it; the specification's acc is NaN for a visible NaN whatever P is).
// Numerics that are a tolerance, not bits: S (wgmma accumulation order), pv and l_blk (wgmma accumulation),
// alpha and e_blk (ex2.approx instead of exp2f), log2f, exp2 variant's P (ex2.approx before the e4m3 rounding), the
// corrected LSE's per-block term (formed as fma(l_blk, f, e_blk - P_top f) rather than (l_blk - P_top) f + e_blk;
// P_top from the two-step y of m_blk).
#pragma once
#include <cstdint>

#include "../../arch/sm90.hpp"
#include "../../arch/sm90_mbarrier.hpp"
#include "../../arch/sm90_tma.hpp"
#include "../../arch/sm90_wgmma.hpp"
#include "../../arch/sm90_work_order.hpp"
#include "../../numeric/constants.hpp"
#include "../../numeric/lean_p.hpp"
#include "../../platform/platform.hpp"
#include "config.hpp"

#if ZYFA_PLATFORM_CUDA

namespace zyfa::fp8::sm90 {

/// Kernel arguments (one __grid_constant__ copy per launch). Tensor maps of the BSHD e4m3fn tensors as 4-D
/// {head_dim, seqlen, heads, batch} with 128-byte boxes: q of 128 rows, k and v of 64 rows; o (bf16) of 64 rows
/// and 64 columns. `v` and its element strides: the NaN fix-up reads V from global memory; `out`: blocks that see
/// no key write their zeros directly. lse: fp32 [batch, num_heads, seqlen_q], natural log, or nullptr.
struct Fp8Args {
  CUtensorMap tm_q, tm_k, tm_v, tm_o;
  const std::uint8_t* v;
  std::uint16_t* out;
  float* lse;
  std::int64_t v_batch_stride, v_row_stride, v_head_stride;
  std::int64_t o_batch_stride, o_row_stride, o_head_stride;
  std::int64_t num_blocks;  ///< work tiles: num_m_blocks * batch * num_heads
  /// Causal: > 0 = the balanced pairs of m blocks (arch/sm90_work_order.hpp), this many; 0 = tile_coord's order.
  int num_pairs;
  arch::sm90::PairTail pair_tail;     ///< the pairs order's split tail (causal_pair_tail)
  arch::sm90::PairDivisors pair_div;  ///< its divisions (causal_pair_divisors)
  std::int64_t num_steps;             ///< the CTAs' loop bound (arch/sm90_work_order.hpp, causal_work_order)
  int batch, seqlen_q, seqlen_k, num_heads, group_size;
  int num_m_blocks;   ///< ceil(seqlen_q / 128)
  int causal;         ///< 0 or 1
  int causal_offset;  ///< seqlen_k - seqlen_q: row i sees key j iff j <= i + causal_offset
  float scale_log2;   ///< c = AttentionParams::scale_softmax_log2 (descales folded in)
  float v_descale;
  float lse_rest;  ///< zyfa's corrected LSE: lean_p_lse_rest(kBlockMaxCode) (numeric/lean_p.hpp)
};

/// Lean P constants of the specification (numeric/lean_p.hpp): the block max code, the fused form's bounds and the top
/// exponent.
using ::zyfa::kBlockMaxCode;
using ::zyfa::kLeanPFusedMaxLogit;
using ::zyfa::kLeanPFusedMinScale;
using ::zyfa::kTopExponent;

/// 1 in the device pass that compiled the kernel body (sm_90a), else 0 (read by the host before dispatching).
static __device__ int g_fp8_body_compiled = ZYFA_SM90A_PASS;

namespace detail {

struct Bars {
  static constexpr int kQFull = 0, kQEmpty = 8, kKFull = 16, kKEmpty = 48, kVsFull = 80, kVsEmpty = 112, kVtFull = 144,
                       kVtEmpty = 176, kFlag = 208;  // kFlag: 2 ints
};
constexpr int kSchedBar = 1, kEpiBar = 3;  // named barriers: ping-pong turns (1, 2), epilogue per warpgroup (3, 4)
constexpr int kConsumerWarps = 8;

#if ZYFA_SM90A_PASS
/// max that propagates NaN (max.NaN.f32, sm_80+): a NaN logit marks its row (the Lean P codes cannot carry it).
__device__ __forceinline__ float max_nan(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;\n" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
/// 2^d for d in [-126, 127] (exact; a normal fp32 power of two).
__device__ __forceinline__ float pow2i(int d) { return __int_as_float((127 + d) << 23); }
/// The largest block exponent the kernel's scaled accumulator takes (fwd_kernel: A = acc * 2^e). acc <= 504 per key
/// (code 121 at the row max times 2^-8 times |v| <= 448), so |A| <= 504 * seqlen_k * 2^64 < 2^128 for any seqlen_k
/// below 2^46; blocks with a larger exponent (more than 56 binades below the row max) leave the scale where it is.
constexpr int kAccExpMax = 64;
/// Block exponents e > kSubnormalScaleExp have s_blk = 2^-e below fp32's normal range. The specification's subnormal
/// scales (kb 119..141) belong to blocks whose contribution pv * s_blk < 2^23.6 * 2^-127 cannot change acc or l,
/// which the block that sets the running max makes >= 2^-8 * 256 * ... (l >= 1): such blocks add 0.
constexpr int kSubnormalScaleExp = 126;
/// Value of an e4m3fn code in [0, 126]: its bits shifted to fp32's exponent/mantissa position are the value times
/// 2^-120, subnormal codes included (fp32 subnormals are kept: no flush to zero).
__device__ __forceinline__ float e4m3_value(int code) { return __int_as_float(code << 20) * 0x1p120f; }
/// Four bytes (the low byte of each word) -> one word, w0 in byte 0.
__device__ __forceinline__ std::uint32_t pack4(std::uint32_t w0, std::uint32_t w1, std::uint32_t w2, std::uint32_t w3) {
  return __byte_perm(__byte_perm(w0, w1, 0x0040), __byte_perm(w2, w3, 0x0040), 0x5410);
}
#endif

using TileCoord = arch::sm90::WorkTile;
/// Work tile t -> (m block, batch, head): causal, the heaviest m blocks first over all heads; non-causal, the m
/// blocks of one (batch, head) consecutive (as the BF16 kernel).
__device__ __forceinline__ TileCoord tile_coord(const Fp8Args& a, std::int64_t t) {
  const int bh_count = a.batch * a.num_heads;
  int m_block, bh;
  if (a.causal) {
    m_block = a.num_m_blocks - 1 - static_cast<int>(t / bh_count);
    bh = static_cast<int>(t % bh_count);
  } else {
    bh = static_cast<int>(t / a.num_m_blocks);
    m_block = static_cast<int>(t % a.num_m_blocks);
  }
  return {m_block, bh / a.num_heads, bh % a.num_heads};
}

/// The work tile of this CTA's loop step j: tile blockIdx.x + j * gridDim.x of tile_coord, or the pairs order.
__device__ __forceinline__ arch::sm90::WorkStep tile_at(const Fp8Args& a, std::int64_t t, TileCoord* tc) {
  if (a.num_pairs > 0)
    return arch::sm90::causal_pair_step(t, a.num_pairs, a.pair_tail, a.pair_div, a.num_m_blocks, a.batch * a.num_heads,
                                        tc);
  *tc = tile_coord(a, t);
  return arch::sm90::WorkStep::tile;
}

/// Key tiles of 64 visible to query rows [m0, m0 + 128).
__device__ __forceinline__ int visible_key_tiles(const Fp8Args& a, int m0) {
  int n_end = (a.seqlen_k + 63) / 64;
  if (a.causal) {
    const std::int64_t last_key = static_cast<std::int64_t>(m0) + 127 + a.causal_offset;
    if (last_key < 0) return 0;
    const std::int64_t n_causal = last_key / 64 + 1;
    if (n_causal < n_end) n_end = static_cast<int>(n_causal);
  }
  return n_end;
}

}  // namespace detail

/// The kernel (persistent): min(num_blocks, SM count) CTAs, Cfg::kThreads threads, Cfg::kSmemBytes of dynamic shared
/// memory; only on sm_90a devices and only when g_fp8_body_compiled (launch.hpp).
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1) fwd_kernel(const __grid_constant__ Fp8Args a) {
#if ZYFA_SM90A_PASS
  using namespace arch::sm90;
  using B = detail::Bars;
  constexpr int DQK = Cfg::kDQK, DV = Cfg::kDV, kStages = Cfg::kStages, kPvN = Cfg::kPvN;
  constexpr int kSRegs = 32, kPvRegs = kPvN / 2;
  constexpr bool kLean = Cfg::kMode == PMode::lean_p;

  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t raw = smem_addr(smem_raw);
  const std::uint32_t base = (raw + 1023u) & ~1023u;
  unsigned char* const base_ptr = smem_raw + (base - raw);
  const std::uint32_t sQ = base + Cfg::kQOff, sK = base + Cfg::kKOff, sVs = base + Cfg::kVsOff,
                      sVt = base + Cfg::kVtOff, sO = base + Cfg::kOOff, bars = base + Cfg::kBarOff;
  volatile int* const fix_flags = reinterpret_cast<volatile int*>(base_ptr + Cfg::kBarOff + B::kFlag);

  const int tid = static_cast<int>(threadIdx.x);
  const int warpgroup = tid / 128;

  if (tid == 0) {
    mbarrier_init(bars + B::kQFull, 1);
    mbarrier_init(bars + B::kQEmpty, detail::kConsumerWarps);
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(bars + B::kKFull + 8 * s, 1);
      mbarrier_init(bars + B::kKEmpty + 8 * s, detail::kConsumerWarps);
      mbarrier_init(bars + B::kVsFull + 8 * s, 1);
      mbarrier_init(bars + B::kVsEmpty + 8 * s, Cfg::kTransposeWarps);
      mbarrier_init(bars + B::kVtFull + 8 * s, Cfg::kTransposeWarps);
      mbarrier_init(bars + B::kVtEmpty + 8 * s, detail::kConsumerWarps);
    }
    fix_flags[0] = 0;
    fix_flags[1] = 0;
    mbarrier_init_fence();
  }
  // The constant rows DV .. DV+7 of every V^T stage: row DV = 1.0 (0x38) in every key, the others 0.
  for (int e = tid; e < kStages * 8 * 16; e += Cfg::kThreads) {
    const int s = e / 128, row = DV + (e % 128) / 16, word = e % 16;
    *reinterpret_cast<std::uint32_t*>(base_ptr + Cfg::kVtOff + s * Cfg::kVtBytes + row * 64 + word * 4) =
        row == DV ? 0x38383838u : 0u;
  }
  fence_proxy_async_shared();
  __syncthreads();

  if (warpgroup == 0) {
    setmaxnreg_dec<Cfg::kProducerRegs>();
    const int warp = tid / 32, lane = tid % 32;
    if (warp == 0) {
      // ---------------- TMA issue (warp 0, lane 0) ----------------
      if (lane != 0) return;
      tma_prefetch(&a.tm_q);
      tma_prefetch(&a.tm_k);
      tma_prefetch(&a.tm_v);
      tma_prefetch(&a.tm_o);
      int kq = 0;
      std::uint32_t kc = 0, vc = 0;
#pragma unroll 1
      for (std::int64_t t = blockIdx.x; t < a.num_steps; t += gridDim.x) {
        detail::TileCoord tc;
        if (detail::tile_at(a, t, &tc) == arch::sm90::WorkStep::skip) continue;
        const int m0 = tc.m_block * 128, b = tc.b, h = tc.h, hk = h / a.group_size;
        const int n_tiles = detail::visible_key_tiles(a, m0);
        if (n_tiles == 0) continue;
        mbarrier_wait(bars + B::kQEmpty, (kq & 1) ^ 1);
        fix_flags[kq & 1] = 0;
        mbarrier_arrive_expect_tx(bars + B::kQFull, Cfg::kQBytes);
#pragma unroll
        for (int bx = 0; bx < Cfg::kQBoxes; ++bx)
          tma_load_4d(sQ + bx * 128 * 128, &a.tm_q, bars + B::kQFull, 128 * bx, m0, h, b);
#pragma unroll 1
        for (int n = 0; n < n_tiles; ++n) {
          {
            const int s = static_cast<int>(kc % kStages);
            const std::uint32_t ph = (kc / kStages) & 1;
            ++kc;
            mbarrier_wait(bars + B::kKEmpty + 8 * s, ph ^ 1);
            mbarrier_arrive_expect_tx(bars + B::kKFull + 8 * s, Cfg::kKBytes);
#pragma unroll
            for (int bx = 0; bx < Cfg::kQBoxes; ++bx)
              tma_load_4d(sK + s * Cfg::kKBytes + bx * 64 * 128, &a.tm_k, bars + B::kKFull + 8 * s, 128 * bx, n * 64,
                          hk, b);
          }
          {
            const int s = static_cast<int>(vc % kStages);
            const std::uint32_t ph = (vc / kStages) & 1;
            ++vc;
            mbarrier_wait(bars + B::kVsEmpty + 8 * s, ph ^ 1);
            mbarrier_arrive_expect_tx(bars + B::kVsFull + 8 * s, Cfg::kVsBytes);
            tma_load_4d(sVs + s * Cfg::kVsBytes, &a.tm_v, bars + B::kVsFull + 8 * s, 0, n * 64, hk, b);
          }
        }
        ++kq;
      }
      return;
    }
    // ---------------- V transpose (warps 1-3) ----------------
    int kq = 0;
    std::uint32_t vc = 0;
#pragma unroll 1
    for (std::int64_t t = blockIdx.x; t < a.num_steps; t += gridDim.x) {
      detail::TileCoord tc;
      if (detail::tile_at(a, t, &tc) == arch::sm90::WorkStep::skip) continue;
      const int m0 = tc.m_block * 128;
      const int n_tiles = detail::visible_key_tiles(a, m0);
      if (n_tiles == 0) continue;
      const int first_hidden_key = a.causal ? m0 + a.causal_offset + 1 : 0x7FFFFFFF;  // first key row m0 must not see
#pragma unroll 1
      for (int n = 0; n < n_tiles; ++n) {
        const int s = static_cast<int>(vc % kStages);
        const std::uint32_t ph = (vc / kStages) & 1;
        ++vc;
        const bool diag = n * 64 + 63 >= first_hidden_key;
        mbarrier_wait(bars + B::kVsFull + 8 * s, ph);
        mbarrier_wait(bars + B::kVtEmpty + 8 * s, ph ^ 1);
        const std::uint32_t src = sVs + s * Cfg::kVsBytes, dst = sVt + s * Cfg::kVtBytes;
        bool bad = false;
        // Work item (it, ws), 4 per tile over the transposer warps; lane (c8 = lane % 16, gl = lane / 16): 16-key
        // group g = 2 it + gl, head-dim bytes [8 c8 + 4 w, + 4) with w = ws ^ rw. A lane loads that word of its 16
        // keys, transposes each key quad {2q, 2q+1, 2q+8, 2q+9} (sigma order, file comment) into 4 words, and stores
        // V^T rows 8 c8 + 4 w + b at key positions [16 g, 16 g + 16), 8 bytes per store. Rotations rb = c8 % 4 of b
        // (folded into the byte-permute selectors) and rw = (c8 / 4) % 2 of w spread a warp's stores over the banks
        // (at most 2-way conflicts); the loads of a warp conflict at most 2-way.
        const int c8 = lane % 16, gl = lane / 16, rb = c8 % 4, rw = (c8 / 4) % 2;
        const std::uint32_t sel_lo =
            static_cast<std::uint32_t>((0 ^ rb) | ((4 + (0 ^ rb)) << 4) | ((1 ^ rb) << 8) | ((4 + (1 ^ rb)) << 12));
        const std::uint32_t sel_hi =
            static_cast<std::uint32_t>((2 ^ rb) | ((4 + (2 ^ rb)) << 4) | ((3 ^ rb) << 8) | ((4 + (3 ^ rb)) << 12));
#pragma unroll 1
        for (int item = warp - 1; item < 4; item += Cfg::kTransposeWarps) {
          const int g = 2 * (item / 2) + gl, w = (item % 2) ^ rw;
          const std::uint32_t row_base = src + 16 * g * 128 + 8 * (c8 % 2) + 4 * w;
#pragma unroll
          for (int hq = 0; hq < 2; ++hq) {  // key quads 2hq, 2hq+1: keys 4hq .. 4hq+3 and 4hq+8 .. 4hq+11
            std::uint32_t in[8];
#pragma unroll
            for (int j = 0; j < 8; ++j) {
              const int kk = 4 * hq + (j % 4) + 8 * (j / 4);
              const std::uint32_t addr = row_base + kk * 128 + ((((c8 / 2) ^ (kk % 8))) * 16);
              asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(in[j]) : "r"(addr));
            }
            if (diag) {
#pragma unroll
              for (int j = 0; j < 8; ++j) {
                const std::uint32_t nan = __vcmpeq4(in[j] & 0x7F7F7F7Fu, 0x7F7F7F7Fu);  // 0xFF per NaN byte
                bad |= nan != 0;
                in[j] &= ~nan;
              }
            }
            std::uint32_t t[2][4];  // t[quad][k]: the 4 keys of the quad at head-dim byte 4w + (k ^ rb)
#pragma unroll
            for (int qh = 0; qh < 2; ++qh) {
              // quad 2hq + qh: keys 2(2hq + qh) + {0, 1, 8, 9} = in[2qh], in[2qh + 1], in[4 + 2qh], in[5 + 2qh]
              const std::uint32_t a0 = in[2 * qh], a1 = in[2 * qh + 1], a2 = in[4 + 2 * qh], a3 = in[5 + 2 * qh];
              const std::uint32_t t0 = __byte_perm(a0, a1, sel_lo), t1 = __byte_perm(a2, a3, sel_lo);
              const std::uint32_t t2 = __byte_perm(a0, a1, sel_hi), t3 = __byte_perm(a2, a3, sel_hi);
              t[qh][0] = __byte_perm(t0, t1, 0x5410);
              t[qh][1] = __byte_perm(t0, t1, 0x7632);
              t[qh][2] = __byte_perm(t2, t3, 0x5410);
              t[qh][3] = __byte_perm(t2, t3, 0x7632);
            }
#pragma unroll
            for (int k = 0; k < 4; ++k) {
              const int bq = k ^ rb;  // V^T row 8 c8 + 4 w + bq, key positions 16 g + 8 hq .. + 7
              const std::uint32_t addr = dst + c8 * 512 + (4 * w + bq) * 64 + ((g ^ (2 * w + (bq >> 1))) * 16) + 8 * hq;
              asm volatile("st.shared.v2.u32 [%0], {%1, %2};\n" ::"r"(addr), "r"(t[0][k]), "r"(t[1][k]) : "memory");
            }
          }
        }
        fence_proxy_async_shared();
        if (__any_sync(0xffffffffu, bad) && lane == 0) {
          fix_flags[kq & 1] = 1;
          __threadfence_block();
        }
        __syncwarp();
        if (lane == 0) {
          mbarrier_arrive(bars + B::kVsEmpty + 8 * s);
          mbarrier_arrive(bars + B::kVtFull + 8 * s);
        }
      }
      ++kq;
    }
    return;
  }

  // ---------------- consumers ----------------
  setmaxnreg_inc<Cfg::kConsumerRegs>();
  const int cw = warpgroup - 1;
  const int wtid = tid % 128, warp = wtid / 32, lane = tid % 32;
  const int row0 = cw * 64 + 16 * warp + lane / 4;  // this thread's rows in the work tile: row0, row0 + 8
  const int my_bar = detail::kSchedBar + cw, other_bar = detail::kSchedBar + (1 - cw);
  const std::uint32_t q_base = sQ + cw * 64 * 128;  // this warpgroup's 64 rows inside each 128-row Q box
  const std::uint32_t o_base = sO + cw * 64 * 128;
  const float c = a.scale_log2;
  if (Cfg::kPingPong && cw == 1) named_barrier_arrive(detail::kSchedBar + 0, 256);  // consumer 0 issues first
  auto my_turn = [&]() {
    if constexpr (Cfg::kPingPong) named_barrier_sync(my_bar, 256);
  };
  auto other_turn = [&]() {
    if constexpr (Cfg::kPingPong) named_barrier_arrive(other_bar, 256);
  };

  int kq = 0;
  std::uint32_t kc = 0, vc = 0;
  // Thread wtid == 0 waits for its previous O store to have read the staging tile before the next one is written:
  // unconditionally (with no store in flight the wait returns at once), so no flag lives across the key loop.
#pragma unroll 1
  for (std::int64_t t = blockIdx.x; t < a.num_steps; t += gridDim.x) {
    detail::TileCoord tc;
    if (detail::tile_at(a, t, &tc) == arch::sm90::WorkStep::skip) continue;
    const int m0 = tc.m_block * 128, b = tc.b, h = tc.h, hk = h / a.group_size;
    const int n_tiles = detail::visible_key_tiles(a, m0);

    // acc holds the specification's accumulator scaled by 2^e_acc (row r): A = acc * 2^e_acc, with e_acc the
    // block exponent kb + 8 of the last folded block whose exponent is at most kAccExpMax. Then the fold of such a
    // block of exponent e is ONE fma per element, A' = fma(A, beta, pv), beta = alpha * 2^(e - e_acc), bit for bit 2^e
    // times the specification's fma(acc, alpha, pv * 2^-e) (powers of two commute with rounding in the normal range,
    // which the cap keeps: |A| <= 504 seqlen_k 2^64 < 2^128). The row sum l (column DV) and the corrected LSE's l2
    // carry the same factor: out = A / l needs no unscaling; the LSE takes the log of l * 2^-e_acc.
    float acc[kPvRegs];
#pragma unroll
    for (int i = 0; i < kPvRegs; ++i) acc[i] = 0.0f;
    int e_acc[2] = {kTopExponent, kTopExponent};  // the exponent of the last block_step (its fold is pending)
    float m[2] = {-__builtin_huge_valf(), -__builtin_huge_valf()};
    float l2[2] = {0.0f, 0.0f};        // Lean P: the corrected LSE's row sum (host/fp8_spec.hpp END)
    bool nan_row[2] = {false, false};  // a NaN logit in the row: out and lse NaN
    bool fixed = false;

    if (n_tiles > 0) {
      float s[kSRegs];
      float pv[kPvRegs];
      std::uint32_t p[8];
      // The previous block's fold factors (row r): beta (alpha times the change of acc's scale), s_blk, and for the
      // corrected LSE P_top and e_blk.
      float f_beta[2] = {1.0f, 1.0f}, f_g[2] = {1.0f, 1.0f}, f_lse_c[2] = {0.0f, 0.0f};

      // Descriptors: computed once; a k32 step or a stage moves the start address field (bytes / 16) by a constant
      // (CUTLASS advances GMMA descriptors the same way).
      const std::uint64_t q_desc = smem_desc_sw128(q_base, 16, 1024), k_desc = smem_desc_sw128(sK, 16, 1024);
      const std::uint64_t vt_desc = smem_desc_sw64(sVt, 512);
      auto issue_s = [&](int stage) {
        const std::uint64_t kd = k_desc + static_cast<std::uint64_t>(stage * (Cfg::kKBytes / 16));
#pragma unroll
        for (int kb = 0; kb < DQK / 32; ++kb) {
          const int q_off = ((kb / 4) * (128 * 128) + (kb % 4) * 32) / 16,
                    k_off = ((kb / 4) * (64 * 128) + (kb % 4) * 32) / 16;
          WgmmaSSFp8<64>::mma(s, q_desc + q_off, kd + k_off, kb > 0 ? 1 : 0);
        }
      };
      auto issue_pv = [&](int stage) {
        const std::uint64_t vd = vt_desc + static_cast<std::uint64_t>(stage * (Cfg::kVtBytes / 16));
#pragma unroll
        for (int kb = 0; kb < 2; ++kb) {
          const std::uint32_t frag[4] = {p[4 * kb], p[4 * kb + 1], p[4 * kb + 2], p[4 * kb + 3]};
          WgmmaRSFp8<kPvN>::mma(pv, frag, vd + 2 * kb, kb > 0 ? 1 : 0);
        }
      };
      // Keys past the row's last visible key (causal) or past seqlen_k: S = -inf.
      auto mask = [&](int n) {
        const int n0 = n * 64;
        const bool tail = n0 + 64 > a.seqlen_k;
        const bool diag = a.causal && (n0 + 63 > m0 + cw * 64 + a.causal_offset);
        if (!(tail || diag)) return;
        int limit[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int row = m0 + row0 + 8 * r;
          const int lim = a.causal ? row + a.causal_offset : 0x7FFFFFFF;
          limit[r] = (lim < a.seqlen_k - 1 ? lim : a.seqlen_k - 1) - n0;
        }
        const int c0 = 2 * (lane % 4);
#pragma unroll
        for (int i = 0; i < kSRegs; ++i)
          if (c0 + 8 * (i / 4) + (i % 2) > limit[(i / 2) % 2]) s[i] = -__builtin_huge_valf();
      };
      // One zyfa block step on S (host/fp8_spec.hpp STEP 2): the block max, m_new, alpha, kb, s_blk; s[i] becomes
      // the e4m3fn code of P in its low byte. Records the fold factors of this block in n_*.
      float n_beta[2], n_g[2], n_lse_c[2];
      auto block_step = [&]() {
        // Row max as a tree (depth 4 for the 16 values of a row, not a chain of 16 dependent max).
        float mx[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          float t[8];
#pragma unroll
          for (int j = 0; j < 8; ++j) {  // row r's registers: i with (i / 2) % 2 == r, i.e. 4 (j / 2) + 2 r + j % 2
            const int i0 = 4 * j + 2 * r;
            t[j] = detail::max_nan(s[i0], s[i0 + 1]);
          }
#pragma unroll
          for (int w = 4; w >= 1; w /= 2)
#pragma unroll
            for (int j = 0; j < w; ++j) t[j] = detail::max_nan(t[j], t[j + w]);
          mx[r] = t[0];
        }
#pragma unroll
        for (int r = 0; r < 2; ++r) mx[r] = detail::max_nan(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
#pragma unroll
        for (int r = 0; r < 2; ++r) mx[r] = detail::max_nan(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        float mu[2], kk[2], bf[2], alpha[2], dm[2], kbf[2];
        bool fused[2];
        // c / 16 is exact for c >= kLeanPFusedMinScale (below, the specification takes the two-step form); formed
        // per block, not held across the loop (registers).
        const float c16 = c * 0.0625f;
        const bool c_fusable = c >= kLeanPFusedMinScale;
        // First what the codes need (m_new, kb, the fused form's constant), on the FP32 pipe only; the fold's and the
        // corrected LSE's factors (exponentials, the block's top code) after the codes, off their critical path.
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          // max of fl(S * c) = fl(max S * c): rounding is monotonic and c > 0. A NaN logit marks the row (its
          // output and LSE are NaN, as the specification's code 0x7F makes them); the max then ignores it.
          nan_row[r] |= mx[r] != mx[r];
          const float m_blk = nan_row[r] ? -__builtin_huge_valf() : __fmul_rn(mx[r], c);
          const float m_new = fmaxf(m[r], m_blk);
          const bool none = m_new == -__builtin_huge_valf();  // the row has seen no key yet: codes 0, nothing folds
          const float neg_dmax = m_new - m_blk;               // -(m_blk - m_new) >= 0, +inf for a masked block
          // kb = (int)min(-dmax, 255) (0 for NaN: fmaxf maps NaN to 0) as floor(x) = fl_down(x + 1.5 * 2^23) - 1.5 *
          // 2^23, exact for x in [0, 255] (the sum stays in [2^23, 2^24), where the spacing is 1), and kb's integer is
          // the sum's bits minus those of 1.5 * 2^23: no float-int conversions on the quarter-rate unit.
          const float big = __fadd_rd(fminf(fmaxf(neg_dmax, 0.0f), 255.0f), 12582912.0f);
          kbf[r] = __fsub_rn(big, 12582912.0f);
          mu[r] = none ? 0.0f : m_new;
          // The specification's fused form (one FMA from S) below |m_new| < 2^16; the two-step form otherwise.
          fused[r] = c_fusable && !none && fabsf(m_new) < kLeanPFusedMaxLogit;
          alpha[r] = none ? 1.0f : arch::sm90::exp2(m[r] - m_new);
          dm[r] = __fsub_rn(m_blk, mu[r]);  // the block max's logit relative to m_new (the corrected LSE's term)
          m[r] = m_new;
          if constexpr (kLean) {
            kk[r] = fmaf(kbf[r], 8.0f, static_cast<float>(kBlockMaxCode));  // 8 kb + 121, exact
            bf[r] = __fsub_rn(kk[r], 8.0f * m_new);  // 8 kb + 121 - 8 m_new (8 m_new exact): the fused form's constant
          } else {
            kk[r] = __fadd_rn(kbf[r], static_cast<float>(kTopExponent));  // kb + 8, exact
            bf[r] = __fsub_rn(kk[r], m_new);                              // kb + 8 - m_new: the fused form's constant
          }
        }
        // The block's fold factors and corrected-LSE term (row r), recorded in n_*: after the codes.
        auto block_factors = [&]() {
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            const bool none = m[r] == -__builtin_huge_valf();
            const int kb = __float_as_int(__fadd_rn(kbf[r], 12582912.0f)) - 0x4B400000;  // as above, no conversion
            // s_blk = 2^-e; acc's exponent after this block's fold: ea = e, or e_acc for a block more than 56
            // binades below the row max (e > kAccExpMax: fully masked blocks too); beta = alpha * 2^(ea - e_acc);
            // pv's factor g = 2^(ea - e) (1 unless e > kAccExpMax; 0 where s_blk is not normal). A row that has
            // seen no key has kb = 0, alpha = 1 and A = pv = 0.
            const int e = kb + kTopExponent, ea = e <= detail::kAccExpMax ? e : e_acc[r];
            n_beta[r] = alpha[r] * detail::pow2i(ea - e_acc[r]);
            n_g[r] = e <= detail::kSubnormalScaleExp ? detail::pow2i(ea - e) : 0.0f;
            e_acc[r] = ea;
            if constexpr (kLean) {
              // The corrected LSE: the block's largest code and the exact exponential of its logit (once per row and
              // block). The code is formed by the two-step form from m_blk, which the fused form's largest code
              // equals except at a rounding boundary (a tolerance on the LSE; fma(max S, 8c, b) would keep max S live
              // and spill registers). Its round-half-even integer comes from the bits of y + 1.5 * 2^23 (y <= 121).
              const float y_top = fmaf(dm[r], 8.0f, fmaf(kbf[r], 8.0f, static_cast<float>(kBlockMaxCode)));
              const int top_code = __float_as_int(__fadd_rn(fmaxf(y_top, 0.0f), 12582912.0f)) - 0x4B400000;
              const float p_top = detail::e4m3_value(top_code);
              const float e_blk = arch::sm90::exp2(dm[r] + __fadd_rn(kbf[r], static_cast<float>(kTopExponent)));
              // the constant part of the block's l2 term, (e_blk - P_top f) g (see fold)
              n_lse_c[r] = none ? 0.0f : __fmul_rn(fmaf(-p_top, a.lse_rest, e_blk), n_g[r]);
            }
          }
        };
        // The fused form, two FP32 operations per element. Lean P: y / 128 = fma.sat(S, c / 16, b / 128) (the
        // specification's y = fma(S, 8c, b) scaled by 2^-7, which commutes with the rounding; y <= 121.125, so the
        // saturation is the clamp at 0 only), then 128 (y / 128) + 1.5 * 2^23 leaves round-half-even(y) in the low
        // mantissa bits. exp2: ex2(fma(S, c, b)).
        auto fused_p = [&](float x, int r) {
          if constexpr (kLean) {
            float ys;
            asm("fma.rn.sat.f32 %0, %1, %2, %3;\n" : "=f"(ys) : "f"(x), "f"(c16), "f"(bf[r] * 0.0078125f));
            return fmaf(ys, 128.0f, 12582912.0f);
          } else {
            return arch::sm90::exp2(fmaf(x, c, bf[r]));
          }
        };
        if (__all_sync(0xffffffffu, fused[0] && fused[1])) {
#pragma unroll
          for (int i = 0; i < kSRegs; ++i) s[i] = fused_p(s[i], (i / 2) % 2);
          block_factors();
          return;
        }
        {
          // Rare: some row of the warp beyond 2^16 in log2 units, or that has seen no key yet. Per row, the fused
          // form above or the two-step form: d = S c - m_new, then Lean P y = d * 8 + kk (one rounding), clamped
          // and rounded as above (y / 128 = fma.sat(d, 1/16, kk / 128); y <= 121 always), exp2 ex2(d + kk) --
          // one FMA whose operands are chosen per row (d + kk = fma(d, 1, kk)).
          float mul[2], add[2];
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            mul[r] = fused[r] ? (kLean ? c16 : c) : (kLean ? 0.0625f : 1.0f);
            add[r] = fused[r] ? (kLean ? bf[r] * 0.0078125f : bf[r]) : (kLean ? kk[r] * 0.0078125f : kk[r]);
          }
#pragma unroll
          for (int i = 0; i < kSRegs; ++i) {
            const int r = (i / 2) % 2;
            const float x = fused[r] ? s[i] : __fsub_rn(__fmul_rn(s[i], c), mu[r]);
            if constexpr (kLean) {
              float ys;
              asm("fma.rn.sat.f32 %0, %1, %2, %3;\n" : "=f"(ys) : "f"(x), "f"(mul[r]), "f"(add[r]));
              s[i] = fmaf(ys, 128.0f, 12582912.0f);
            } else {
              s[i] = arch::sm90::exp2(fmaf(x, mul[r], add[r]));
            }
          }
          block_factors();
        }
      };
      // s (codes or probabilities) -> p, the A fragments of the two k32 steps (sigma key order).
      auto to_p = [&]() {
#pragma unroll
        for (int kb = 0; kb < 2; ++kb)
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const int i0 = 16 * kb + 8 * (j / 2) + 2 * (j % 2);  // registers i0, i0+1, i0+4, i0+5
            if constexpr (kLean) {
              p[4 * kb + j] = detail::pack4(__float_as_uint(s[i0]), __float_as_uint(s[i0 + 1]),
                                            __float_as_uint(s[i0 + 4]), __float_as_uint(s[i0 + 5]));
            } else {
              p[4 * kb + j] = static_cast<std::uint32_t>(arch::sm90::pack_e4m3x2(s[i0], s[i0 + 1])) |
                              (static_cast<std::uint32_t>(arch::sm90::pack_e4m3x2(s[i0 + 4], s[i0 + 5])) << 16);
            }
          }
      };
      // acc = fma(acc, alpha, pv * s_blk) of the previous block (column DV carries l) in the scaled form above:
      // A = fma(A, beta, pv). A row whose block exponent e exceeds kAccExpMax (a block more than 56 binades below
      // the row max) keeps its e_acc and scales pv by g = 2^(e_acc - e) (0 where the specification's
      // s_blk is 0): the rare warp-uniform path of two operations per element.
      auto fold = [&]() {
        const float(&g)[2] = f_g;
        // Registers DV/2 + 1 and + 3 hold columns DV + 1 + 2q: zero columns of V^T, never read.
        if (__all_sync(0xffffffffu, g[0] == 1.0f && g[1] == 1.0f)) {
#pragma unroll
          for (int i = 0; i < kPvRegs; ++i)
            if (i < DV / 2 || i % 2 == 0) acc[i] = fmaf(acc[i], f_beta[(i / 2) % 2], pv[i]);
        } else {
#pragma unroll
          for (int i = 0; i < kPvRegs; ++i)
            if (i < DV / 2 || i % 2 == 0) acc[i] = fmaf(acc[i], f_beta[(i / 2) % 2], __fmul_rn(pv[i], g[(i / 2) % 2]));
        }
        if constexpr (kLean) {
#pragma unroll
          for (int r = 0; r < 2; ++r)
            l2[r] = fmaf(l2[r], f_beta[r], fmaf(__fmul_rn(pv[kPvRegs - 4 + 2 * r], g[r]), a.lse_rest, f_lse_c[r]));
        }
      };
      auto keep_factors = [&]() {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          f_beta[r] = n_beta[r];
          f_g[r] = n_g[r];
          f_lse_c[r] = n_lse_c[r];
        }
      };
      auto release = [&](std::uint32_t bar) {
        if (lane == 0) mbarrier_arrive(bar);
      };

      mbarrier_wait(bars + B::kQFull, kq & 1);
      {  // block 0: S only
        const int ks = static_cast<int>(kc % kStages);
        mbarrier_wait(bars + B::kKFull + 8 * ks, (kc / kStages) & 1);
        ++kc;
        my_turn();
        fence_operand(s);
        wgmma_fence();
        issue_s(ks);
        wgmma_commit();
        other_turn();
        wgmma_wait<0>();
        fence_operand(s);
        release(bars + B::kKEmpty + 8 * ks);
        if (n_tiles == 1) release(bars + B::kQEmpty);
      }
      mask(0);
      block_step();
      keep_factors();
      to_p();

#pragma unroll 1
      for (int n = 1; n < n_tiles; ++n) {
        const int ks = static_cast<int>(kc % kStages), vs = static_cast<int>(vc % kStages);
        const std::uint32_t kph = (kc / kStages) & 1, vph = (vc / kStages) & 1;
        ++kc;
        ++vc;
        mbarrier_wait(bars + B::kKFull + 8 * ks, kph);
        my_turn();
        fence_operand(s);
        fence_operand(pv);
        fence_operand(p);
        wgmma_fence();
        issue_s(ks);
        wgmma_commit();
        mbarrier_wait(bars + B::kVtFull + 8 * vs, vph);
        wgmma_fence();
        issue_pv(vs);
        wgmma_commit();
        other_turn();
        wgmma_wait<1>();
        fence_operand(s);
        release(bars + B::kKEmpty + 8 * ks);
        if (n == n_tiles - 1) release(bars + B::kQEmpty);
        mask(n);
        block_step();
        // The block step must run while P.V is on the tensor cores: without this fence the compiler may sink its
        // (register-only) arithmetic below the wait, and the two do not overlap.
        fence_operand(s);
        wgmma_wait<0>();
        fence_operand(pv);
        fence_operand(p);
        release(bars + B::kVtEmpty + 8 * vs);
        fold();
        keep_factors();
        to_p();
      }
      {  // P.V of the last block
        const int vs = static_cast<int>(vc % kStages);
        const std::uint32_t vph = (vc / kStages) & 1;
        ++vc;
        mbarrier_wait(bars + B::kVtFull + 8 * vs, vph);
        my_turn();
        fence_operand(pv);
        fence_operand(p);
        wgmma_fence();
        issue_pv(vs);
        wgmma_commit();
        other_turn();
        wgmma_wait<0>();
        fence_operand(pv);
        release(bars + B::kVtEmpty + 8 * vs);
        fold();
      }
      fixed = fix_flags[kq & 1] != 0;
    }

    // ---------------- epilogue ----------------
    // l (column DV of the accumulator) lives in the quad's lane 0; out = (acc / l) * v_descale.
    // acc and l are scaled by 2^e_acc (the same factor: out = acc / l needs no unscaling); the LSE takes the log of
    // the unscaled l (an exact power-of-two scaling), as the specification does.
    float l[2], l2q[2];
    bool no_key[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      l[r] = __shfl_sync(0xffffffffu, acc[kPvRegs - 4 + 2 * r], lane & ~3);
      l2q[r] = __shfl_sync(0xffffffffu, l2[r], lane & ~3);
      no_key[r] = l[r] == 0.0f;  // NaN l is not "no key": it must propagate
    }
    if (a.lse != nullptr && lane % 4 == 0) {
      float* lse = a.lse + (static_cast<std::int64_t>(b) * a.num_heads + h) * a.seqlen_q;
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int grow = m0 + row0 + 8 * r;
        if (grow < a.seqlen_q)
          lse[grow] = nan_row[r]  ? __int_as_float(0x7FC00000)
                      : no_key[r] ? -__builtin_huge_valf()
                                  : (m[r] + log2f((kLean ? l2q[r] : l[r]) * detail::pow2i(-e_acc[r]))) * kLn2;
      }
    }
    if (n_tiles == 0) {
      std::uint16_t* go = a.out + b * a.o_batch_stride + h * a.o_head_stride;
#pragma unroll 1
      for (int e = wtid; e < 64 * (DV / 8); e += 128) {
        const int grow = m0 + cw * 64 + e / (DV / 8);
        if (grow < a.seqlen_q)
          *reinterpret_cast<uint4*>(go + grow * a.o_row_stride + (e % (DV / 8)) * 8) = make_uint4(0, 0, 0, 0);
      }
      continue;
    }
    if (wtid == 0) tma_store_wait_read();
    named_barrier_sync(detail::kEpiBar + cw, 128);
    // The staging addresses formed here, per work tile (volatile: not hoisted): formed once before the persistent
    // loop, they stay live across the key loop and the consumers spill one.
    std::uint32_t o_tile;
    asm volatile("mov.b32 %0, %1;" : "=r"(o_tile) : "r"(o_base));
#pragma unroll
    for (int j = 0; j < DV / 8; ++j)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = 16 * warp + lane / 4 + 8 * r;
        const int chunk = j % 8;
        const std::uint32_t addr =
            o_tile + (j / 8) * (128 * 128) + row * 128 + ((chunk ^ (row % 8)) * 16) + (lane % 4) * 4;
        float o0 = no_key[r] ? 0.0f : (acc[4 * j + 2 * r] / l[r]) * a.v_descale;
        float o1 = no_key[r] ? 0.0f : (acc[4 * j + 2 * r + 1] / l[r]) * a.v_descale;
        if (nan_row[r]) o0 = o1 = __int_as_float(0x7FC00000);
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(pack_bf16x2(o0, o1)) : "memory");
      }
    if (fixed) {
      // Cold path: a NaN code in V at a key of a diagonal tile that the row does see makes that column NaN.
      named_barrier_sync(detail::kEpiBar + cw, 128);
      const int first_diag = (m0 + a.causal_offset + 1 > 0 ? m0 + a.causal_offset + 1 : 0) / 64;
      const int key_lo = first_diag * 64;
      const int key_hi = a.seqlen_k < n_tiles * 64 ? a.seqlen_k : n_tiles * 64;
      const std::uint8_t* gv = a.v + b * a.v_batch_stride + hk * a.v_head_stride;
#pragma unroll 1
      for (int e = wtid; e < 64 * DV; e += 128) {
        const int row = e / DV, col = e % DV;
        const int grow = m0 + cw * 64 + row;
        if (grow >= a.seqlen_q) continue;
        int last = grow + a.causal_offset;
        if (last > key_hi - 1) last = key_hi - 1;
        bool any = false;
#pragma unroll 1
        for (int key = key_lo; key <= last; ++key)
          any |= (gv[static_cast<std::int64_t>(key) * a.v_row_stride + col] & 0x7F) == 0x7F;
        if (any) {
          const std::uint32_t addr =
              o_base + (col / 64) * (128 * 128) + row * 128 + ((((col % 64) / 8) ^ (row % 8)) * 16) + (col % 8) * 2;
          const unsigned short nan_bits = 0x7FC0;
          asm volatile("st.shared.u16 [%0], %1;\n" ::"r"(addr), "h"(nan_bits) : "memory");
        }
      }
    }
    fence_proxy_async_shared();
    named_barrier_sync(detail::kEpiBar + cw, 128);
    if (wtid == 0) {
#pragma unroll
      for (int bx = 0; bx < DV / 64; ++bx) tma_store_4d(&a.tm_o, o_base + bx * 128 * 128, 64 * bx, m0 + cw * 64, h, b);
      tma_store_commit();
    }
    ++kq;
  }
  if (wtid == 0) tma_store_wait_read();
#endif  // ZYFA_SM90A_PASS
}

}  // namespace zyfa::fp8::sm90

#endif  // ZYFA_PLATFORM_CUDA
