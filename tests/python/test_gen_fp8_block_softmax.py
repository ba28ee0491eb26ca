"""A step of the FP8 block step through the new pipeline: one wave computes, for 32 queries x one 64-key block
(hd 128, e4m3fn), Sᵀ = K Qᵀ with the scaled f8f6f4 MFMA (K as A, Q as B, so lane l holds query l % 32), the
log2-domain logits t = S * c, the block row max over 64 keys (in-lane v_max3 + a v_permlane32_swap exchange with
lane l ^ 32), m_new = max(m_in, m_blk), the block offset kb and Lean P's e4m3 codes — the FP8 specification's
STEP 1 and the first half of STEP 2 (include/zyfa/host/fp8_spec.hpp), with Lean P in its two-step form (the
specification's form for running maxima of 2^16 and beyond; its fused form, one FMA from S, is tested in
test_gen_lean_p.py and in the generated kernels, test_gen_fp8_attention.py), against that form. A test kernel built
only with the generator IR; not shipped.

Bits: the specification sums S in fp32 in increasing head-dim order from +0. The emulator's ``fp32_seq`` MFMA order
is exactly that (the two 64-dim MFMAs chain through C), so there every output is bit-exact. Under ``fp64`` and
``fp32_block`` S differs from the specification's rounding by at most n·2⁻²⁴·Σ|q k| (n = 129 / 36 / 2); t moves
by at most that times |c|, y = 8 (t − m_new) + const by 8 times it, so a Lean P code may move by one step where y
lies within that distance of a rounding boundary: codes are checked to be within ±1 there, m_new and kb exactly
when no such boundary is near (the inputs below keep the max well away from ties)."""
import struct

import ml_dtypes
import numpy as np
import pytest

from gfx950emu import Machine, Program as EmuProgram, Semantics
from test_gen_lean_p import MAX_CODE, lean_p_two_step_reference
from zyfa_gen.emit import emit_kernel
from zyfa_gen.ir import Program
from zyfa_gen.kernel import Arg, KernelSpec, load_kernargs

E4M3 = ml_dtypes.float8_e4m3fn
ARGS = [Arg("q", "ptr", "const std::uint8_t*", "Q [32, 128] e4m3fn, contiguous", const=True),
        Arg("k", "ptr", "const std::uint8_t*", "K [64, 128] e4m3fn, contiguous", const=True),
        Arg("m_in", "ptr", "const float*", "running max before the block, [32]", const=True),
        Arg("code", "ptr", "std::uint8_t*", "P codes [32, 64]"),
        Arg("m_new", "ptr", "float*", "running max after the block, [64] (lane l: query l % 32)"),
        Arg("kb", "ptr", "std::uint32_t*", "block offset, [64]"),
        Arg("c", "f32", "float", "log2-domain logit scale")]


def build() -> KernelSpec:
    p = Program()
    kern = p.sreg("kernarg_ptr", 2, pin=0)
    lane = p.vreg("lane", pin=0)
    a = load_kernargs(p, ARGS, kern)
    rs = {}
    for name, recs in (("q", 32 * 128), ("k", 64 * 128), ("m_in", 32 * 4), ("code", 32 * 64), ("m_new", 64 * 4),
                       ("kb", 64 * 4)):
        r = rs[name] = p.sreg(f"rsrc_{name}", 4)
        p.s_mov_b32(r[0], a[name][0])
        p.s_and_b32(r[1], a[name][1], "0xffff")
        p.s_mov_b32(r[2], hex(recs))
        p.s_mov_b32(r[3], "0x20000")
    i_, h_, off, tmp = p.vreg("i"), p.vreg("h"), p.vreg("row_off"), p.vreg("tmp")
    p.v_and_b32_e32(i_, 31, lane)
    p.v_lshrrev_b32_e32(h_, 5, lane)
    p.v_lshlrev_b32_e32(tmp, 4, h_)
    p.v_lshl_add_u32(off, i_, 7, tmp, comment="row i * 128 + 16 h")
    # operands: Q (B) and K (A, two 32-key tiles), two 64-dim steps each, f8f6f4 layout
    qb = [p.vreg(f"q{st}", 8) for st in range(2)]
    ka = [[p.vreg(f"k{kt}_{st}", 8) for st in range(2)] for kt in range(2)]
    ktile = p.sreg("ktile_off")
    p.s_mov_b32(ktile, hex(32 * 128))
    for st in range(2):
        for half in range(2):
            p.buffer_load_dwordx4(qb[st][4 * half:4 * half + 4], off, rs["q"], 0, offen=True,
                                  offset=64 * st + 32 * half)
            for kt in range(2):
                p.buffer_load_dwordx4(ka[kt][st][4 * half:4 * half + 4], off, rs["k"], "0" if kt == 0 else ktile,
                                      offen=True, offset=64 * st + 32 * half)
    one = p.vreg("scale_one")
    p.v_mov_b32_e32(one, 127)
    st_ = [p.vreg(f"st{kt}", 16) for kt in range(2)]
    for kt in range(2):
        for st in range(2):
            p.mfma_scale_f32_32x32x64_fp8(st_[kt], ka[kt][st], qb[st], 0 if st == 0 else st_[kt], one, one,
                                          comment=f"S^T keys {32 * kt}.., dims {64 * st}..")
    # t = S * c
    for kt in range(2):
        for r in range(16):
            p.v_mul_f32_e32(st_[kt][r], a["c"], st_[kt][r])
    # block max: in-lane over 32 keys, then lane l ^ 32
    mx, xa, xb = p.vreg("m_lane"), p.vreg("swap_a"), p.vreg("swap_b")
    p.v_max3_f32(mx, st_[0][0], st_[0][1], st_[0][2])
    regs = [st_[kt][r] for kt in range(2) for r in range(16)][3:]
    for j in range(0, len(regs) - 1, 2):
        p.v_max3_f32(mx, mx, regs[j], regs[j + 1])
    p.v_max_f32_e32(mx, regs[-1], mx)
    p.v_mov_b32_e32(xa, mx)
    p.v_mov_b32_e32(xb, mx)
    p.op("v_permlane32_swap_b32", xa, xb, comment="xa[32+i] = m[i], xb[i] = m[32+i]")
    mblk, mnew, neg, kbv, c0 = (p.vreg(x) for x in ("m_blk", "m_new", "neg_dmax", "kb", "c0"))
    p.v_max3_f32(mblk, mx, xa, xb)
    moff, min_ = p.vreg("m_off"), p.vreg("m_in")
    p.v_lshlrev_b32_e32(moff, 2, i_)
    p.buffer_load_dword(min_, moff, rs["m_in"], 0, offen=True)
    p.v_max_f32_e32(mnew, min_, mblk)
    p.v_sub_f32_e32(neg, mnew, mblk, comment="-(m_blk - m_new)")
    lim = p.vreg("c255")
    p.v_mov_b32_e32(lim, "255.0")
    p.v_min_f32_e32(neg, lim, neg)
    p.v_cvt_u32_f32_e32(kbv, neg, comment="kb = (int)min(-dmax, 255); NaN and negatives -> 0")
    maxc, maxf, nanc = p.vreg("max_code"), p.vreg("max_code_f32"), p.vreg("nan_code")
    p.v_mov_b32_e32(maxc, MAX_CODE)
    p.v_mov_b32_e32(maxf, f"{MAX_CODE}.0")
    p.v_mov_b32_e32(nanc, "0x7f")
    p.v_lshl_add_u32(c0, kbv, 3, maxc)
    p.v_cvt_f32_u32_e32(c0, c0)
    lo = p.vreg("lane_off")
    p.v_lshlrev_b32_e32(lo, 2, lane)
    p.buffer_store_dword(mnew, lo, rs["m_new"], 0, offen=True)
    p.buffer_store_dword(kbv, lo, rs["kb"], 0, offen=True)
    # Lean P codes, stored as bytes: code[i][32 kt + 8 (r / 4) + 4 h + r % 4]
    coff, y, code = p.vreg("code_off"), p.vreg("y"), p.vreg("code")
    isnan = p.sreg("isnan", 2)
    p.v_lshlrev_b32_e32(tmp, 2, h_)
    p.v_lshl_add_u32(coff, i_, 6, tmp, comment="i * 64 + 4 h")
    for kt in range(2):
        for r in range(16):
            t = st_[kt][r]
            p.v_sub_f32_e32(y, t, mnew)
            p.v_fma_f32(y, y, 8.0, c0)
            p.v_cmp_u_f32_e64(isnan, y, y)
            p.v_med3_f32(y, y, 0, maxf)
            p.v_rndne_f32_e32(y, y)
            p.v_cvt_u32_f32_e32(code, y)
            p.v_cndmask_b32_e64(code, code, nanc, isnan)
            p.buffer_store_byte(code, coff, rs["code"], 0, offen=True, offset=32 * kt + 8 * (r // 4) + r % 4)
    p.s_endpgm()
    return KernelSpec("zyfa_test_fp8_block_softmax", "FP8 block softmax front half (test kernel)", ARGS, p)


def reference(qv, kv, m_in, c):
    """The specification in fp32: S (sequential over d from +0), t, m_blk, m_new, kb, Lean P codes."""
    s = np.zeros((32, 64), np.float32)
    for d in range(128):
        s = (s + (qv[:, d:d + 1].astype(np.float32) * kv[:, d][None, :].astype(np.float32))).astype(np.float32)
    t = (s * np.float32(c)).astype(np.float32)
    m_blk = np.fmax.reduce(t, axis=1, initial=-np.inf).astype(np.float32)
    m_new = np.maximum(m_in, m_blk).astype(np.float32)
    neg = -(m_blk - m_new).astype(np.float32)
    kb = np.where(neg >= 255, 255, np.where(neg >= 0, np.floor(np.nan_to_num(neg)), 0)).astype(np.uint32)
    code = lean_p_two_step_reference(t, m_new[:, None], np.broadcast_to(kb[:, None], t.shape))
    return code, m_new, kb, s


def _inputs():
    rng = np.random.default_rng(12)
    qc = rng.integers(0, 256, (32, 128)).astype(np.uint8)
    kc = rng.integers(0, 256, (64, 128)).astype(np.uint8)
    for x in (qc, kc):
        x[(x & 0x7F) == 0x7F] = 0x38  # no NaN codes (the max over a NaN logit is the next step's concern)
    qc[0, :] = 0x7E                   # max code 448 in a whole row
    kc[1, :] = 0xFE                   # and -448 in a whole key
    qc[2, :] = rng.integers(1, 8, 128)  # subnormal codes
    kc[5, :] = 0                      # an all-zero key
    m_in = rng.standard_normal(32).astype(np.float32) * 4
    m_in[:8] = -np.inf                # first block: the running max is the block max
    m_in[8] = np.float32(1e9)         # a far larger running max: kb saturates at 255, codes clamp to 0
    return qc, kc, m_in, np.float32(0.0883883476 * 1.4426950408889634)


@pytest.mark.parametrize("order", ["fp32_seq", "fp64", "fp32_block"])
def test_block_softmax_front_half_matches_the_specification(order):
    qc, kc, m_in, c = _inputs()
    asm = emit_kernel(build(), "tests/python/test_gen_fp8_block_softmax.py")
    mach = Machine(EmuProgram.from_asm_text(asm, Semantics(mfma_accumulate=order)))
    pq, pk, pm = mach.upload(qc), mach.upload(kc), mach.upload(m_in)
    pc, pn, pb = mach.alloc(32 * 64), mach.alloc(64 * 4), mach.alloc(64 * 4)
    mach.launch("zyfa_test_fp8_block_softmax", grid=(1, 1, 1), block=(64, 1, 1),
                kernarg=struct.pack("<QQQQQQf4x", pq, pk, pm, pc, pn, pb, c))
    code = mach.download(pc, np.uint8, (32, 64))
    m_new = mach.download(pn, np.float32, (64,))
    kb = mach.download(pb, np.uint32, (64,))
    qv, kv = qc.view(E4M3).astype(np.float32), kc.view(E4M3).astype(np.float32)
    want_code, want_m, want_kb, _ = reference(qv, kv, m_in, c)
    assert np.array_equal(m_new[:32], m_new[32:]) and np.array_equal(kb[:32], kb[32:])
    assert {0, MAX_CODE} <= set(np.unique(want_code).tolist()) and want_kb.max() == 255
    if order == "fp32_seq":
        np.testing.assert_array_equal(code, want_code)
        np.testing.assert_array_equal(m_new[:32].view(np.uint32), want_m.view(np.uint32))
        np.testing.assert_array_equal(kb[:32], want_kb)
    else:
        assert np.abs(code.astype(int) - want_code.astype(int)).max() <= 1
        np.testing.assert_array_equal(kb[:32], want_kb)
        n = {"fp64": 2, "fp32_block": 36}[order]
        mag = (np.abs(qv) @ np.abs(kv).T).max(axis=1) * abs(c)
        with np.errstate(invalid="ignore"):
            close = np.abs(m_new[:32] - want_m) <= n * 2.0 ** -24 * mag + 1e-30
        assert np.all(close | (m_new[:32] == want_m))


# ------------------------------------------------------------------------------------------------ full block step
STEP_ARGS = [Arg("q", "ptr", "const std::uint8_t*", "Q [32, 128] e4m3fn", const=True),
             Arg("k", "ptr", "const std::uint8_t*", "K [128 keys, 128] e4m3fn (keys >= seqlen_k are never used)",
                 const=True),
             Arg("vt", "ptr", "const std::uint8_t*", "V transposed: [128 dims, 128 keys] e4m3fn", const=True),
             Arg("acc", "ptr", "float*", "acc [32, 128] fp32 (unnormalised output)"),
             Arg("ml", "ptr", "float*", "[2][64]: running max m and row sum l per lane (query l % 32)"),
             Arg("c", "f32", "float", "log2-domain logit scale"),
             Arg("seqlen_k", "u32", "std::uint32_t", "keys of the sequence, 0..128"),
             Arg("row_base", "i32", "std::int32_t", "row i sees keys [0, clamp(i + row_base, 0, seqlen_k)): "
                 "causal_offset + 1 when causal (head_matrix.hpp visible_keys), seqlen_k otherwise")]

#: kb above which the E8M0 scale of P would make the MFMA's per-product scaling round partial sums in the fp32
#: subnormal range (products are multiples of 2^-18; scaled by 2^-(kb+8) they stay on the 2^-149 grid for
#: kb <= 123): such rows get the unit scale from the MFMA and s_blk from one v_mul under EXEC.
KB_E8M0_MAX = 123
SCALE_A_E8M0 = 119  # the V operand's scale byte: 2^-8 (kTopExponent); the P operand's byte is 127 - kb


def build_step() -> KernelSpec:
    """One FP8 block step for 32 queries x 128 keys (two 64-key blocks, online softmax from m = -inf, l = 0,
    acc = 0) with causal / sequence-length masking: row i (lane l, i = l % 32) sees keys j < n_i = clamp(i +
    row_base, 0, seqlen_k). Per block: Sᵀ, t (masked keys: -inf, so they never set the max), block max across the
    lane halves (v_permlane32_swap), m_new, alpha = exp2(m - m_new), kb, Lean P codes (NaN y: 0x7F; masked keys:
    code 0) packed into the f8f6f4 B layout in natural key order (two v_permlane32_swap per 32 keys), the exact
    row sum, (P·V)ᵀ = Vᵀ Pᵀ with the scaled MFMA whose E8M0 scale operands carry the block scale
    s_blk = 2^-(kb+8): byte 119 (2^-8) for every V row, byte 127 - kb for the row's P column (kb <= 123; rows with
    a larger kb get byte 135, a unit product scale, and s_blk by v_mul under EXEC — see KB_E8M0_MAX).
    acc = fma(acc, alpha, pv), l = fma(l, alpha, l_blk s_blk), m = m_new under EXEC = rows that see a key of the
    block (a block with no visible key leaves the row's state unchanged, as the specification skips it).
    NaN codes in V: the specification reads V only at visible keys, so a NaN V code at a masked key must not reach
    the row. V's NaN bytes are zeroed before the MFMA, and a second MFMA counts, per (dim, row), the visible keys
    whose V code is NaN (indicator codes 1.0 x visibility codes 1.0, exact in any order); a non-zero count makes
    pv NaN, as 0 x NaN does in the specification. (Needed only in blocks that cross the diagonal or seqlen_k; this
    test kernel does it in every block.) Straight-line and unscheduled: the correctness reference."""
    p = Program()
    kern = p.sreg("kernarg_ptr", 2, pin=0)
    lane = p.vreg("lane", pin=0)
    a = load_kernargs(p, STEP_ARGS, kern)
    rs = {}
    for name, recs in (("q", 32 * 128), ("k", 128 * 128), ("vt", 128 * 128), ("acc", 32 * 128 * 4), ("ml", 512)):
        r = rs[name] = p.sreg(f"rsrc_{name}", 4)
        p.s_mov_b32(r[0], a[name][0])
        p.s_and_b32(r[1], a[name][1], "0xffff")
        p.s_mov_b32(r[2], hex(recs))
        p.s_mov_b32(r[3], "0x20000")
    i_, h_, off, tmp = p.vreg("i"), p.vreg("h"), p.vreg("row_off"), p.vreg("tmp")
    p.v_and_b32_e32(i_, 31, lane)
    p.v_lshrrev_b32_e32(h_, 5, lane)
    p.v_lshlrev_b32_e32(tmp, 4, h_)
    p.v_lshl_add_u32(off, i_, 7, tmp, comment="row i * 128 + 16 h")
    # visible keys of the row: n = med3(i + row_base, 0, seqlen_k); rel = n - 4 h (key 32 kt + 8 (r/4) + 4 h + r%4
    # of a block is masked iff 32 kt + 8 (r/4) + r%4 >= rel - 64 blk)
    nvis, rel, sk = p.vreg("n_visible"), p.vreg("rel"), p.vreg("seqlen_k")
    p.v_mov_b32_e32(sk, a["seqlen_k"])
    p.v_add_u32_e32(nvis, a["row_base"], i_)
    p.op("v_med3_i32", nvis, nvis, 0, sk)
    p.v_lshlrev_b32_e32(tmp, 2, h_)
    p.v_sub_u32_e32(rel, nvis, tmp)
    one, sa = p.vreg("scale_one"), p.vreg("scale_v")
    p.v_mov_b32_e32(one, 127)
    p.v_mov_b32_e32(sa, SCALE_A_E8M0)
    qb = [p.vreg(f"q{st}", 8) for st in range(2)]
    for st in range(2):
        for half in range(2):
            p.buffer_load_dwordx4(qb[st][4 * half:4 * half + 4], off, rs["q"], 0, offen=True,
                                  offset=64 * st + 32 * half)
    maxc, maxf, nanc, lim, ninf, qnan = (p.vreg(x) for x in ("max_code", "max_code_f32", "nan_code", "c255",
                                                             "neg_inf", "qnan"))
    p.v_mov_b32_e32(maxc, MAX_CODE)
    p.v_mov_b32_e32(maxf, f"{MAX_CODE}.0")
    p.v_mov_b32_e32(nanc, "0x7f")
    p.v_mov_b32_e32(lim, "255.0")
    p.v_mov_b32_e32(ninf, "0xff800000")
    p.v_mov_b32_e32(qnan, "0x7fc00000")
    kbmax, big_byte, vis_code = p.vreg("kb_e8m0_max"), p.vreg("scale_unit_p"), p.vreg("vis_code")
    p.v_mov_b32_e32(kbmax, KB_E8M0_MAX)
    p.v_mov_b32_e32(big_byte, 254 - SCALE_A_E8M0)
    p.v_mov_b32_e32(vis_code, "0x38", comment="e4m3fn 1.0")
    m, l = p.vreg("m"), p.vreg("l")
    p.v_mov_b32_e32(m, "0xff800000", comment="m = -inf")
    p.v_mov_b32_e32(l, 0)
    acc = [p.vreg(f"acc{et}", 16) for et in range(4)]
    for et in range(4):
        for r in range(16):
            p.v_mov_b32_e32(acc[et][r], 0)
    toff = [p.sreg(f"tile{j}_off") for j in range(4)]
    for j in range(4):
        p.s_mov_b32(toff[j], hex(32 * 128 * j))
    isnan, masked, skip, big, saved, hasnan = (p.sreg(x, 2) for x in ("isnan", "masked", "skip", "kb_big",
                                                                      "saved_exec", "has_nan"))
    for blk in range(2):
        relb = p.vreg(f"rel{blk}")
        if blk == 0:
            p.v_mov_b32_e32(relb, rel)
        else:
            p.v_add_u32_e32(relb, hex((-64 * blk) & 0xFFFFFFFF), rel, comment="rel - 64 blk")
        # S^T for keys 64 blk .. 64 blk + 63
        ka = [[p.vreg(f"k{blk}_{kt}_{st}", 8) for st in range(2)] for kt in range(2)]
        for kt in range(2):
            for st in range(2):
                for half in range(2):
                    p.buffer_load_dwordx4(ka[kt][st][4 * half:4 * half + 4], off, rs["k"], toff[2 * blk + kt],
                                          offen=True, offset=64 * st + 32 * half)
        s = [p.vreg(f"s{blk}_{kt}", 16) for kt in range(2)]
        for kt in range(2):
            for st in range(2):
                p.mfma_scale_f32_32x32x64_fp8(s[kt], ka[kt][st], qb[st], 0 if st == 0 else s[kt], one, one)
        for kt in range(2):
            for r in range(16):
                p.v_mul_f32_e32(s[kt][r], a["c"], s[kt][r])
                p.v_cmp_lt_i32_e64(masked, relb, 32 * kt + 8 * (r // 4) + r % 4 + 1)
                p.v_cndmask_b32_e64(s[kt][r], s[kt][r], ninf, masked, comment="masked key: -inf")
        mx, xa, xb = p.vreg(f"m_lane{blk}"), p.vreg(f"swap_a{blk}"), p.vreg(f"swap_b{blk}")
        regs = [s[kt][r] for kt in range(2) for r in range(16)]
        p.v_mov_b32_e32(mx, "0xff800000", comment="-inf: a NaN logit never becomes the max (as std::max in the spec)")
        for j in range(0, len(regs), 2):
            p.v_max3_f32(mx, mx, regs[j], regs[j + 1])
        p.v_mov_b32_e32(xa, mx)
        p.v_mov_b32_e32(xb, mx)
        p.op("v_permlane32_swap_b32", xa, xb)
        mblk, mnew, neg, kbv, c0, alpha = (p.vreg(f"{x}{blk}") for x in ("m_blk", "m_new", "neg", "kb", "c0",
                                                                          "alpha"))
        p.v_max3_f32(mblk, mx, xa, xb)
        p.v_max_f32_e32(mnew, m, mblk)
        p.v_sub_f32_e32(alpha, m, mnew)
        p.v_exp_f32_e32(alpha, alpha, comment="alpha = exp2(m - m_new)")
        p.v_sub_f32_e32(neg, mnew, mblk)
        p.v_min_f32_e32(neg, lim, neg)
        p.v_cvt_u32_f32_e32(kbv, neg)
        p.v_lshl_add_u32(c0, kbv, 3, maxc)
        p.v_cvt_f32_u32_e32(c0, c0)
        # E8M0 scale byte of the P column: 127 - kb (kb <= KB_E8M0_MAX), else the unit product scale
        sb = p.vreg(f"scale_p{blk}")
        p.v_sub_u32_e32(sb, 127, kbv)
        p.v_cmp_gt_u32_e64(big, kbv, kbmax)
        p.v_cndmask_b32_e64(sb, sb, big_byte, big)
        # codes, their values (row sum), visibility codes; packing into the B layout
        pa, va_ = p.vreg(f"p{blk}", 8), p.vreg(f"vis{blk}", 8)
        lsum = p.vreg(f"l_lane{blk}")
        p.v_mov_b32_e32(lsum, 0)
        y, code, pv_, vb_ = p.vreg(f"y{blk}"), p.vreg(f"code{blk}"), p.vreg(f"pval{blk}"), p.vreg(f"visb{blk}")
        slot = {0: 0, 1: 2, 2: 1, 3: 3}  # dword g of a 32-key tile -> B-operand dword (before the exchange)
        for kt in range(2):
            for r in range(16):
                p.v_sub_f32_e32(y, s[kt][r], mnew)
                p.v_fma_f32(y, y, 8.0, c0)
                p.v_cmp_u_f32_e64(isnan, y, y)
                p.v_med3_f32(y, y, 0, maxf)
                p.v_rndne_f32_e32(y, y)
                p.v_cvt_u32_f32_e32(code, y)
                p.v_cndmask_b32_e64(code, code, nanc, isnan)
                p.v_cmp_lt_i32_e64(masked, relb, 32 * kt + 8 * (r // 4) + r % 4 + 1)
                p.v_cndmask_b32_e64(code, code, 0, masked, comment="masked key: code 0")
                p.v_cndmask_b32_e64(vb_, vis_code, 0, masked)
                p.v_cvt_f32_fp8_e32(pv_, code)
                p.v_add_f32_e32(lsum, lsum, pv_, comment="exact: multiples of 2^-9 below 2^15")
                for dst, src in ((pa[4 * kt + slot[r // 4]], code), (va_[4 * kt + slot[r // 4]], vb_)):
                    if r % 4 == 0:
                        p.v_mov_b32_e32(dst, src)
                    else:
                        p.v_lshl_or_b32(dst, src, 8 * (r % 4), dst)
            for reg in (pa, va_):
                p.op("v_permlane32_swap_b32", reg[4 * kt + 0], reg[4 * kt + 1], comment="keys 4-7 <-> 16-19")
                p.op("v_permlane32_swap_b32", reg[4 * kt + 2], reg[4 * kt + 3], comment="keys 12-15 <-> 24-27")
        la, lb = p.vreg(f"lswap_a{blk}"), p.vreg(f"lswap_b{blk}")
        p.v_mov_b32_e32(la, lsum)
        p.v_mov_b32_e32(lb, lsum)
        p.op("v_permlane32_swap_b32", la, lb)
        lblk = p.vreg(f"l_blk{blk}")
        p.v_add_f32_e32(lblk, la, lb, comment="l_blk: both lane halves (exact)")
        # s_blk = 2^-(kb + 8) for the row sum (and the rows with kb > KB_E8M0_MAX)
        nexp, sblk = p.vreg(f"nexp{blk}"), p.vreg(f"s_blk{blk}")
        p.v_add_u32_e32(nexp, 8, kbv)
        p.v_sub_u32_e32(nexp, 0, nexp)
        p.v_ldexp_f32(sblk, 1.0, nexp)
        p.v_mul_f32_e32(lblk, lblk, sblk)
        # V tiles: NaN bytes zeroed, NaN indicator codes (1.0) beside them
        vb = [p.vreg(f"vt{blk}_{et}", 8) for et in range(4)]
        vn = [p.vreg(f"vnan{blk}_{et}", 8) for et in range(4)]
        for et in range(4):
            for half in range(2):
                p.buffer_load_dwordx4(vb[et][4 * half:4 * half + 4], off, rs["vt"], toff[et], offen=True,
                                      offset=64 * blk + 32 * half)
        bits, low, t2, t3 = (p.vreg(f"{x}{blk}") for x in ("nanbits", "nanlow", "nan_t2", "nan_t3"))
        for et in range(4):
            for d in range(8):
                x = vb[et][d]
                p.v_and_b32_e32(bits, "0x7f7f7f7f", x)
                p.v_add_u32_e32(bits, "0x1010101", bits, comment="byte 0x7f -> 0x80, no carries")
                p.v_and_b32_e32(bits, "0x80808080", bits, comment="0x80 per NaN byte")
                p.v_lshrrev_b32_e32(t2, 2, bits)
                p.v_lshrrev_b32_e32(t3, 3, bits)
                p.v_lshrrev_b32_e32(low, 4, bits)
                p.v_or3_b32(vn[et][d], t2, t3, low, comment="indicator code 0x38 (1.0) per NaN byte")
                p.v_lshrrev_b32_e32(low, 7, bits)
                p.v_sub_u32_e32(low, bits, low, comment="0x7f per NaN byte, no borrows")
                p.v_or_b32_e32(bits, bits, low, comment="0xff per NaN byte")
                p.op("v_bfi_b32", x, bits, 0, x, comment="NaN bytes -> 0")
        pv, cnt = p.vreg(f"pv{blk}", 16), p.vreg(f"nan_count{blk}", 16)
        for et in range(4):
            p.mfma_scale_f32_32x32x64_fp8(pv, vb[et], pa, 0, sa, sb, comment=f"(P V)^T s_blk, dims {32 * et}..")
            p.mfma_scale_f32_32x32x64_fp8(cnt, vn[et], va_, 0, one, one, comment="visible NaN V codes")
            # rows with kb > KB_E8M0_MAX: the MFMA used the unit scale; s_blk by VALU (exec = those rows)
            p.op("s_and_saveexec_b64", saved, big)
            for r in range(16):
                p.v_mul_f32_e32(pv[r], pv[r], sblk)
            p.op("s_mov_b64", "exec", saved)
            for r in range(16):
                p.v_cmp_gt_f32_e64(hasnan, cnt[r], 0)
                p.v_cndmask_b32_e64(pv[r], pv[r], qnan, hasnan)
            # rows that see a key of this block: acc = fma(acc, alpha, pv)
            p.v_cmp_gt_i32_e64(skip, nvis, 64 * blk)
            p.op("s_and_saveexec_b64", saved, skip)
            for r in range(16):
                p.v_fma_f32(acc[et][r], acc[et][r], alpha, pv[r])
            p.op("s_mov_b64", "exec", saved)
        p.v_cmp_gt_i32_e64(skip, nvis, 64 * blk)
        p.op("s_and_saveexec_b64", saved, skip)
        p.v_fma_f32(l, l, alpha, lblk)
        p.v_mov_b32_e32(m, mnew)
        p.op("s_mov_b64", "exec", saved)
    # results: (P V)^T register r of lane l is dim 32 et + 8 (r/4) + 4 h + r % 4 of query i = l % 32
    aoff, loff = p.vreg("acc_off"), p.vreg("ml_off")
    p.v_lshlrev_b32_e32(tmp, 4, h_)
    p.v_lshl_add_u32(aoff, i_, 9, tmp, comment="query i * 512 + 16 h")
    for et in range(4):
        for r in range(16):
            p.buffer_store_dword(acc[et][r], aoff, rs["acc"], 0, offen=True,
                                 offset=4 * (32 * et + 8 * (r // 4) + r % 4))
    p.v_lshlrev_b32_e32(loff, 2, lane)
    p.buffer_store_dword(m, loff, rs["ml"], 0, offen=True)
    p.buffer_store_dword(l, loff, rs["ml"], 0, offen=True, offset=256)
    p.s_endpgm()
    return KernelSpec("zyfa_test_fp8_block_step", "FP8 block step (test kernel)", STEP_ARGS, p)


def visible_keys(seqlen_k: int, row_base: int) -> np.ndarray:
    """n_i = clamp(i + row_base, 0, seqlen_k) for the 32 rows (head_matrix.hpp visible_keys: row_base =
    causal_offset + 1 when causal, seqlen_k otherwise)."""
    return np.clip(np.arange(32) + row_base, 0, seqlen_k)


def step_reference(qv, kv, vv, c, n):
    """The specification (fp8_spec.hpp STEP 1-2, zyfa recipe) for 32 rows x 128 keys from m = -inf, l = 0,
    acc = 0, row i seeing keys [0, n[i]) (blocks with no visible key skipped, masked keys never read): returns
    acc [32, 128], m [32], l [32] in fp32 (fmaf as an exact product and one rounding), bounds and statistics."""
    s = np.zeros((32, 128), np.float32)
    for d in range(128):
        s = (s + qv[:, d:d + 1] * kv[:, d][None, :]).astype(np.float32)
    t = (s * np.float32(c)).astype(np.float32)
    vis = np.arange(128)[None, :] < n[:, None]
    t = np.where(vis, t, np.float32(-np.inf)).astype(np.float32)  # masked logits never reach the max
    m = np.full(32, -np.inf, np.float32)
    l = np.zeros(32, np.float32)
    acc = np.zeros((32, 128), np.float32)
    mag = np.zeros((32, 128))      # sum over keys of P |v| s, as acc accumulates it (alpha applied)
    slack = np.zeros((32, 128))    # the same with one code step per P (P/8 + 2^-9)
    stats = {"alpha_lt_1": 0, "kb_gt_0": 0, "kb_above_e8m0": 0, "skipped": 0}
    for blk in range(2):
        vb_ = vis[:, 64 * blk:64 * blk + 64]
        run = vb_.any(axis=1)      # rows that see a key of the block; the others skip it
        tb = t[:, 64 * blk:64 * blk + 64]
        m_blk = np.fmax.reduce(tb, axis=1, initial=-np.inf).astype(np.float32)  # std::max from -inf: NaN skipped
        m_new = np.maximum(m, m_blk).astype(np.float32)
        with np.errstate(invalid="ignore"):
            alpha = np.exp2((m - m_new).astype(np.float64)).astype(np.float32)
        neg = -(m_blk - m_new).astype(np.float32)
        kb = np.where(neg >= 255, 255, np.where(neg >= 0, np.floor(np.nan_to_num(neg)), 0)).astype(np.int64)
        code = lean_p_two_step_reference(tb, m_new[:, None], np.broadcast_to(kb[:, None], tb.shape).astype(np.uint32))
        code = np.where(vb_, code, 0).astype(np.uint8)
        P = code.view(E4M3).astype(np.float32)
        s_blk = np.ldexp(np.float32(1), -(kb + 8)).astype(np.float32)
        l_blk = P.sum(axis=1, dtype=np.float64).astype(np.float32)  # exact
        pv = np.zeros((32, 128), np.float32)
        for j in range(64):
            prod = P[:, j:j + 1] * vv[64 * blk + j][None, :]
            pv = (pv + np.where(vb_[:, j:j + 1], prod, np.float32(0))).astype(np.float32)  # masked: never read
        pvs = (pv * s_blk[:, None]).astype(np.float32)
        acc_new = (acc.astype(np.float64) * alpha[:, None] + pvs).astype(np.float32)
        l_new = (l.astype(np.float64) * alpha + (l_blk * s_blk).astype(np.float32)).astype(np.float32)
        acc = np.where(run[:, None], acc_new, acc)
        l = np.where(run, l_new, l).astype(np.float32)
        va = np.where(vb_[:, :, None], np.abs(vv[64 * blk:64 * blk + 64])[None, :, :], 0)
        va = np.nan_to_num(va.astype(np.float64))  # [32 rows, 64 keys, 128 dims]
        Pd = P.astype(np.float64)
        mag_b = np.einsum("ij,ijd->id", Pd, va) * s_blk[:, None]
        slack_b = np.einsum("ij,ijd->id", (Pd / 8 + 2.0 ** -9) * vb_, va) * s_blk[:, None]
        mag = np.where(run[:, None], mag * alpha[:, None] + mag_b, mag)
        slack = np.where(run[:, None], slack * alpha[:, None] + slack_b, slack)
        stats["alpha_lt_1"] += int((run & (alpha > 0) & (alpha < 1)).sum())
        stats["kb_gt_0"] += int((run & (kb > 0)).sum())
        stats["kb_above_e8m0"] += int((run & (kb > KB_E8M0_MAX)).sum())
        stats["skipped"] += int((~run).sum())
        m = np.where(run, m_new, m).astype(np.float32)
    return acc, m, l, mag, slack, stats


def step_inputs(case: str):
    """(q, k, v codes, seqlen_k, row_base) of a test case: "full" (non-causal, 128 keys), "nan_codes" (a NaN
    query, a NaN in V), "causal" (seqlen_k 100, causal_offset 49: the second block partly visible or skipped per
    row; NaN codes in K and V at masked keys and past seqlen_k, one NaN V code visible to the last rows only),
    "masked_rows" (seqlen_k 100, row_base -5: rows 0-5 see no key, the second block is skipped by every row)."""
    rng = np.random.default_rng(13)
    qc = rng.integers(0, 256, (32, 128)).astype(np.uint8)
    kc = rng.integers(0, 256, (128, 128)).astype(np.uint8)
    vc = rng.integers(0, 256, (128, 128)).astype(np.uint8)
    for x in (qc, kc, vc):
        x[(x & 0x7F) == 0x7F] = 0x38
    qc[0, :] = 0x7E     # max code in a whole row
    kc[70, :] = 0x7E    # the second block holds a far larger logit for the rows with a positive q sum: alpha < 1
    kc[70, :4] = 0x38
    qc[1, 4:] = 0       # row 1 sees only dims 0-3, where key 10 holds the max code: its block-0 max lies far above
    qc[1, :4] = 0x7E    # every logit of block 1 (kb = 255 there: the unit-scale MFMA and s_blk by v_mul)
    kc[10, :4] = 0x7E
    qc[2, :] = 0        # row 2 sees only dim 5 (1.0): logits within 60 of each other; key 100 (448) lifts its max
    qc[2, 5] = 0x38     # by about 41 in block 1 (alpha = 2^-41 or so, in (0, 1))
    kc[:64, 5] &= 0xF7
    kc[100, 5] = 0x7E
    vc[3, :] = 0x7E     # max code in V
    vc[:, 5] = rng.integers(1, 8, 128)  # subnormal V codes
    seqlen_k, row_base = 128, 128
    if case == "nan_codes":
        qc[4, 10] = 0x7F  # every logit of query 4 is NaN: its max stays -inf, its codes are 0x7F, l and acc NaN
        vc[20, 9] = 0xFF  # a NaN in V (key 20, dim 9): dim 9 of every row is NaN (0 x NaN = NaN)
    elif case in ("causal", "masked_rows"):
        seqlen_k, row_base = 100, (50 if case == "causal" else -5)
        kc[100:, :] = 0x7F  # past seqlen_k: NaN codes, never read
        vc[100:, :] = 0xFF
        kc[90, 3] = 0x7F    # masked for every row
        vc[90, :] = 0x7F
        vc[76, 11] = 0xFF   # key 76: visible to rows i >= 27 (causal) only
        vc[2, 12] = 0x7F    # key 2: visible to every row that sees a key except those that see fewer than 3
    return qc, kc, vc, seqlen_k, row_base


def run_step(order: str, qc, kc, vc, seqlen_k: int, row_base: int, c):
    asm = emit_kernel(build_step(), "tests/python/test_gen_fp8_block_softmax.py")
    mach = Machine(EmuProgram.from_asm_text(asm, Semantics(mfma_accumulate=order)))
    pq, pk, pv = mach.upload(qc), mach.upload(kc), mach.upload(np.ascontiguousarray(vc.T))
    pa, pml = mach.alloc(32 * 128 * 4), mach.alloc(512)
    mach.launch("zyfa_test_fp8_block_step", grid=(1, 1, 1), block=(64, 1, 1),
                kernarg=struct.pack("<QQQQQfIi4x", pq, pk, pv, pa, pml, c, seqlen_k, row_base))
    return mach.download(pa, np.float32, (32, 128)), mach.download(pml, np.float32, (2, 64))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN arithmetic in the numpy reference
@pytest.mark.parametrize("case", ["full", "nan_codes", "causal", "masked_rows"])
@pytest.mark.parametrize("order", ["fp32_seq", "fp64", "fp32_block"])
def test_full_block_step_matches_the_specification(order, case):
    """Bit for bit under fp32_seq (the specification's summation order). Under fp64 / fp32_block S, hence t and
    m_new, move in the last bits; a Lean P code can then move by at most one step (|dP| <= P/8 + 2^-9), so
    |acc - spec| <= sum s alpha (P/8 + 2^-9)|v| + 2^-20 sum s alpha P |v| elementwise (the second term: the
    different roundings of alpha and of the fp32 sums), and m, l within 2^-20 relative. NaN, -inf (m of a row
    that sees no key) and the exact zeros of skipped rows are compared exactly under every order."""
    qc, kc, vc, seqlen_k, row_base = step_inputs(case)
    c = np.float32(0.0883883476 * 1.4426950408889634)
    acc, ml = run_step(order, qc, kc, vc, seqlen_k, row_base, c)
    qv, kv, vv = (x.view(E4M3).astype(np.float32) for x in (qc, kc, vc))
    n = visible_keys(seqlen_k, row_base)
    want_acc, want_m, want_l, mag, slack, stats = step_reference(qv, kv, vv, c, n)
    if case in ("full", "nan_codes"):
        assert stats["alpha_lt_1"] > 0 and stats["kb_gt_0"] > 0 and stats["kb_above_e8m0"] > 0
    if case == "causal":
        assert stats["skipped"] > 0 and (n > 64).any() and (n < 100).any()
        assert np.isnan(want_acc[27:, 11]).all() and not np.isnan(want_acc[:27, 11]).any()
    if case == "masked_rows":
        assert (n == 0).sum() == 6 and stats["skipped"] == 32 + 6
        assert (want_acc[:6] == 0).all() and (want_l[:6] == 0).all() and np.isneginf(want_m[:6]).all()
    assert np.array_equal(ml[:, :32], ml[:, 32:], equal_nan=True)
    got_m, got_l = ml[0, :32], ml[1, :32]
    for got, want in ((got_m, want_m), (got_l, want_l), (acc, want_acc)):
        assert np.array_equal(np.isnan(got), np.isnan(want))  # NaN exactly where the specification has it
    np.testing.assert_array_equal(np.isneginf(got_m), np.isneginf(want_m))
    dead = n == 0  # rows that see no key: the initial state, bit for bit
    np.testing.assert_array_equal(acc[dead].view(np.uint32), want_acc[dead].view(np.uint32))
    np.testing.assert_array_equal(got_l[dead].view(np.uint32), want_l[dead].view(np.uint32))
    if case == "nan_codes":
        assert np.isnan(want_acc[4]).all() and np.isnan(want_acc[:, 9]).all() and want_m[4] == -np.inf
    fin = ~np.isnan(want_acc)
    acc, want_acc = np.where(fin, acc, 0), np.where(fin, want_acc, 0)
    mag, slack = np.where(fin, mag, 0), np.where(fin, slack, 0)
    ok_l = ~np.isnan(want_l)
    ok_m = np.isfinite(want_m)
    if order == "fp32_seq":
        np.testing.assert_array_equal(got_m.view(np.uint32), want_m.view(np.uint32))
        np.testing.assert_array_equal(got_l[ok_l].view(np.uint32), want_l[ok_l].view(np.uint32))
        np.testing.assert_array_equal(acc.view(np.uint32), want_acc.view(np.uint32))
    else:
        np.testing.assert_allclose(got_m[ok_m], want_m[ok_m], rtol=2.0 ** -20)
        np.testing.assert_allclose(got_l[ok_l], want_l[ok_l], rtol=2.0 ** -20)
        assert np.all(np.abs(acc.astype(np.float64) - want_acc) <= slack + 2.0 ** -20 * mag)
