"""A computational kernel built only with the generator IR (typed builders, virtual registers, a counted loop,
kernel arguments from the Arg list, automatic s_waitcnt/s_nop), run in the emulator: Lean P's code mapping of the
FP8 specification (include/zyfa/host/fp8_spec.hpp, STEP 2, zyfa recipe), bit-exact on edge inputs, from the
unscaled score S:

    fused (|m_new| < 2^16 and c >= 2^-122):  y = fma(S, 8 c, (8 kb + kBlockMaxCode) - 8 m_new)
    otherwise (the two-step form):          y = (S c - m_new) * 8 + (float)(8 kb + kBlockMaxCode)
    code = NaN(y) ? 0x7F : rne(min(max(y, 0), 121))

(the kernel: both forms, v_cndmask per lane on the fused test, v_med3_f32, v_rndne_f32, v_cvt_u32_f32,
v_cmp_u_f32 + v_cndmask for NaN). A test kernel, not shipped in include/."""
import struct

import numpy as np

from fp8_attention_case import lean_p_codes, lean_p_y
from gfx950emu import Machine, Program as EmuProgram
from zyfa_gen.emit import emit_kernel
from zyfa_gen.ir import Program
from zyfa_gen.kernel import Arg, KernelSpec, load_kernargs

MAX_CODE = 121  # kBlockMaxCode (fp8_spec.hpp)
ARGS = [Arg("s", "ptr", "const float*", "scores S (before c), [n][64]", const=True),
        Arg("m", "ptr", "const float*", "running max m_new, [n][64]", const=True),
        Arg("kb", "ptr", "const std::uint32_t*", "block offset kb in 0..255, [n][64]", const=True),
        Arg("code", "ptr", "std::uint8_t*", "e4m3fn codes, [n][64]"),
        Arg("n", "u32", "std::uint32_t", "rows of 64 values"),
        Arg("c", "f32", "float", "logit factor c (scale_softmax_log2)")]


def build() -> KernelSpec:
    p = Program()
    kern = p.sreg("kernarg_ptr", 2, pin=0)
    lane = p.vreg("lane", pin=0)
    a = load_kernargs(p, ARGS, kern)
    rs = {}
    for name, recs in (("s", 1 << 20), ("m", 1 << 20), ("kb", 1 << 20), ("code", 1 << 18)):
        r = rs[name] = p.sreg(f"rsrc_{name}", 4)
        p.s_mov_b32(r[0], a[name][0])
        p.s_and_b32(r[1], a[name][1], "0xffff")
        p.s_mov_b32(r[2], hex(recs))
        p.s_mov_b32(r[3], "0x20000")
    off4, off1 = p.vreg("off4"), p.vreg("off1")
    p.v_lshlrev_b32_e32(off4, 2, lane)
    p.v_mov_b32_e32(off1, lane)
    maxc, maxf, nan_code, eight, c8 = (p.vreg(x) for x in ("max_code", "max_code_f32", "nan_code", "eight", "c8"))
    p.v_mov_b32_e32(maxc, MAX_CODE)
    p.v_mov_b32_e32(maxf, f"{MAX_CODE}.0")
    p.v_mov_b32_e32(nan_code, "0x7f")
    p.v_mov_b32_e32(eight, "0x41000000")
    p.v_mov_b32_e32(c8, a["c"])
    p.v_mul_f32_e32(c8, 8.0, c8, comment="8 c (exact)")
    lim, neg8 = p.sreg("fused_lim"), p.sreg("neg8")
    p.s_mov_b32(neg8, "0xc1000000")
    p.v_mov_b32_e32(off1, "0x2800000")
    p.op("v_cmp_le_f32_e64", "vcc", off1, a["c"], comment="c >= 2^-122")
    p.op("s_cmp_lg_u64", "vcc", 0)
    p.s_cselect_b32(lim, "0x47800000", 0, comment="bits of 2^16, or 0: no row fused")
    p.v_mov_b32_e32(off1, lane)
    i, row4, row1 = p.sreg("i"), p.sreg("row4"), p.sreg("row1")
    s, m, kb, d, c0, b, y, code = (p.vreg(x) for x in ("s", "m", "kb", "d", "c0", "b", "y", "code"))
    isnan, fused = p.sreg("isnan", 2), p.sreg("fused", 2)
    p.s_mov_b32(i, 0)
    with p.loop(".Lrow", i, a["n"]):
        p.s_lshl_b32(row4, i, 8)
        p.s_lshl_b32(row1, i, 6)
        p.buffer_load_dword(s, off4, rs["s"], row4, offen=True)
        p.buffer_load_dword(m, off4, rs["m"], row4, offen=True)
        p.buffer_load_dword(kb, off4, rs["kb"], row4, offen=True)
        p.v_lshl_add_u32(c0, kb, 3, maxc, comment="8 kb + kBlockMaxCode")
        p.v_cvt_f32_u32_e32(c0, c0)
        p.v_and_b32_e32(d, "0x7fffffff", m)
        p.v_cmp_gt_u32_e64(fused, lim, d, comment="fused: |m_new| < 2^16 (NaN: no)")
        p.v_fma_f32(b, m, neg8, c0, comment="b = c0 - 8 m_new (8 m_new exact)")
        p.v_fma_f32(y, s, c8, b, comment="fused y = fma(S, 8 c, b)")
        p.v_mul_f32_e32(d, a["c"], s, comment="t = S c")
        p.v_sub_f32_e32(d, d, m, comment="d = t - m_new")
        p.v_fma_f32(d, d, eight, c0, comment="two-step y = d * 8 + c0 (d * 8 exact)")
        p.v_cndmask_b32_e64(y, d, y, fused)
        p.v_cmp_u_f32_e64(isnan, y, y)
        p.v_med3_f32(y, y, 0, maxf)
        p.v_rndne_f32_e32(y, y)
        p.v_cvt_u32_f32_e32(code, y)
        p.v_cndmask_b32_e64(code, code, nan_code, isnan, comment="NaN y -> 0x7F")
        p.buffer_store_byte(code, off1, rs["code"], row1, offen=True)
    p.s_endpgm()
    return KernelSpec("zyfa_test_lean_p_codes", "Lean P codes (test kernel)", ARGS, p)


def lean_p_reference(s, c, m, kb):
    """fp8_spec.hpp's Lean P code of score S for (m_new, kb), the form chosen per element as the specification
    chooses it per row (fp32 arithmetic, a one-rounding FMA)."""
    return lean_p_codes(lean_p_y(s, c, m, kb, "spec"))


def lean_p_two_step_reference(t, m, kb):
    """lean_p_code(d * 8 + (float)(8 kb + 121), 121) from the logit t = S c: the two-step form."""
    return lean_p_codes(lean_p_y(t, 1.0, m, kb, "two_step"))


def _run(asm, s, m, kb, c):
    mach = Machine(EmuProgram.from_asm_text(asm))
    n = s.shape[0]
    ps, pm, pk = mach.upload(s.astype(np.float32)), mach.upload(m.astype(np.float32)), mach.upload(kb)
    out = mach.alloc(n * 64)
    mach.launch("zyfa_test_lean_p_codes", grid=(1, 1, 1), block=(64, 1, 1),
                kernarg=struct.pack("<QQQQIf", ps, pm, pk, out, n, c))
    return mach.download(out, np.uint8, (n, 64))


def _edge_inputs(rng):
    """c = 1 (t = S): ties of y (x.5 -> even), the clamp at 0 and at 121, NaN / +-inf scores, a running max of -inf,
    the largest kb, subnormal differences, running maxima of 2^16 and beyond (log2 units)."""
    n = 6
    s = rng.standard_normal((n, 64)).astype(np.float32) * 8
    m = (s.max(axis=1, keepdims=True) + rng.integers(0, 3, (n, 1))).astype(np.float32) * np.ones((1, 64), np.float32)
    kb = rng.integers(0, 4, (n, 64)).astype(np.uint32)
    s[1, :8] = m[1, :8] - np.float32(np.array([0.0625, 0.1875, 0.3125, 1.0625, 15.0625, 14.9375, 0.0, 30.0]))
    kb[1, :8] = 0
    s[2, :6] = [np.nan, np.inf, -np.inf, 3.4e38, -3.4e38, 1e-40]
    m[2, :6] = [0.0, np.inf, 0.0, 0.0, -np.inf, 0.0]
    kb[2, :] = 255
    s[3, :] = m[3, :] + rng.integers(-128, 2, 64).astype(np.float32) / np.float32(16)
    m[4, :4] = -np.inf
    # running maxima at and around 2^16 (the first 8 lanes), and just below -2^20, where b = c0 - 8 m_new passes
    # 2^23 and rounds to an integer: the fused form's y would be off by 1/2 there, the two-step form is exact
    m[5, :] = -(np.float32(1 << 20) - rng.integers(1, 200, 64).astype(np.float32) / np.float32(16))
    m[5, :8] = [65536, -65536, 65535.9921875, -65535.9921875, 70000.5, -70000.5, 1e30, -1e30]
    s[5, :] = m[5, :] - rng.integers(0, 256, 64).astype(np.float32) / np.float32(16)
    kb[5, :] = rng.integers(0, 3, 64)
    return s, m, kb


def test_lean_p_codes_bit_exact_on_edge_inputs():
    asm = emit_kernel(build(), "tests/python/test_gen_lean_p.py")
    assert "s_cbranch_scc1 .Lrow" in asm
    rng = np.random.default_rng(8)
    s, m, kb = _edge_inputs(rng)
    got = _run(asm, s, m, kb, 1.0)
    want = lean_p_reference(s, np.float32(1.0), m, kb)
    np.testing.assert_array_equal(got, want)
    assert {0, MAX_CODE, 0x7F} <= set(np.unique(want).tolist())  # the edges were reached
    assert list(want[1, :3]) == [120, 120, 118]  # ties to even: 120.5 -> 120, 119.5 -> 120, 118.5 -> 118
    fused = lean_p_codes(lean_p_y(s, np.float32(1.0), m, kb, "fused"))
    assert (fused[5] != want[5]).sum() >= 5  # the fused form beyond 2^16 would fail row 5


def test_lean_p_codes_with_a_rounding_logit_factor():
    """c = 0.7 (t = S c rounds) with running maxima near 2^15: the rounding of t moves the two-step form's y by up
    to ~1/64 of a code, so near a .5 the forms give other codes; half of each row's scores are picked where they
    do (the two-step form fails there). And c = 2^-123 (< 2^-122: every row two-step)."""
    asm = emit_kernel(build(), "tests/python/test_gen_lean_p.py")
    rng = np.random.default_rng(9)
    c = np.float32(0.7)
    top = np.float32(46000) + rng.integers(0, 1 << 12, (4, 1)).astype(np.float32) / np.float32(1 << 10)
    m = (top * c).astype(np.float32) * np.ones((1, 64), np.float32)
    kb = np.zeros((4, 64), np.uint32)
    cand = (top - rng.integers(0, 1 << 14, (4, 1 << 16)).astype(np.float32) / np.float32(1 << 8)).astype(np.float32)
    differ = lean_p_reference(cand, c, m[:, :1], kb[:, :1]) != lean_p_two_step_reference(
        (cand * c).astype(np.float32), m[:, :1], kb[:, :1])
    assert (differ.sum(axis=1) >= 32).all()
    s = np.stack([np.concatenate([cand[r][differ[r]][:32], cand[r][~differ[r]][:32]]) for r in range(4)])
    got = _run(asm, s, m, kb, float(c))
    want = lean_p_reference(s, c, m, kb)
    np.testing.assert_array_equal(got, want)
    assert (lean_p_two_step_reference((s * c).astype(np.float32), m, kb) != want).sum() == 128
    # c < 2^-122: every row takes the two-step form (|t| < 64 then: the forms differ in a few scores per million)
    tiny = np.float32(0.7 * 2.0 ** -123)
    rng = np.random.default_rng(10)
    top = (np.float32(20) / tiny * (1 - rng.random((2, 1)).astype(np.float32) * np.float32(0.01))).astype(np.float32)
    m = (top * tiny).astype(np.float32) * np.ones((1, 64), np.float32)
    kb = np.zeros((2, 64), np.uint32)
    cand = (top * (1 - rng.random((2, 1 << 20)).astype(np.float32) * np.float32(0.75))).astype(np.float32)
    want = lean_p_two_step_reference((cand * tiny).astype(np.float32), m[:, :1], kb[:, :1])
    differ = lean_p_codes(lean_p_y(cand, tiny, m[:, :1], kb[:, :1], "fused")) != want
    assert (differ.sum(axis=1) >= 4).all()
    s = np.stack([np.concatenate([cand[r][differ[r]][:4], cand[r][~differ[r]][:60]]) for r in range(2)])
    got = _run(asm, s, m, kb, float(tiny))
    want = lean_p_reference(s, tiny, m, kb)
    np.testing.assert_array_equal(got, want)
    assert (lean_p_codes(lean_p_y(s, tiny, m, kb, "fused")) != want).sum() == 8  # a fused kernel fails these
