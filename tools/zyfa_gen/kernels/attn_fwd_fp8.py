"""zyfa_fp8_fwd_d128_m32 and zyfa_fp8_fwd_d192_dv128_m32: FP8 (e4m3fn) forward attention for head dims (128, 128)
and (192, 128) (MLA) on gfx950, the zyfa recipe.

One workgroup = WAVES (8) wave64s of 32 query rows each (256 rows of one (batch, query head); two waves per SIMD on
the 4 SIMDs of a CU); grid (ceil(seqlen_q / 256), num_heads, batch). The waves share the K/V blocks: each 64-key
block is loaded into LDS by LDS-DMA two blocks ahead (three stages, each wave its 1/8), and its Vᵀ is transposed
once per workgroup (each wave 1/8) into one of two Vᵀ buffers. Ping-pong: waves 0-3 (group A) and 4-7 (group B,
one barrier behind) alternate a matrix phase (s_setprio 1: Sᵀ of block j, the Vᵀ share and LDS-DMA, P V of block
j - 1) and a vector phase (softmax and Lean P of block j), so that on a SIMD one wave's MFMAs run under the other
wave's vector work. The workgroup loops over the blocks its last valid row sees; per block each wave takes the full
path, the masked path or none (a wave whose rows see no key of the block still loads and transposes its share and
passes every barrier). Keys are visited in 64-key blocks (the specification's kKeyBlock) in increasing order, with the online
softmax of include/zyfa/host/fp8_spec.hpp (STEP 1, STEP 2 zyfa, END with the corrected LSE):

  Sᵀ = K Qᵀ           2 x (d / 64) v_mfma_scale_f32_32x32x64_f8f6f4 (unit scales; d = head_dim_qk = 128 or 192,
                      one MFMA per 64 head dims, chained through SrcC): lane l holds query i = l % 32,
                      register r of key tile kt holds key 32 kt + 8 (r / 4) + 4 h + r % 4 (h = l / 32)
  max S, m_blk        masked keys' S -inf; in-lane v_max3 of S from -inf (NaN never becomes the max) +
                      v_permlane32_swap_b32; m_blk = (max S) c = max t (c = scale_log2 > 0; t = S c is not formed)
  m_new, alpha, kb    m_new = max(m, m_blk), alpha = exp2(m - m_new) (v_exp_f32), kb = (int)min(m_new - m_blk, 255)
  Lean P codes        rows with |m_new| < 2^16 (and c >= 2^-122, a kernel argument test): the fused form
                      y = fma(S, 8 c, b), b = (8 kb + 121) - 8 m_new; other rows (rare, wave-uniform branch to a
                      per-element path that selects the form per lane): y = (S c - m_new) 8 + (8 kb + 121);
                      clamped to [0, 121], rounded to even; NaN y -> 0x7F; masked keys 0; packed into the f8f6f4
                      B layout (two v_permlane32_swap_b32 per 32 keys)
  l_blk               the exact sum of the code values (one MFMA of a ones operand with the codes)
  (P V)ᵀ = Vᵀ Pᵀ      4 scaled MFMAs; the E8M0 operands carry s_blk = 2^-(kb+8): byte 119 for V, 127 - kb for the
                      row's P column (kb > 123: the unit product scale and s_blk by v_mul, see KB_E8M0_MAX)
  acc, l, l2, m       acc = fma(acc, alpha, pv s_blk), l = fma(l, alpha, l_blk s_blk),
                      l2 = fma(l2, alpha, ((l_blk - P_top) f + e_blk) s_blk) (the corrected-LSE row sum,
                      e_blk = exp2(m_blk - m_new + kb + 8), P_top = the value of the block's largest code: that of
                      max S, y = fma(max S, 8 c, b), or of m_blk in the two-step form)
  epilogue            out = (acc / l) v_descale (IEEE division: v_div_scale/v_rcp/v_div_fmas/v_div_fixup), bf16
                      (RNE); lse = (m + log2(l2)) ln 2; a row that sees no key: out 0, lse -inf.

Blocks: row i sees keys [0, n_i), n_i = clamp(row0 + i + row_base, 0, seqlen_k), row_base = seqlen_k -
seqlen_q + 1 when causal (bottom-right), seqlen_k otherwise. Blocks below the tile's smallest n (every row sees
all 64 keys) run the full-block loop: no masking, V straight from memory (a NaN V code is read by every row, as
in the specification). The remaining blocks up to the largest n of the tile's valid rows run the masked loop:
keys j >= n_i get S = -inf and code 0, rows with n_i <= first key of the block skip the block (EXEC), and
since the specification never reads V at a masked key, V's NaN bytes are zeroed and a second scaled MFMA
counts, per (dim, row), the visible keys whose V code is NaN (a non-zero count makes that pv NaN, as 0 x NaN
does in the specification).

The full-block loop computes the same numbers with fewer vector ops (lean_p_full): y by one v_pk_fma_f32 per two
logits (the same IEEE operation per element) and the accumulator update with packed fp32 ops, the rounding of the
clamped y as y + 1.5 2^23 (MAGIC_ROUND; byte 0 is RNE(y)), 3 v_perm_b32 per 4 codes for the packing; a NaN S
(found by one wave-uniform test of the sum of the lane's S) or a row outside the fused form sends the wave to the
per-element path (both forms selected per lane, v_cmp_u, v_cndmask 0x7F); the masked loop branches the same way.
The kb > 123 multiply is skipped (s_cbranch_execz to a .Lrare label) when no row needs it; V's key offsets are
SGPR soffsets (every key of a full block is below seqlen_k).

Memory: Q is read (and out, lse written) with buffer ops whose V# covers the wave's rows; K and V are staged in
LDS by LDS-DMA (buffer_load_dwordx4 ... lds; MLA's dims 128..191 by buffer_load_dword ... lds) through V#s that
start at the block's first key (base moved per key block; keys >= seqlen_k and rows >= seqlen_q read 0 and are
never used). Base offsets are 64-bit (s_mul_i32 + s_mul_hi_u32, added with carry into the 64-bit
pointer), so a tensor may pass 2^31 elements and 2^32 bytes. num_records stays <= 2^32 - 1: the Q/out/lse V#s
hold at most 32 rows (< 2^32 bytes for row strides < 2^26 bytes, a launcher precondition); the K/V V#s take the
64-bit count of bytes left from the block's first key clamped to 2^32 - 1, which is safe because a block's loads
stay below 64 row strides + d < 2^32 bytes from the V# base, so a clamped extent still covers every byte the
block reads and every key it reads there is < seqlen_k. K operands are read from LDS in the MFMA's f8f6f4 lane
layout (ds_read_b128, swizzled chunks: lds_addresses). V arrives key-major; each lane of wave w reads 4 keys x 4
dims of the wave's own DMA share, transposes the 4x4 bytes with 8 v_perm_b32 and writes dims-major to the shared
Vᵀ [128 dims][64 keys] (8 KiB), from where ds_read_b128 fills the Vᵀ A operands; the masked path zeroes V's NaN
bytes in those operands and derives the NaN indicator codes from them (bytewise: the same on Vᵀ dwords as on V). Output stores run
under EXEC = rows < seqlen_q.

Registers are virtual (allocation in the .s banner), s_waitcnt and s_nop come from the generator's passes.
"""
from __future__ import annotations

import dataclasses
import struct

from ..ir import Program
from ..kernel import Arg, KernelSpec, load_kernargs

BUF_DWORD3 = 0x00020000
#: Lean P's block max code (kBlockMaxCode, fp8_spec.hpp) and the top exponent (kTopExponent)
MAX_CODE = 121
TOP_EXPONENT = 8
#: Lean P is one FMA from S while |m_new| < kLeanPFusedMaxLogit and c >= kLeanPFusedMinScale (numeric/lean_p.hpp)
FUSED_MAX_LOGIT = 65536.0
FUSED_MIN_SCALE = 2.0 ** -122
#: kb above which the E8M0 scale of P would make the MFMA's per-product scaling round partial sums in the fp32
#: subnormal range: such rows get the unit scale from the MFMA and s_blk from one v_mul under EXEC.
KB_E8M0_MAX = 123
SCALE_V_E8M0 = 127 - TOP_EXPONENT  # the V operand's scale byte: 2^-8; the P operand's byte is 127 - kb
#: kLeanPInvMeanBias * 2^-((kBlockMaxCode - 120) / 8), as fp8_spec.hpp's fp8_row computes it in fp32
K_LEAN_P_INV_MEAN_BIAS = 0.9609060278
LN2_F32 = 0.693147180559945309417

#: waves per workgroup: 8 = two per SIMD on the 4 SIMDs of a CU; each wave owns 32 query rows
WAVES = 8
#: LDS layout (bytes). Three stages (block index mod 3) of [K dims 0..127: 64 keys x 128 B | V: 64 keys x 128 B] at
#: LDS_STAGE apart: a block's LDS-DMA is issued two blocks ahead (in the matrix phase of block j - 2) and the stage
#: it overwrites held block j - 3, which both wave groups finished reading a phase earlier. MLA: K dims 128..191
#: (64 keys x 64 B) per stage at LDS_K_B + LDS_STAGE_B stage. Two Vᵀ [128 dims][64 keys] buffers (block parity,
#: LDS_VT_TOGGLE apart): Vᵀ of block j is written in the matrix phase of block j and read in the matrix phase of
#: block j + 1. Every LDS-DMA destination lies below 64 KiB (M0's width for LDS-DMA: gfx950-facts.md §6).
LDS_K = 0x0000
LDS_V_RAW = 0x2000
LDS_STAGE = 0x4000
STAGES = 3
LDS_K_B = 0xC000
LDS_STAGE_B = 0x1000
LDS_VT_TOGGLE = 0x2000


def lds_vt(d: int) -> int:
    """Byte address of the first Vᵀ buffer (after the K/V stages; bit 13 clear so that XOR LDS_VT_TOGGLE flips it)."""
    return 0xC000 if d == 128 else 0x10000


def lds_bytes(d: int) -> int:
    """LDS bytes of the kernel with head_dim_qk d: 64 KiB (d = 128), 80 KiB (MLA)."""
    return lds_vt(d) + 2 * LDS_VT_TOGGLE


V_LDS_BYTES = 128 * 64  # Vᵀ of one 64-key block
#: 1.5 * 2^23: y + MAGIC_ROUND for y in [0, 2^22] is the fp32 number whose low mantissa bits hold RNE(y) (the
#: addition rounds to an integer ulp, to nearest even); its byte 0 is the Lean P code, bytes 1-3 are 0x00 0x40 0x4B
MAGIC_ROUND = 1.5 * 2.0 ** 23


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def lse_rest() -> float:
    """fp32 value of kLeanPInvMeanBias * exp2f(-(kBlockMaxCode - 120) / 8.0f) (both factors fp32, one rounding)."""
    e = _f32(2.0 ** _f32(-(MAX_CODE - 120) / 8.0))
    return _f32(_f32(K_LEAN_P_INV_MEAN_BIAS) * e)  # the product of two fp32 is exact in double: one rounding


def _hexf(x: float) -> str:
    return hex(struct.unpack("<I", struct.pack("<f", x))[0])


def args(d: int = 128, dv: int = 128) -> list:
    """The kernel arguments (one layout for every head-dim pair; the descriptions name the pair)."""
    return [
        Arg("q", "ptr", "const std::uint8_t*", f"Q [batch, seqlen_q, num_heads, {d}] e4m3fn", const=True),
        Arg("k", "ptr", "const std::uint8_t*", f"K [batch, seqlen_k, num_heads_k, {d}] e4m3fn", const=True),
        Arg("v", "ptr", "const std::uint8_t*", f"V [batch, seqlen_k, num_heads_k, {dv}] e4m3fn", const=True),
        Arg("out", "ptr", "std::uint16_t*", f"out [batch, seqlen_q, num_heads, {dv}] bf16"),
        Arg("lse", "ptr", "float*", "softmax_lse [batch, num_heads, seqlen_q] fp32 (natural log), or null"),
        *[Arg(f"{t}_{dim}_stride", "u32", "std::uint32_t", f"{t} stride of the {dim} dim in elements")
          for t in ("q", "k", "v", "out") for dim in ("batch", "row", "head")],
        Arg("seqlen_q", "u32", "std::uint32_t", "query rows per sequence, >= 1"),
        Arg("seqlen_k", "u32", "std::uint32_t", "keys per sequence, >= 1"),
        Arg("num_heads", "u32", "std::uint32_t", "query heads (the lse head dim)"),
        Arg("group_magic", "u32", "std::uint32_t", "floor(2^32 / group) + 1 for group = num_heads / num_heads_k "
            ">= 2 (the K/V head of query head h is mul_hi(h, group_magic), exact for h * group < 2^32), 0 for group 1"),
        Arg("causal", "u32", "std::uint32_t", "1: bottom-right causal mask, 0: none"),
        Arg("scale_log2", "f32", "float", "AttentionParams::scale_softmax_log2 (q_descale k_descale scale log2 e)"),
        Arg("v_descale", "f32", "float", "V's per-tensor descale"),
    ]


ARGS = args()


def group_magic(group: int) -> int:
    """The kernel's division constant: mul_hi(h, magic) = h / group for h * group < 2^32; 0 for group 1."""
    return 0 if group == 1 else (1 << 32) // group + 1


@dataclasses.dataclass(frozen=True)
class Config:
    """m query rows per workgroup (one wave), d = head_dim_qk, dv = head_dim_v."""
    m: int = 32
    d: int = 128
    dv: int = 128

    @property
    def name(self) -> str:
        dims = f"d{self.d}" if self.d == self.dv else f"d{self.d}_dv{self.dv}"
        return f"zyfa_fp8_fwd_{dims}_m{self.m}"

    @property
    def k_steps(self) -> int:
        """MFMAs (64 head dims each) per 32-key tile of Sᵀ = K Qᵀ."""
        return self.d // 64

    @property
    def description(self) -> str:
        mla = " (MLA)" if self.d != self.dv else ""
        return (f"{self.name}: FP8 (e4m3fn) forward attention for head dims ({self.d}, {self.dv}){mla} on gfx950, "
                "the zyfa recipe.")


#: the generated configurations: hd128 and MLA (192, 128)
CONFIGS = [Config(), Config(d=192, dv=128)]


class _Kernel:
    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.p = Program()
        self.args = args(cfg.d, cfg.dv)

    # ------------------------------------------------------------------------------------------------ setup
    def setup(self):
        p = self.p
        kern = p.sreg("kernarg_ptr", 2, pin=0)
        tile, head, batch = p.sreg("wg_tile", pin=2), p.sreg("wg_head", pin=3), p.sreg("wg_batch", pin=4)
        lane = p.vreg("lane", pin=0)
        p.comment("kernel arguments (offsets from ARGS)")
        a = self.a = load_kernargs(p, self.args, kern)
        s = {}
        for x in ("row0", "wg_row0", "wave", "hk", "tmp", "tmp2", "row_base", "n_first", "n_last", "nfull", "nblk",
                  "nblk_wg", "blk"):
            s[x] = p.sreg(f"s_{x}")
        for x in ("kext", "vext"):
            s[x] = p.sreg(f"s_{x}", 2)
        self.s = s
        wtmp = p.vreg("wave_v")
        p.v_lshrrev_b32_e32(wtmp, 6, lane)
        p.v_readfirstlane_b32(s["wave"], wtmp, comment="wave index in the workgroup (thread id / 64)")
        p.s_lshl_b32(s["wg_row0"], tile, (WAVES * self.cfg.m).bit_length() - 1,
                     comment=f"first query row of the workgroup's tile ({WAVES} x {self.cfg.m} rows)")
        p.s_lshl_b32(s["row0"], s["wave"], 5)
        p.s_add_u32(s["row0"], s["row0"], s["wg_row0"], comment="first query row of this wave")
        p.s_mul_hi_u32(s["hk"], head, a["group_magic"], comment="K/V head = h / group")
        p.s_cmp_eq_u32(a["group_magic"], 0)
        p.s_cselect_b32(s["hk"], head, s["hk"], comment="group 1: K/V head = h")
        # Q: base + b*qbs + h*qhs + row0*qrs; extent of the remaining rows
        self.rs = {n: p.sreg(f"rsrc_{n}", 4) for n in ("q", "out", "lse")}
        self.ptr = {n: p.sreg(f"ptr_{n}", 2) for n in ("k", "v")}

        def mad64(dst, x, y, first=False):
            """dst (SGPR pair) = x * y (first) or dst + x * y, 64-bit (s_mul_i32 + s_mul_hi_u32, add with carry)."""
            lo, hi = (dst[0], dst[1]) if first else (s["tmp"], s["tmp2"])
            p.s_mul_i32(lo, x, y)
            p.s_mul_hi_u32(hi, x, y)
            if not first:
                p.s_add_u32(dst[0], dst[0], lo)
                p.s_addc_u32(dst[1], dst[1], hi)

        def base_off(dst, t, hreg, row):
            """dst (SGPR pair) = batch * batch_stride + hreg * head_stride [+ row * row_stride] in elements,
            64-bit: tensors beyond 2^32 elements address correctly (each stride < 2^32 elements, attention.hpp)."""
            mad64(dst, batch, a[f"{t}_batch_stride"], first=True)
            mad64(dst, hreg, a[f"{t}_head_stride"])
            if row is not None:
                mad64(dst, row, a[f"{t}_row_stride"])

        def rsrc(r, ptr_lo, ptr_hi, off, ext, shift=0):
            """V# at ptr + (off << shift) (64-bit add, carry into the pointer's high dword), num_records ext."""
            if shift:
                p.op("s_lshl_b64", off, off, shift, comment="element offset -> bytes (64-bit)")
            p.s_add_u32(r[0], ptr_lo, off[0])
            p.s_addc_u32(r[1], ptr_hi, off[1])
            p.s_and_b32(r[1], r[1], "0xffff", comment="base[47:32], stride 0")
            p.s_mov_b32(r[2], ext)
            p.s_mov_b32(r[3], hex(BUF_DWORD3))

        off, ext = p.sreg("s_off", 2), p.sreg("s_ext")
        p.comment("extents: the Q, out and lse V#s cover only this tile's rows (<= 32 rows; 64 rows span less than")
        p.comment("2^32 bytes, a launcher precondition, so num_records < 2^32 without a clamp)")
        trows, wrows = p.sreg("s_tile_rows_m1"), p.sreg("s_wave_rows")
        p.s_sub_i32(wrows, a["seqlen_q"], s["row0"])
        p.s_max_i32(wrows, wrows, 0)
        p.s_min_u32(wrows, wrows, self.cfg.m, comment="valid rows of this wave (0: a wave past seqlen_q)")
        p.s_max_u32(trows, wrows, 1)
        p.s_sub_u32(trows, trows, 1, comment="rows of the wave - 1 (0 for a wave without rows)")
        p.comment("Q: this tile's rows of (batch, head)")
        base_off(off, "q", head, s["row0"])
        p.s_mul_i32(ext, trows, a["q_row_stride"])
        p.s_add_u32(ext, ext, self.cfg.d)
        p.s_cmp_eq_u32(wrows, 0)
        p.s_cselect_b32(ext, 0, ext, comment="a wave without rows: empty V#")
        rsrc(self.rs["q"], a["q"][0], a["q"][1], off, ext)
        p.comment("out (bf16): this tile's rows; stores run under EXEC = rows < seqlen_q as well")
        base_off(off, "out", head, s["row0"])
        p.s_mul_i32(ext, trows, a["out_row_stride"])
        p.s_add_u32(ext, ext, self.cfg.dv)
        p.s_lshl_b32(ext, ext, 1)
        p.s_cmp_eq_u32(wrows, 0)
        p.s_cselect_b32(ext, 0, ext)
        rsrc(self.rs["out"], a["out"][0], a["out"][1], off, ext, shift=1)
        p.comment("lse: ((b H + h) seqlen_q + row0) floats (64-bit)")
        p.s_lshl_b32(ext, wrows, 2, comment="the wave's rows")
        p.s_mul_i32(s["tmp"], batch, a["num_heads"])
        p.s_add_u32(s["tmp"], s["tmp"], head, comment="b H + h (< 2^32: both < 65,536)")
        mad64(off, s["tmp"], a["seqlen_q"], first=True)
        p.s_add_u32(off[0], off[0], s["row0"])
        p.s_addc_u32(off[1], off[1], 0)
        rsrc(self.rs["lse"], a["lse"][0], a["lse"][1], off, ext, shift=2)
        p.comment("K, V: (batch, K/V head) base pointers (64-bit) and the bytes left from the block's first key")
        p.comment("(64-bit: (seqlen_k - 1) row_stride + d may pass 2^32); the V# is rebuilt per key block")
        for t, e in (("k", s["kext"]), ("v", s["vext"])):
            base_off(off, t, s["hk"], None)
            p.s_add_u32(self.ptr[t][0], a[t][0], off[0])
            p.s_addc_u32(self.ptr[t][1], a[t][1], off[1])
            p.s_sub_u32(s["tmp"], a["seqlen_k"], 1)
            mad64(e, s["tmp"], a[f"{t}_row_stride"], first=True)
            p.s_add_u32(e[0], e[0], self.cfg.d if t == "k" else self.cfg.dv)
            p.s_addc_u32(e[1], e[1], 0)
        p.comment("visible keys: n_i = clamp(row0 + i + row_base, 0, seqlen_k)")
        p.s_add_u32(s["tmp"], a["seqlen_k"], 1)
        p.s_sub_u32(s["tmp"], s["tmp"], a["seqlen_q"])
        p.s_cmp_lg_u32(a["causal"], 0)
        p.s_cselect_b32(s["row_base"], s["tmp"], a["seqlen_k"], comment="causal: seqlen_k - seqlen_q + 1")
        p.s_add_i32(s["row_base"], s["row_base"], s["row0"], comment="row0 + row_base")
        p.s_max_i32(s["n_first"], s["row_base"], 0)
        p.s_min_i32(s["n_first"], s["n_first"], a["seqlen_k"], comment="n of the tile's first row")
        p.s_add_i32(s["n_last"], s["row_base"], trows)
        p.s_max_i32(s["n_last"], s["n_last"], 0)
        p.s_min_i32(s["n_last"], s["n_last"], a["seqlen_k"], comment="n of the wave's last valid row")
        p.s_lshr_b32(s["nfull"], s["n_first"], 6, comment="blocks every row of the wave sees entirely")
        p.s_add_u32(s["nblk"], s["n_last"], 63)
        p.s_lshr_b32(s["nblk"], s["nblk"], 6, comment="blocks any valid row of the wave sees")
        p.s_cmp_eq_u32(wrows, 0)
        p.s_cselect_b32(s["nblk"], 0, s["nblk"], comment="a wave without rows: no block")
        p.s_cselect_b32(s["nfull"], 0, s["nfull"])
        p.comment("the workgroup's blocks: those its last valid row sees (every wave runs them all: barriers)")
        p.s_sub_u32(s["tmp"], a["seqlen_q"], s["wg_row0"])
        p.s_min_u32(s["tmp"], s["tmp"], WAVES * self.cfg.m)
        p.s_add_u32(s["tmp"], s["tmp"], s["wg_row0"])
        p.s_add_i32(s["tmp"], s["tmp"], s["row_base"])
        p.s_sub_i32(s["tmp"], s["tmp"], s["row0"])
        p.s_sub_i32(s["tmp"], s["tmp"], 1, comment="row_base + last valid row of the workgroup")
        p.s_max_i32(s["tmp"], s["tmp"], 0)
        p.s_min_i32(s["tmp"], s["tmp"], a["seqlen_k"])
        p.s_add_u32(s["tmp"], s["tmp"], 63)
        p.s_lshr_b32(s["nblk_wg"], s["tmp"], 6)

        p.comment("lane decomposition: l = thread id % 64, i = l % 32, h = l / 32")
        v = self.v = {}
        for x in ("l", "i", "h", "nvis", "rel", "tmp", "tmp2", "qoff", "sk"):
            v[x] = p.vreg(f"{x}" if x != "l" else "lane64")
        p.v_and_b32_e32(v["l"], 63, lane)
        p.v_and_b32_e32(v["i"], 31, lane)
        p.v_bfe_u32(v["h"], lane, 5, 1)
        p.v_mov_b32_e32(v["sk"], a["seqlen_k"])
        p.v_add_u32_e32(v["nvis"], s["row_base"], v["i"])
        p.op("v_med3_i32", v["nvis"], v["nvis"], 0, v["sk"], comment="n_i")
        p.v_lshlrev_b32_e32(v["tmp"], 2, v["h"])
        p.v_sub_u32_e32(v["rel"], v["nvis"], v["tmp"], comment="n_i - 4h")
        p.v_lshlrev_b32_e32(v["tmp"], 4, v["h"], comment="16 h")
        p.v_mul_lo_u32(v["qoff"], v["i"], a["q_row_stride"])
        p.v_add_u32_e32(v["qoff"], v["qoff"], v["tmp"], comment="Q: i * q_row_stride + 16 h")
        self.lds_addresses()
        ks = self.cfg.k_steps
        p.comment(f"Q (the B operand of Sᵀ = K Qᵀ): {ks} K-steps x 2 halves")
        self.qb = [p.vreg(f"q{st}", 8) for st in range(ks)]
        for st in range(ks):
            for half in range(2):
                p.buffer_load_dwordx4(self.qb[st][4 * half:4 * half + 4], v["qoff"], self.rs["q"], 0, offen=True,
                                      offset=64 * st + 32 * half)
        c = self.c = {}
        for x, val in (("one", 127), ("scale_v", SCALE_V_E8M0), ("maxc", MAX_CODE), ("maxf", f"{MAX_CODE}.0"),
                       ("nanc", "0x7f"), ("lim", "255.0"), ("ninf", "0xff800000"), ("qnan", "0x7fc00000"),
                       ("kbmax", KB_E8M0_MAX), ("big_byte", 254 - SCALE_V_E8M0), ("vis_code", "0x38"),
                       ("lse_rest", _hexf(lse_rest())), ("eight", "0x41000000")):
            c[x] = p.vreg(f"c_{x}")
            p.v_mov_b32_e32(c[x], val)
        p.comment("pairs (x, x) for the packed fp32 ops of the full-block loop; c8 = 8 c (exact: c < 2^125)")
        for x, val in (("c8", a["scale_log2"]), ("magic2", _hexf(MAGIC_ROUND))):
            c[x] = p.vreg(f"c_{x}", 2)
            p.v_mov_b32_e32(c[x][0], val)
            if x == "c8":
                p.v_mul_f32_e32(c[x][0], 8.0, c[x][0])
            p.v_mov_b32_e32(c[x][1], c[x][0] if x == "c8" else val)
        p.comment("Lean P's fused form needs |m_new| < 2^16 and c >= 2^-122 (lean_p.hpp): s_fused_lim is the bits")
        p.comment("of 2^16, against which a row compares |m_new|'s bits, or 0 (no row fused) when c is smaller")
        s["fused_lim"], s["neg8"] = p.sreg("s_fused_lim"), p.sreg("s_neg8")
        p.s_mov_b32(s["neg8"], _hexf(-8.0))
        p.v_mov_b32_e32(v["tmp"], _hexf(FUSED_MIN_SCALE))
        p.op("v_cmp_le_f32_e64", "vcc", v["tmp"], a["scale_log2"], comment="c >= 2^-122 (false for NaN)")
        p.op("s_cmp_lg_u64", "vcc", 0)
        p.s_cselect_b32(s["fused_lim"], _hexf(FUSED_MAX_LOGIT), 0)
        self.sel = {x: p.sreg(f"perm_sel_{x}") for x in ("5010400", "7030602", "5040100", "7060302")}
        for x, r in self.sel.items():
            p.s_mov_b32(r, "0x" + x, comment="v_perm_b32 byte selector (VOP3: no literal)")
        st = self.st = {}
        st["m"], st["l"], st["l2"] = p.vreg("m"), p.vreg("l"), p.vreg("l2")
        p.v_mov_b32_e32(st["m"], "0xff800000", comment="m = -inf")
        p.v_mov_b32_e32(st["l"], 0)
        p.v_mov_b32_e32(st["l2"], 0)
        self.acc = [p.vreg(f"acc{et}", 16) for et in range(4)]
        for et in range(4):
            for r in range(16):
                p.v_mov_b32_e32(self.acc[et][r], 0)
        self.sm = {x: p.sreg(x, 2) for x in ("isnan", "masked", "skip", "kb_big", "saved_exec", "has_nan", "fused",
                                             "rare")}
        p.s_mov_b32(s["blk"], 0)

    # ---------------------------------------------------------------------------------------- LDS addressing
    def lds_addresses(self):
        """Per-lane LDS-DMA offsets, M0 bases and ds_read/ds_write addresses (LDS layout: LDS_* constants).

        Bank conflicts (not modelled by the emulator): the layouts are chosen for ds_read_b128, assuming it serves
        16 lanes per pass over the 64 four-byte banks (256 bytes), so a read is conflict-free when the 16 lanes of
        a pass hit 16 different 16-byte bank groups. A K row is 128 bytes (8 groups of the 16), so lanes i and
        i + 2 (keys 2 apart) would start in the same group: the 16-byte chunk c of key n is stored at chunk
        c ^ ((n >> 1) & 7) (MLA dims 128..191: 64-byte rows, chunk j at j ^ ((n >> 2) & 3)); a Vᵀ row is 64
        bytes: chunk c (keys 16c..) of dim e at c ^ ((e >> 2) & 3). With these swizzles the 16 lanes of every
        K and Vᵀ operand read hit 16 different bank groups. The swizzle is applied on the global side of the
        LDS-DMA (lane l of an LDS-DMA writes LDS byte M0 + 16 l, so each lane loads the global chunk that
        belongs in its slot). The V transpose's 4-byte writes (4 per wave and block) hit 4 banks per 32 lanes."""
        p, a, s, v = self.p, self.a, self.s, self.v
        w = s["wave"]
        t, t2 = v["tmp"], v["tmp2"]
        L = self.lds = {}
        sw8, sw = p.sreg("s_wave8"), p.sreg("s_wave1k")
        p.s_lshl_b32(sw8, w, 3, comment="8 w")
        p.s_lshl_b32(sw, w, 10, comment="1024 w")
        p.comment("LDS-DMA of K (dims 0..127) and V: wave w loads keys 8w + l / 8, 16-byte chunk l % 8")
        key = p.vreg("dma_key")
        p.v_lshrrev_b32_e32(key, 3, v["l"])
        p.v_add_u32_e32(key, sw8, key, comment="key 8 w + l / 8 of the block")
        L["kdma"], L["vdma"] = p.vreg("k_dma_off"), p.vreg("v_dma_off")
        p.v_bfe_u32(t, key, 1, 3)
        p.v_and_b32_e32(t2, 7, v["l"])
        p.v_xor_b32_e32(t, t, t2, comment="global chunk of LDS slot l % 8: (l % 8) ^ ((key >> 1) & 7)")
        p.v_mul_lo_u32(L["kdma"], key, a["k_row_stride"])
        p.v_lshl_add_u32(L["kdma"], t, 4, L["kdma"], comment="K: key * k_row_stride + 16 chunk")
        p.v_mul_lo_u32(L["vdma"], key, a["v_row_stride"])
        p.v_lshl_add_u32(L["vdma"], t2, 4, L["vdma"], comment="V: key * v_row_stride + 16 (l % 8) (no swizzle)")
        L["m0_k"], L["m0_v"] = p.sreg("m0_k"), p.sreg("m0_v")
        p.s_mov_b32(L["m0_k"], sw, comment=f"LDS K stage 0 + 1024 w")
        p.s_add_u32(L["m0_v"], sw, hex(LDS_V_RAW))
        if self.cfg.d > 128:
            p.comment("MLA: K dims 128..191 by dword LDS-DMA, 64-byte rows, instructions w and w + 8 of 16 (4 keys each)")
            L["kdma_b"], L["m0_kb"] = [], []
            for n_add in (0, 8):
                o = p.vreg(f"kb_dma_off{n_add}")
                p.v_lshrrev_b32_e32(key, 4, v["l"])
                p.s_add_u32(s["tmp"], w, n_add)
                p.s_lshl_b32(s["tmp"], s["tmp"], 2)
                p.v_add_u32_e32(key, s["tmp"], key, comment="key 4 n + l / 16")
                p.v_bfe_u32(t, key, 2, 2)
                p.v_bfe_u32(t2, v["l"], 2, 2)
                p.v_xor_b32_e32(t, t, t2, comment="chunk ((l / 4) % 4) ^ ((key >> 2) & 3)")
                p.v_mul_lo_u32(o, key, a["k_row_stride"])
                p.v_lshl_add_u32(o, t, 4, o)
                p.v_and_b32_e32(t2, 3, v["l"])
                p.v_lshl_add_u32(o, t2, 2, o)
                p.v_add_u32_e32(o, 128, o, comment="K: key * k_row_stride + 128 + 16 chunk + 4 (l % 4)")
                m0 = p.sreg(f"m0_kb{n_add}")
                p.s_lshl_b32(m0, s["tmp"], 6, comment="256 n")
                p.s_add_u32(m0, m0, hex(LDS_K_B), comment="stage 0")
                L["kdma_b"].append(o)
                L["m0_kb"].append(m0)
        p.comment("K operand reads: key 32 kt + i, bytes 64 x + 32 half + 16 h (swizzled chunks)")
        mi = p.vreg("swz_i")
        p.v_bfe_u32(mi, v["i"], 1, 3)
        L["kr"] = {}
        for x in range(2):
            for half in range(2):
                r = p.vreg(f"k_rd{x}{half}")
                p.v_or_b32_e32(t, 4 * x + 2 * half, v["h"])
                p.v_xor_b32_e32(t, t, mi)
                p.v_lshlrev_b32_e32(t, 4, t)
                p.v_lshl_add_u32(r, v["i"], 7, t, comment=f"K: i * 128 + 16 ((4 x + 2 half + h) ^ ((i >> 1) & 7))")
                L["kr"][(x, half)] = r
        p.v_bfe_u32(mi, v["i"], 2, 2)
        if self.cfg.d > 128:
            for half in range(2):
                r = p.vreg(f"kb_rd{half}")
                p.v_or_b32_e32(t, 2 * half, v["h"])
                p.v_xor_b32_e32(t, t, mi)
                p.v_lshlrev_b32_e32(t, 4, t)
                p.v_lshl_add_u32(t, v["i"], 6, t)
                p.v_add_u32_e32(r, hex(LDS_K_B), t, comment="K dims 128..: i * 64 + 16 ((2 half + h) ^ ((i >> 2) & 3))")
                L["kr"][(2, half)] = r
        p.comment("Vᵀ operand reads: dim 32 et + i, keys 32 half + 16 h (swizzled chunks)")
        L["vtr"] = []
        for half in range(2):
            r = p.vreg(f"vt_rd{half}")
            p.v_or_b32_e32(t, 2 * half, v["h"])
            p.v_xor_b32_e32(t, t, mi)
            p.v_lshlrev_b32_e32(t, 4, t)
            p.v_lshl_add_u32(t, v["i"], 6, t)
            p.v_add_u32_e32(r, hex(lds_vt(self.cfg.d) ^ LDS_VT_TOGGLE), t,
                            comment="Vᵀ: i * 64 + 16 ((2 half + h) ^ ((i >> 2) & 3)); buffer 1 (block j - 1 = -1)")
            L["vtr"].append(r)
        p.comment("V transpose share of wave w: keys 8 w + 4 h + r (r < 4), dims 4 i .. 4 i + 3")
        L["vraw"], L["vtw"] = p.vreg("v_raw_rd"), p.vreg("vt_wr")
        p.v_lshlrev_b32_e32(t, 9, v["h"])
        p.v_lshl_add_u32(t, v["i"], 2, t)
        p.v_add_u32_e32(t, sw, t)
        p.v_add_u32_e32(L["vraw"], hex(LDS_V_RAW), t, comment="V (key-major): 1024 w + 512 h + 4 i")
        p.s_lshr_b32(s["tmp"], w, 1)
        p.v_and_b32_e32(t, 3, v["i"])
        p.v_xor_b32_e32(t, s["tmp"], t, comment="chunk (w >> 1) ^ (i & 3)")
        p.v_lshlrev_b32_e32(t, 4, t)
        p.v_lshl_add_u32(t, v["i"], 8, t)
        p.v_lshl_add_u32(t, v["h"], 2, t)
        p.s_and_b32(s["tmp"], w, 1)
        p.s_lshl_b32(s["tmp"], s["tmp"], 3)
        p.s_add_u32(s["tmp"], s["tmp"], hex(lds_vt(self.cfg.d)))
        p.v_add_u32_e32(L["vtw"], s["tmp"], t, comment="Vᵀ: dim 4 i row + chunk + 8 (w & 1) + 4 h")

    # ----------------------------------------------------------------------------------------------- LDS-DMA
    def dma(self, publish: int):
        """Issues this wave's LDS-DMA share of the next K/V block to load (V#s from the moving pointers) into the
        stage s_dma_k / s_dma_kb name, then moves the pointers and extents by 64 keys and the DMA stage to the next
        one (mod STAGES). `publish`: the number of s_barriers after which the data must be in LDS (the waitcnt
        pass waits for it before that barrier)."""
        p, a, s, L = self.p, self.a, self.s, self.lds
        rk, rv = self.rk, self.rv
        for r, t, e in ((rk, "k", s["kext"]), (rv, "v", s["vext"])):
            p.s_mov_b32(r[0], self.ptr[t][0])
            p.s_and_b32(r[1], self.ptr[t][1], "0xffff")
            p.s_cmp_eq_u32(e[1], 0)
            p.s_cselect_b32(r[2], e[0], -1, comment="num_records: bytes left, clamped to 2^32-1")
            p.s_mov_b32(r[3], hex(BUF_DWORD3))
        loads = [("buffer_load_dwordx4", L["kdma"], rk, L["m0_k"], s["dma_k"]),
                 ("buffer_load_dwordx4", L["vdma"], rv, L["m0_v"], s["dma_k"])]
        if self.cfg.d > 128:
            loads += [("buffer_load_dword", o, rk, m0, s["dma_kb"]) for o, m0 in zip(L["kdma_b"], L["m0_kb"])]
        for mn, off, r, m0, stage in loads:
            p.s_add_u32("m0", m0, stage)
            x = p.op(mn, off, r, 0, offen=True, lds=True, comment="LDS-DMA: lane l -> LDS M0 + size l")
            x.lds_publish = publish
        p.comment("next block to load: K/V pointers and extents move by 64 keys; the DMA stage to the next one")
        for t, e in (("k", s["kext"]), ("v", s["vext"])):
            p.s_lshl_b32(s["tmp"], a[f"{t}_row_stride"], 6)
            p.s_add_u32(self.ptr[t][0], self.ptr[t][0], s["tmp"])
            p.s_addc_u32(self.ptr[t][1], self.ptr[t][1], 0)
            p.s_sub_u32(e[0], e[0], s["tmp"])
            p.s_subb_u32(e[1], e[1], 0)
            p.s_cselect_b32(e[0], 0, e[0], comment="bytes left (64-bit), 0 when past seqlen_k")
            p.s_cselect_b32(e[1], 0, e[1])
        self.next_stage("dma_k", "dma_kb")

    def next_stage(self, k: str, kb: str):
        """Advances the stage byte offsets s[k] (stride LDS_STAGE) and s[kb] (MLA, stride LDS_STAGE_B) mod STAGES."""
        p, s = self.p, self.s
        p.s_add_u32(s[k], s[k], hex(LDS_STAGE))
        p.s_cmp_ge_u32(s[k], hex(STAGES * LDS_STAGE))
        p.s_cselect_b32(s[k], 0, s[k], comment=f"stage offset mod {STAGES}")
        if self.cfg.d > 128:
            p.s_add_u32(s[kb], s[kb], hex(LDS_STAGE_B))
            p.s_cmp_ge_u32(s[kb], hex(STAGES * LDS_STAGE_B))
            p.s_cselect_b32(s[kb], 0, s[kb])

    def transpose_share(self):
        """This wave's share of the block's Vᵀ (once per workgroup): keys 8 w + 4 h + r, dims 4 i..4 i + 3 from the
        staged V (the wave's own LDS-DMA bytes, in the block's stage), 4x4 bytes transposed with 8 v_perm_b32,
        written dims-major into the Vᵀ buffer of the block's parity."""
        p, L = self.p, self.lds
        rows = [p.vreg(f"vraw{r}") for r in range(4)]
        tr = [p.vreg(f"tr{x}") for x in range(4)]
        col, ra = p.vreg("vt_col"), p.vreg("v_raw_cur")
        p.v_add_u32_e32(ra, self.s["stage_k"], L["vraw"])
        for r in range(4):
            p.ds_read_b32(rows[r], ra, offset=128 * r)
        for x, (hi, lo, sel) in enumerate(((rows[1], rows[0], self.sel["5010400"]), (rows[1], rows[0], self.sel["7030602"]),
                                           (rows[3], rows[2], self.sel["5010400"]), (rows[3], rows[2], self.sel["7030602"]))):
            p.v_perm_b32(tr[x], hi, lo, sel)
        for d, (hi, lo, sel) in enumerate(((tr[2], tr[0], self.sel["5040100"]), (tr[2], tr[0], self.sel["7060302"]),
                                           (tr[3], tr[1], self.sel["5040100"]), (tr[3], tr[1], self.sel["7060302"]))):
            p.v_perm_b32(col, hi, lo, sel)
            p.ds_write_b32(L["vtw"], col, offset=64 * d)

    def toggle_stage(self):
        """Next block: the read stage to the next one (mod STAGES), the Vᵀ write and read buffers swapped."""
        p, L = self.p, self.lds
        p.comment("LDS stage of the next block; Vᵀ buffers swapped (write: block j + 1, read: block j)")
        self.next_stage("stage_k", "stage_kb")
        for r in [L["vtw"]] + L["vtr"]:
            p.v_xor_b32_e32(r, hex(LDS_VT_TOGGLE), r)

    # ------------------------------------------------------------------------------------------- block step
    def qk(self):
        """Sᵀ = K Qᵀ of block j (matrix phase): K operands by ds_read_b128 from the block's stage (read addresses +
        the stage offset), 2 d / 64 MFMAs into self.sT (the same for the full and the masked path)."""
        p, c, L = self.p, self.c, self.lds
        p.comment("K tiles (A operand of Sᵀ) from LDS: keys 32 kt + i of the block")
        ks = self.cfg.k_steps
        addr = {}
        for key, r in L["kr"].items():
            addr[key] = p.vreg(f"k_rd_cur{key[0]}{key[1]}")
            p.v_add_u32_e32(addr[key], self.s["stage_kb" if key[0] == 2 else "stage_k"], r)
        ka = [[p.vreg(f"k_op{kt}_{x}", 8) for x in range(ks)] for kt in range(2)]
        sT = self.sT
        for kt in range(2):
            for x in range(ks):
                for half in range(2):
                    p.ds_read_b128(ka[kt][x][4 * half:4 * half + 4], addr[(x, half)],
                                   offset=(2048 if x == 2 else 4096) * kt)
        p.comment("Sᵀ = K Qᵀ")
        for kt in range(2):
            for x in range(ks):
                p.mfma_scale_f32_32x32x64_fp8(sT[kt], ka[kt][x], self.qb[x], 0 if x == 0 else sT[kt], c["one"],
                                              c["one"], comment=f"keys {32 * kt}.., dims {64 * x}..")

    def part1(self, masked: bool):
        """The online softmax of block j (vector phase) from self.sT (S, before the logit factor c): the Lean P codes
        in the B layout and the block outputs self.bo that part2 (in the next matrix phase) reads."""
        p, a, s, v, c, st, sm, bo = self.p, self.a, self.s, self.v, self.c, self.st, self.sm, self.bo
        tag = "m" if masked else "f"
        sT = self.sT
        if masked:
            relb = p.vreg(f"rel_{tag}")
            p.v_subrev_u32_e32(relb, s["j0"], v["rel"], comment="n_i - 4h - j0")
            p.comment("row max over S (t = S c is not formed: c > 0, so max t = max S c); masked keys -inf")
            for kt in range(2):
                for r in range(16):
                    p.v_cmp_lt_i32_e64(sm["masked"], relb, 32 * kt + 8 * (r // 4) + r % 4 + 1)
                    p.v_cndmask_b32_e64(sT[kt][r], sT[kt][r], c["ninf"], sm["masked"])
        else:
            p.comment("row max over S (t = S c is not formed: c > 0, so max t = max S c)")
        mx, xa, xb = p.vreg(f"m_lane_{tag}"), p.vreg(f"swap_a_{tag}"), p.vreg(f"swap_b_{tag}")
        regs = [sT[kt][r] for kt in range(2) for r in range(16)]
        p.v_mov_b32_e32(mx, "0xff800000", comment="-inf: a NaN logit never becomes the max")
        for j in range(0, len(regs), 2):
            p.v_max3_f32(mx, mx, regs[j], regs[j + 1])
        p.v_mov_b32_e32(xa, mx)
        p.v_mov_b32_e32(xb, mx)
        p.op("v_permlane32_swap_b32", xa, xb)
        smax, mblk, neg, kbv, c0 = (p.vreg(f"{x}_{tag}") for x in ("s_max", "m_blk", "neg", "kb", "c0"))
        mnew, alpha2 = bo["mnew"], bo["alpha2"]
        alpha = alpha2[0]
        p.v_max3_f32(smax, mx, xa, xb)
        p.v_mul_f32_e32(mblk, a["scale_log2"], smax, comment="m_blk = fl(max S c) = max t (rounding is monotone)")
        p.v_max_f32_e32(mnew, st["m"], mblk)
        p.v_sub_f32_e32(alpha, st["m"], mnew)
        p.v_exp_f32_e32(alpha, alpha, comment="alpha = exp2(m - m_new)")
        p.v_mov_b32_e32(alpha2[1], alpha, comment="(alpha, alpha) for the packed accumulator update")
        p.v_sub_f32_e32(neg, mnew, mblk)
        p.v_min_f32_e32(neg, c["lim"], neg)
        p.v_cvt_u32_f32_e32(kbv, neg, comment="kb = (int)min(m_new - m_blk, 255); NaN -> 0")
        p.v_lshl_add_u32(c0, kbv, 3, c["maxc"])
        p.v_cvt_f32_u32_e32(c0, c0, comment="8 kb + 121")
        sb = bo["sb"]
        p.v_sub_u32_e32(sb, 127, kbv)
        p.v_cmp_gt_u32_e64(sm["kb_big"], kbv, c["kbmax"])
        p.v_cndmask_b32_e64(sb, sb, c["big_byte"], sm["kb_big"], comment="E8M0 byte of P: 127 - kb or unit")
        # e_blk = exp2(m_blk - m_new + (kb + 8)) and P_top for the corrected LSE
        eblk, ptop, y, y2 = bo["eblk"], bo["ptop"], p.vreg(f"y_{tag}"), p.vreg(f"y2_{tag}")
        p.v_add_u32_e32(eblk, TOP_EXPONENT, kbv)
        p.v_cvt_f32_u32_e32(eblk, eblk)
        p.v_sub_f32_e32(y, mblk, mnew, comment="dmax")
        p.v_add_f32_e32(eblk, y, eblk)
        p.v_exp_f32_e32(eblk, eblk, comment="e_blk = exp2(dmax + kb + 8)")
        b = p.vreg(f"b_{tag}", 2)
        p.v_and_b32_e32(y, "0x7fffffff", mnew)
        p.v_cmp_gt_u32_e64(sm["fused"], s["fused_lim"], y, comment="rows of the fused form: |m_new| < 2^16, c >= 2^-122")
        p.v_fma_f32(b[0], mnew, s["neg8"], c0, comment="b = (8 kb + 121) - 8 m_new (8 m_new exact: one rounding)")
        code = p.vreg(f"code_{tag}")

        def lean_p(dst, sv, both, tv=None):
            """Lean P code of S value `sv` (t value `tv`, else S c): y = fma(S, 8 c, b); `both`: rows outside the
            fused form take the two-step y = (t - m_new) 8 + c0 (per lane)."""
            p.v_fma_f32(y, sv, c["c8"][0], b[0])
            if both:
                if tv is None:
                    tv = y2
                    p.v_mul_f32_e32(y2, a["scale_log2"], sv, comment="t = S c")
                p.v_sub_f32_e32(y2, tv, mnew)
                p.v_fma_f32(y2, y2, c["eight"], c0)
                p.v_cndmask_b32_e64(y, y2, y, sm["fused"], comment="the row's form")
            p.v_cmp_u_f32_e64(sm["isnan"], y, y)
            p.v_med3_f32(y, y, 0, c["maxf"])
            p.v_rndne_f32_e32(y, y)
            p.v_cvt_u32_f32_e32(dst, y)
            p.v_cndmask_b32_e64(dst, dst, c["nanc"], sm["isnan"])

        def p_top(both):
            if both:
                lean_p(code, smax, True, mblk)
            else:
                p.comment("P_top of a fused row: y(max S) is never NaN (b finite); clamp, MAGIC_ROUND, decode byte 0")
                p.v_fma_f32(code, smax, c["c8"][0], b[0])
                p.v_med3_f32(code, code, 0, c["maxf"])
                p.v_add_f32_e32(code, c["magic2"][0], code)
            p.v_cvt_f32_fp8_e32(ptop, code, comment="P_top: the block's largest code (that of max S)")

        p_top(False)
        pa = bo["pa"]
        slot = {0: 0, 1: 2, 2: 1, 3: 3}
        if masked:
            va_ = bo["va"]
            vbyte = p.vreg(f"visb_{tag}")
            p.comment("rows that see a key of the block and are not of the fused form (rare): both forms per lane")
            p.v_cmp_gt_i32_e64(sm["rare"], v["nvis"], s["j0"])
            p.op("s_andn2_b64", sm["rare"], sm["rare"], sm["fused"])
            p.s_cbranch_scc1(f".Lboth_forms_{tag}")
            for both in (False, True):
                if both:
                    p.s_branch(f".Lcodes_done_{tag}")
                    p.label(f".Lboth_forms_{tag}")
                    p_top(True)
                p.comment("Lean P codes, packed into the f8f6f4 B layout in natural key order")
                for kt in range(2):
                    for r in range(16):
                        lean_p(code, sT[kt][r], both)
                        p.v_cmp_lt_i32_e64(sm["masked"], relb, 32 * kt + 8 * (r // 4) + r % 4 + 1)
                        p.v_cndmask_b32_e64(code, code, 0, sm["masked"], comment="masked key: code 0")
                        p.v_cndmask_b32_e64(vbyte, c["vis_code"], 0, sm["masked"])
                        for dst, src in ((pa[4 * kt + slot[r // 4]], code), (va_[4 * kt + slot[r // 4]], vbyte)):
                            if r % 4 == 0:
                                p.v_mov_b32_e32(dst, src)
                            else:
                                p.v_lshl_or_b32(dst, src, 8 * (r % 4), dst)
            p.label(f".Lcodes_done_{tag}")
        else:
            self.lean_p_full(sT, b, pa, slot, lambda: p_top(True), lean_p)
        p.comment("P into the B layout: keys exchanged between the lane halves")
        for kt in range(2):
            for reg in ([pa, va_] if masked else [pa]):
                p.op("v_permlane32_swap_b32", reg[4 * kt + 0], reg[4 * kt + 1], comment="keys 4-7 <-> 16-19")
                p.op("v_permlane32_swap_b32", reg[4 * kt + 2], reg[4 * kt + 3], comment="keys 12-15 <-> 24-27")
        p.comment("l_blk, the exact sum of the block's code values per query, by an MFMA against a ones operand: every")
        p.comment("register of lane l holds it for query l % 32 (multiples of 2^-9 below 2^15: exact in any order);")
        p.comment("read by the next matrix phase, whose first P V result tile it occupies until then")
        p.mfma_scale_f32_32x32x64_fp8(self.sum_tile, self.ones, pa, 0, c["one"], c["one"], comment="l_blk")
        nexp, sblk = p.vreg(f"nexp_{tag}"), bo["sblk"]
        p.v_add_u32_e32(nexp, TOP_EXPONENT, kbv)
        p.v_sub_u32_e32(nexp, 0, nexp)
        p.v_ldexp_f32(sblk, 1.0, nexp, comment="s_blk = 2^-(kb + 8)")

    def part2(self, masked: bool):
        """Second half of a 64-key block (after barrier B: Vᵀ complete in LDS): (P V)ᵀ = Vᵀ Pᵀ with the block scale,
        the accumulator update and the row state, from the block outputs self.bo. The masked form zeroes V's NaN
        bytes in the Vᵀ operands it reads and counts the visible NaN codes with a second MFMA."""
        p, a, s, v, c, st, sm, bo = self.p, self.a, self.s, self.v, self.c, self.st, self.sm, self.bo
        tag = "m" if masked else "f"
        pa, va_, sb, alpha2, sblk = bo["pa"], bo["va"], bo["sb"], bo["alpha2"], bo["sblk"]
        alpha, ptop, eblk, mnew = alpha2[0], bo["ptop"], bo["eblk"], bo["mnew"]
        if masked:
            bits, low, t2, t3 = (p.vreg(f"{x}_{tag}") for x in ("nanbits", "nanlow", "nan_t2", "nan_t3"))
        p.comment("Vᵀ A operands from LDS; (P V)ᵀ = Vᵀ Pᵀ with s_blk in the E8M0 operands" +
                  ("" if masked else "; the MFMA of dims 32 (et + 1).. issues before the accumulator update of dims "
                   "32 et.. (two result tiles)"))
        lblk = p.vreg(f"l_blk_{tag}")
        p.v_mov_b32_e32(lblk, self.sum_tile[0], comment="l_blk of the block (the vector phase's MFMA)")
        # the first result tile is the l_blk tile (free once l_blk is read); the masked path (rare) keeps one tile
        # of each: its NaN counts need 16 more VGPRs
        pvs = [self.sum_tile] * 2 if masked else [self.sum_tile, p.vreg(f"pv_{tag}1", 16)]
        cnts = [p.vreg(f"nan_count_{tag}", 16)] * 2 if masked else None
        if masked:
            p.v_cmp_gt_i32_e64(sm["skip"], v["nvis"], s["j0p"], comment="rows that see a key of the block")

        def issue(et):
            pv = pvs[et % 2]
            vb = p.vreg(f"vt_{tag}{et}", 8)
            for half in range(2):
                p.ds_read_b128(vb[4 * half:4 * half + 4], self.lds["vtr"][half], offset=2048 * et)
            if masked:
                vn = p.vreg(f"vn_{tag}{et}", 8)
                for r in range(8):
                    x = vb[r]
                    p.v_and_b32_e32(bits, "0x7f7f7f7f", x)
                    p.v_add_u32_e32(bits, "0x1010101", bits, comment="byte 0x7f -> 0x80, no carries")
                    p.v_and_b32_e32(bits, "0x80808080", bits, comment="0x80 per NaN byte")
                    p.v_lshrrev_b32_e32(t2, 2, bits)
                    p.v_lshrrev_b32_e32(t3, 3, bits)
                    p.v_lshrrev_b32_e32(low, 4, bits)
                    p.v_or3_b32(vn[r], t2, t3, low, comment="indicator code 0x38 (1.0) per NaN byte")
                    p.v_lshrrev_b32_e32(low, 7, bits)
                    p.v_sub_u32_e32(low, bits, low, comment="0x7f per NaN byte")
                    p.v_or_b32_e32(bits, bits, low, comment="0xff per NaN byte")
                    p.op("v_bfi_b32", x, bits, 0, x, comment="NaN bytes -> 0")
            p.mfma_scale_f32_32x32x64_fp8(pv, vb, pa, 0, c["scale_v"], sb, comment=f"(P V)ᵀ s_blk, dims {32 * et}..")
            if masked:
                p.mfma_scale_f32_32x32x64_fp8(cnts[et % 2], vn, va_, 0, c["one"], c["one"],
                                              comment="visible NaN V codes")

        def finish(et):
            pv = pvs[et % 2]
            p.op("s_and_saveexec_b64", sm["saved_exec"], sm["kb_big"])
            p.s_cbranch_execz(f".Lrare_kb_{tag}{et}", comment="no row with kb > 123 (the common case): skip")
            for r in range(16):
                p.v_mul_f32_e32(pv[r], pv[r], sblk)
            p.label(f".Lrare_kb_{tag}{et}")
            p.op("s_mov_b64", "exec", sm["saved_exec"])
            if masked:
                cnt = cnts[et % 2]
                for r in range(16):
                    p.v_cmp_gt_f32_e64(sm["has_nan"], cnt[r], 0)
                    p.v_cndmask_b32_e64(pv[r], pv[r], c["qnan"], sm["has_nan"])
                p.op("s_and_saveexec_b64", sm["saved_exec"], sm["skip"])
            for r in range(0, 16, 2):
                p.v_pk_fma_f32(self.acc[et][r:r + 2], self.acc[et][r:r + 2], alpha2, pv[r:r + 2],
                               comment="acc = fma(acc, alpha, pv s_blk), two per op")
            if masked:
                p.op("s_mov_b64", "exec", sm["saved_exec"])

        if masked:
            for et in range(4):
                issue(et)
                finish(et)
        else:
            issue(0)
            for et in range(1, 4):
                issue(et)
                finish(et - 1)
            finish(3)
        p.comment("row state: l, l2 (corrected LSE), m" + (" (rows that see a key of the block)" if masked else ""))
        lt = p.vreg(f"l_term_{tag}")
        p.v_sub_f32_e32(lt, lblk, ptop)
        p.v_mul_f32_e32(lt, lt, c["lse_rest"])
        p.v_add_f32_e32(lt, lt, eblk)
        p.v_mul_f32_e32(lt, lt, sblk)
        p.v_mul_f32_e32(lblk, lblk, sblk)
        if masked:
            p.op("s_and_saveexec_b64", sm["saved_exec"], sm["skip"])
        p.v_fma_f32(st["l"], st["l"], alpha, lblk)
        p.v_fma_f32(st["l2"], st["l2"], alpha, lt)
        p.v_mov_b32_e32(st["m"], mnew)
        if masked:
            p.op("s_mov_b64", "exec", sm["saved_exec"])

    def lean_p_full(self, sT, b, pa, slot, p_top_both, lean_p):
        """Lean P codes of a full block (no masked key) with packed fp32 ops, packed into the B layout `pa`: y =
        fma(S, 8 c, b) two logits per op (the same IEEE operation per element), the clamp, the rounding by adding
        MAGIC_ROUND (RNE, like v_rndne_f32) whose byte 0 is the code. A NaN S (the code 0x7F) or a row outside the
        fused form takes the per-element path (`lean_p` with both forms, `p_top_both` for P_top) after one
        wave-uniform test."""
        p, c, sm = self.p, self.c, self.sm
        tag = "f"
        p.v_mov_b32_e32(b[1], b[0], comment="(b, b) for the packed FMA")
        p.comment("NaN test: a NaN S in the lane makes the sum of its S NaN (|S| < 2^26: the sum stays finite)")
        ss = [sT[kt][r:r + 2] for kt in range(2) for r in range(0, 16, 2)]
        acc2 = p.vreg("ssum", 2)
        p.v_pk_add_f32(acc2, ss[0], ss[1])
        for s2 in ss[2:]:
            p.v_pk_add_f32(acc2, acc2, s2)
        p.v_add_f32_e32(acc2[0], acc2[0], acc2[1])
        p.v_cmp_u_f32_e64("vcc", acc2[0], acc2[0])
        p.op("s_andn2_b64", sm["rare"], "exec", sm["fused"], comment="rows outside the fused form")
        p.op("s_or_b64", sm["rare"], sm["rare"], "vcc")
        p.s_cbranch_scc1(f".Lper_element_{tag}", comment="a NaN logit or a row beyond 2^16 (rare): per-element codes")
        p.comment("Lean P: y = fma(S, 8 c, b) in place, two logits per op; clamp to [0, 121]; RNE by MAGIC_ROUND")
        for kt in range(2):
            for r in range(0, 16, 2):
                p.v_pk_fma_f32(sT[kt][r:r + 2], sT[kt][r:r + 2], c["c8"], b)
        for kt in range(2):
            for r in range(16):
                p.v_med3_f32(sT[kt][r], sT[kt][r], 0, c["maxf"])
            for r in range(0, 16, 2):
                p.v_pk_add_f32(sT[kt][r:r + 2], sT[kt][r:r + 2], c["magic2"])
        p.comment("pack: 4 codes per dword (v_perm_b32)")
        x01, x23 = p.vreg("codes01"), p.vreg("codes23")
        for kt in range(2):
            for g in range(4):
                y = sT[kt][4 * g:4 * g + 4]
                p.v_perm_b32(x01, y[1], y[0], self.sel["5010400"], comment="codes r, r+1 in bytes 0, 1")
                p.v_perm_b32(x23, y[3], y[2], self.sel["5010400"])
                p.v_perm_b32(pa[4 * kt + slot[g]], x23, x01, self.sel["5040100"], comment="4 codes")
        p.s_branch(f".Lcodes_done_{tag}")
        p.label(f".Lper_element_{tag}")
        p.comment("per element from S: the row's form, NaN -> 0x7F, clamp, round, convert, pack")
        p_top_both()
        code = p.vreg("code_nan_path")
        for kt in range(2):
            for r in range(16):
                lean_p(code, sT[kt][r], True)
                dst = pa[4 * kt + slot[r // 4]]
                if r % 4 == 0:
                    p.v_mov_b32_e32(dst, code)
                else:
                    p.v_lshl_or_b32(dst, code, 8 * (r % 4), dst)
        p.label(f".Lcodes_done_{tag}")

    # ----------------------------------------------------------------------------------------------- epilogue
    def epilogue(self):
        p, a, s, v, c, st, sm = self.p, self.a, self.s, self.v, self.c, self.st, self.sm
        p.label(".Lepilogue")
        p.comment("out = (acc / l) v_descale (IEEE division), bf16; rows that see no key: 0")
        dsc, nden, rcp, e1, qq, num, res = (p.vreg(f"div_{x}") for x in ("den", "nden", "rcp", "err", "q", "num",
                                                                          "res"))
        dead = sm["skip"]
        p.v_cmp_eq_u32_e64(dead, v["nvis"], 0)
        packed = [p.vreg(f"out_pk{et}", 8) for et in range(4)]
        for et in range(4):
            for r in range(16):
                x = self.acc[et][r]
                p.op("v_div_scale_f32", dsc, "vcc", st["l"], st["l"], x)
                p.op("v_div_scale_f32", num, "vcc", x, st["l"], x)
                p.v_rcp_f32_e32(rcp, dsc)
                p.v_xor_b32_e32(nden, "0x80000000", dsc)
                p.v_fma_f32(e1, nden, rcp, 1.0)
                p.v_fma_f32(rcp, e1, rcp, rcp)
                p.v_mul_f32_e32(qq, num, rcp)
                p.v_fma_f32(e1, nden, qq, num)
                p.v_fma_f32(qq, e1, rcp, qq)
                p.v_fma_f32(e1, nden, qq, num)
                p.op("v_div_fmas_f32", res, e1, rcp, qq)
                p.op("v_div_fixup_f32", res, res, st["l"], x)
                p.v_mul_f32_e32(res, a["v_descale"], res)
                p.v_cndmask_b32_e64(x, res, 0, dead)
            for q4 in range(4):
                for pr in range(2):
                    p.v_cvt_pk_bf16_f32(packed[et][2 * q4 + pr], self.acc[et][4 * q4 + 2 * pr],
                                        self.acc[et][4 * q4 + 2 * pr + 1])
        p.comment("stores under EXEC = rows < seqlen_q: dims 32 et + 8 q + 4 h .. + 3 of row i")
        ooff, rows = p.vreg("out_off"), p.sreg("valid_rows")
        p.s_sub_u32(rows, a["seqlen_q"], s["row0"])
        p.v_cmp_lt_u32_e64(sm["masked"], v["i"], rows)
        p.op("s_and_saveexec_b64", sm["saved_exec"], sm["masked"])
        p.s_lshl_b32(s["tmp"], a["out_row_stride"], 1)
        p.v_mul_lo_u32(ooff, v["i"], s["tmp"])
        p.v_lshl_add_u32(ooff, v["h"], 3, ooff, comment="i * row bytes + 8 h")
        for et in range(4):
            for q4 in range(4):
                p.buffer_store_dwordx2(packed[et][2 * q4:2 * q4 + 2], ooff, self.rs["out"], 0, offen=True,
                                       offset=2 * (32 * et + 8 * q4))
        p.comment("lse = (m + log2(l2)) ln 2 (lanes h = 0), when lse is not null")
        p.s_or_b32(s["tmp"], a["lse"][0], a["lse"][1])
        p.s_cmp_eq_u32(s["tmp"], 0)
        p.s_cbranch_scc1(".Lend")
        lse, loff = p.vreg("lse"), p.vreg("lse_off")
        p.v_log_f32_e32(lse, st["l2"])
        p.v_add_f32_e32(lse, st["m"], lse)
        p.v_mul_f32_e32(lse, _hexf(_f32(LN2_F32)), lse)
        p.v_cndmask_b32_e64(lse, lse, c["ninf"], dead, comment="no key: -inf")
        p.v_cmp_eq_u32_e64(sm["masked"], v["h"], 0)
        p.op("s_and_b64", "exec", "exec", sm["masked"])
        p.v_lshlrev_b32_e32(loff, 2, v["i"])
        p.buffer_store_dword(lse, loff, self.rs["lse"], 0, offen=True)
        p.label(".Lend")
        p.s_endpgm()

    def build(self) -> KernelSpec:
        p = self.p
        self.setup()
        s = self.s
        for x in ("j0", "j0p", "prev", "nloop", "stage_k", "dma_k") + (("stage_kb", "dma_kb") if self.cfg.d > 128
                                                                        else ()):
            s[x] = p.sreg(f"s_{x}")
        self.rk, self.rv = p.sreg("rsrc_k", 4), p.sreg("rsrc_v", 4)
        self.sT = [p.vreg(f"s_t{kt}", 16) for kt in range(2)]
        self.sum_tile = p.vreg("l_blk_tile", 16)
        self.ones = p.vreg("ones_a", 8)
        p.comment("A operand of the l_blk MFMA: fp8 1.0 (0x38) in every byte; l_blk tile defined before the loop")
        for r in range(8):
            p.v_mov_b32_e32(self.ones[r], "0x38383838")
        for r in range(16):
            p.v_mov_b32_e32(self.sum_tile[r], 0)
        bo = self.bo = {}
        for x, n in (("pa", 8), ("va", 8), ("sb", 1), ("alpha2", 2), ("sblk", 1), ("ptop", 1),
                     ("eblk", 1), ("mnew", 1)):
            bo[x] = p.vreg(f"blk_{x}", n)
        p.comment("block outputs of the vector phase, read by the next matrix phase (defined before the first)")
        for x in bo.values():
            for r in range(x.n):
                p.v_mov_b32_e32(x[r], 0)
        p.op("s_mov_b64", self.sm["kb_big"], 0)
        half = WAVES // 2
        p.comment("the workgroup's blocks: nblk_wg (0: no row of the workgroup sees a key)")
        p.s_cmp_eq_u32(s["nblk_wg"], 0)
        p.s_cbranch_scc1(".Lepilogue")
        for x in ("stage_k", "stage_kb", "dma_k", "dma_kb"):
            if x in s:
                p.s_mov_b32(s[x], 0)
        p.comment("LDS-DMA of block 0 into stage 0, in LDS for every wave at the first barrier")
        self.dma(publish=1)
        p.s_add_u32(s["nloop"], s["nblk_wg"], 1, comment="trips: the blocks and one matrix phase for the last P V")
        p.s_mov_b32(s["blk"], 0)
        p.s_barrier(comment="block 0 in LDS")
        p.comment(f"ping-pong: waves {half}..{WAVES - 1} (group B) run one phase behind waves 0..{half - 1} (group A):")
        p.comment("group B passes one extra barrier first, group A one after the loop (equal barrier counts)")
        p.s_cmp_lt_u32(s["wave"], half)
        p.s_cbranch_scc1(".Lgroup_a_start")
        p.s_barrier(comment="group B: one phase behind")
        p.label(".Lgroup_a_start")
        p.comment("LDS-DMA of block 1 into stage 1 (in LDS by the vector phase of block 0, as every prefetch: the")
        p.comment("loop's steady state)")
        p.s_cmp_lt_u32(s["nblk_wg"], 2)
        p.s_cbranch_scc1(".Lno_dma1")
        self.dma(publish=2)
        p.label(".Lno_dma1")
        with p.loop(".Lblk", s["blk"], s["nloop"]):
            p.s_lshl_b32(s["j0"], s["blk"], 6, comment="first key of block j")
            p.s_sub_u32(s["j0p"], s["j0"], 64, comment="first key of block j - 1")
            p.s_sub_u32(s["prev"], s["blk"], 1, comment="j - 1 (2^32 - 1 for j = 0: no block)")
            p.s_barrier(comment="matrix phase of block j: K of block j in LDS (group A: this wave's Vᵀ share of "
                        "block j - 1 too)")
            p.s_setprio(1, comment="matrix phase: this wave's MFMAs first")
            p.comment("Sᵀ = K Qᵀ of block j (waves that see a key of it)")
            p.s_cmp_lt_u32(s["blk"], s["nblk"])
            p.s_cbranch_scc0(".Lqk_done")
            self.qk()
            p.label(".Lqk_done")
            p.comment("this wave's share of the Vᵀ of block j")
            p.s_cmp_lt_u32(s["blk"], s["nblk_wg"])
            p.s_cbranch_scc0(".Lno_transpose")
            self.transpose_share()
            p.label(".Lno_transpose")
            p.comment("LDS-DMA of block j + 2 (in LDS by the vector phase of block j + 1: three barriers on). Issued in")
            p.comment("every trip (blocks past the workgroup's last one are loaded and never read; past seqlen_k the")
            p.comment("V#s are empty and load zeros), so that every path reaches the barriers with the same VMEM")
            p.comment("operations in flight and the computed vmcnt keeps the prefetch in flight across them")
            self.dma(publish=3)
            p.comment("P V of block j - 1: full, masked or nothing")
            p.s_cmp_lt_u32(s["prev"], s["nfull"])
            p.s_cbranch_scc1(".Lp2_full")
            p.s_cmp_lt_u32(s["prev"], s["nblk"])
            p.s_cbranch_scc0(".Lp2_done")
            self.part2(masked=True)
            p.s_branch(".Lp2_done")
            p.label(".Lp2_full")
            self.part2(masked=False)
            p.label(".Lp2_done")
            p.s_setprio(0)
            p.s_barrier(comment="vector phase of block j: the other group's matrix phase runs meanwhile")
            p.comment("online softmax and Lean P of block j: full, masked or nothing")
            p.s_cmp_lt_u32(s["blk"], s["nfull"])
            p.s_cbranch_scc1(".Lp1_full")
            p.s_cmp_lt_u32(s["blk"], s["nblk"])
            p.s_cbranch_scc0(".Lp1_done")
            self.part1(masked=True)
            p.s_branch(".Lp1_done")
            p.label(".Lp1_full")
            self.part1(masked=False)
            p.label(".Lp1_done")
            self.toggle_stage()
        p.s_cmp_ge_u32(s["wave"], half)
        p.s_cbranch_scc1(".Lgroup_b_end")
        p.s_barrier(comment="group A: the barrier group B passed first")
        p.label(".Lgroup_b_end")
        p.s_barrier(comment="every LDS-DMA of the workgroup complete before its waves end")
        self.epilogue()
        return KernelSpec(self.cfg.name, self.cfg.description, self.args, p, workgroup_size=64 * WAVES,
                          lds_bytes=lds_bytes(self.cfg.d), workgroup_ids=3)


def build(cfg: Config = Config()) -> KernelSpec:
    if (cfg.m, cfg.d, cfg.dv) not in ((32, 128, 128), (32, 192, 128)):
        raise ValueError(f"unsupported FP8 attention config {cfg}")
    return _Kernel(cfg).build()
