"""A computational kernel built only with the generator IR (typed builders, virtual registers, a counted loop,
kernel arguments from the Arg list, automatic s_waitcnt/s_nop), run in the emulator: Lean P's code mapping of the
FP8 specification (include/zyfa/host/fp8_spec.hpp, STEP 2, zyfa recipe), bit-exact on edge inputs:

    d = t - m_new;  y = d * 8 + (float)(8 kb + kBlockMaxCode);  code = NaN(y) ? 0x7F : rne(min(max(y, 0), 121))

(the kernel: v_sub_f32, v_fma_f32, v_med3_f32, v_rndne_f32, v_cvt_u32_f32, v_cmp_u_f32 + v_cndmask for NaN).
A test kernel, not shipped in include/."""
import struct

import numpy as np

from gfx950emu import Machine, Program as EmuProgram
from zyfa_gen.emit import emit_kernel
from zyfa_gen.ir import Program
from zyfa_gen.kernel import Arg, KernelSpec, load_kernargs

MAX_CODE = 121  # kBlockMaxCode (fp8_spec.hpp)
ARGS = [Arg("t", "ptr", "const float*", "logits t, [n][64]", const=True),
        Arg("m", "ptr", "const float*", "running max m_new, [n][64]", const=True),
        Arg("kb", "ptr", "const std::uint32_t*", "block offset kb in 0..255, [n][64]", const=True),
        Arg("code", "ptr", "std::uint8_t*", "e4m3fn codes, [n][64]"),
        Arg("n", "u32", "std::uint32_t", "rows of 64 values")]


def build() -> KernelSpec:
    p = Program()
    kern = p.sreg("kernarg_ptr", 2, pin=0)
    lane = p.vreg("lane", pin=0)
    a = load_kernargs(p, ARGS, kern)
    rs = {}
    for name, recs in (("t", 1 << 20), ("m", 1 << 20), ("kb", 1 << 20), ("code", 1 << 18)):
        r = rs[name] = p.sreg(f"rsrc_{name}", 4)
        p.s_mov_b32(r[0], a[name][0])
        p.s_and_b32(r[1], a[name][1], "0xffff")
        p.s_mov_b32(r[2], hex(recs))
        p.s_mov_b32(r[3], "0x20000")
    off4, off1 = p.vreg("off4"), p.vreg("off1")
    p.v_lshlrev_b32_e32(off4, 2, lane)
    p.v_mov_b32_e32(off1, lane)
    maxc, maxf, nan_code = p.vreg("max_code"), p.vreg("max_code_f32"), p.vreg("nan_code")
    p.v_mov_b32_e32(maxc, MAX_CODE)
    p.v_mov_b32_e32(maxf, f"{MAX_CODE}.0")
    p.v_mov_b32_e32(nan_code, "0x7f")
    i, row4, row1 = p.sreg("i"), p.sreg("row4"), p.sreg("row1")
    t, m, kb, d, c0, y, code = (p.vreg(x) for x in ("t", "m", "kb", "d", "c0", "y", "code"))
    isnan = p.sreg("isnan", 2)
    p.s_mov_b32(i, 0)
    with p.loop(".Lrow", i, a["n"]):
        p.s_lshl_b32(row4, i, 8)
        p.s_lshl_b32(row1, i, 6)
        p.buffer_load_dword(t, off4, rs["t"], row4, offen=True)
        p.buffer_load_dword(m, off4, rs["m"], row4, offen=True)
        p.buffer_load_dword(kb, off4, rs["kb"], row4, offen=True)
        p.v_sub_f32_e32(d, t, m, comment="d = t - m_new")
        p.v_lshl_add_u32(c0, kb, 3, maxc, comment="8 kb + kBlockMaxCode")
        p.v_cvt_f32_u32_e32(c0, c0)
        p.v_fma_f32(y, d, 8.0, c0, comment="y = d * 8 + c0 (d * 8 exact)")
        p.v_cmp_u_f32_e64(isnan, y, y)
        p.v_med3_f32(y, y, 0, maxf)
        p.v_rndne_f32_e32(y, y)
        p.v_cvt_u32_f32_e32(code, y)
        p.v_cndmask_b32_e64(code, code, nan_code, isnan, comment="NaN y -> 0x7F")
        p.buffer_store_byte(code, off1, rs["code"], row1, offen=True)
    p.s_endpgm()
    return KernelSpec("zyfa_test_lean_p_codes", "Lean P codes (test kernel)", ARGS, p)


def lean_p_reference(t, m, kb):
    """fp8_spec.hpp lean_p_code(d * 8 + (float)(8 kb + 121), 121) in fp32 arithmetic."""
    t, m = np.float32(t), np.float32(m)
    with np.errstate(invalid="ignore", over="ignore"):
        d = (t - m).astype(np.float32)
        y = (d * np.float32(8) + (8 * kb.astype(np.int64) + MAX_CODE).astype(np.float32)).astype(np.float32)
        c = np.rint(np.clip(y, np.float32(0), np.float32(MAX_CODE)))
    return np.where(np.isnan(y), 0x7F, np.nan_to_num(c)).astype(np.uint8)


def test_lean_p_codes_bit_exact_on_edge_inputs():
    asm = emit_kernel(build(), "tests/python/test_gen_lean_p.py")
    assert "s_cbranch_scc1 .Lrow" in asm
    rng = np.random.default_rng(8)
    n = 6
    t = rng.standard_normal((n, 64)).astype(np.float32) * 8
    m = (t.max(axis=1, keepdims=True) + rng.integers(0, 3, (n, 1))).astype(np.float32) * np.ones((1, 64), np.float32)
    kb = rng.integers(0, 4, (n, 64)).astype(np.uint32)
    # edge rows: ties of y (x.5 -> even), the clamp at 0 and at 121, NaN / +-inf logits, a running max of -inf,
    # the largest kb, subnormal differences
    t[1, :8] = m[1, :8] - np.float32(np.array([0.0625, 0.1875, 0.3125, 1.0625, 15.0625, 14.9375, 0.0, 30.0]))
    kb[1, :8] = 0
    t[2, :6] = [np.nan, np.inf, -np.inf, 3.4e38, -3.4e38, 1e-40]
    m[2, :6] = [0.0, np.inf, 0.0, 0.0, -np.inf, 0.0]
    kb[2, :] = 255
    t[3, :] = m[3, :] + rng.integers(-128, 2, 64).astype(np.float32) / np.float32(16)
    m[4, :4] = -np.inf
    prog = EmuProgram.from_asm_text(asm)
    mach = Machine(prog)
    pt, pm, pk = mach.upload(t), mach.upload(m), mach.upload(kb)
    out = mach.alloc(n * 64)
    mach.launch("zyfa_test_lean_p_codes", grid=(1, 1, 1), block=(64, 1, 1),
                kernarg=struct.pack("<QQQQI4x", pt, pm, pk, out, n))
    got = mach.download(out, np.uint8, (n, 64))
    want = lean_p_reference(t, m, kb)
    np.testing.assert_array_equal(got, want)
    assert {0, MAX_CODE, 0x7F} <= set(np.unique(want).tolist())  # the edges were reached
    assert list(want[1, :3]) == [120, 120, 118]  # ties to even: 120.5 -> 120, 119.5 -> 120, 118.5 -> 118
