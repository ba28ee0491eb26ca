"""End-to-end: small HIP kernels (tests/emu_kernels/) compiled by clang-22 for gfx950 at test time run in the
gfx950 emulator and match numpy."""
import pathlib
import struct

import ml_dtypes
import numpy as np
import pytest

from gfx950emu import EmuError, Machine, Program, Semantics
from gfx950emu.toolchain import compile_hip_to_asm

ROOT = pathlib.Path(__file__).resolve().parents[2]
KDIR = ROOT / "tests" / "emu_kernels"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    d = tmp_path_factory.mktemp("emu_kernels")
    cache = {}

    def get(name, semantics=None):
        if name not in cache:
            cache[name] = compile_hip_to_asm(str(KDIR / f"{name}.hip"), str(d / f"{name}.s"))
        return Program.from_asm_text(cache[name], semantics)
    return get


def test_vector_add_grid_with_tail(compiled):
    prog = compiled("vector_add")
    m = Machine(prog)
    n = 1000  # 4 workgroups, last one partial
    rng = np.random.default_rng(1)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    pa, pb = m.upload(a), m.upload(b)
    pc = m.upload(np.full(n + 24, 7.0, np.float32))  # sentinel after n
    m.launch("vector_add", grid=(4, 1, 1), block=(256, 1, 1), kernarg=struct.pack("<QQQi", pa, pb, pc, n))
    c = m.download(pc, np.float32, (n + 24,))
    np.testing.assert_array_equal(c[:n], a + b)
    np.testing.assert_array_equal(c[n:], 7.0)  # the tail guard held


def test_lds_reduction_with_barriers(compiled):
    prog = compiled("lds_reduce")
    assert any(i.mnemonic == "s_barrier" for i in prog.instrs)
    m = Machine(prog)
    rng = np.random.default_rng(2)
    a = rng.integers(-1000, 1000, size=(3, 256)).astype(np.float32)  # integers: the sum is exact
    pa, po = m.upload(a), m.alloc(3 * 4)
    m.launch("lds_reduce", grid=(3, 1, 1), block=(256, 1, 1), kernarg=struct.pack("<QQ", pa, po))
    np.testing.assert_array_equal(m.download(po, np.float32, (3,)), a.sum(axis=1))


def test_lds_reduction_needs_barrier_interleaving(compiled):
    """Negative control: with s_barrier turned into a no-op the LDS race check reports the race, and without
    the race check the waves (run one after another) compute a wrong sum -- so the test above depends on the
    barrier model."""
    prog = compiled("lds_reduce")
    for j, ins in enumerate(prog.instrs):
        if ins.mnemonic == "s_barrier":
            fn, touched, q, dsts = prog.code[j]
            prog.code[j] = (lambda w: None, touched, q, dsts)
    a = np.arange(256, dtype=np.float32).reshape(1, 256)
    m = Machine(prog)
    pa, po = m.upload(a), m.alloc(4)
    with pytest.raises(EmuError, match="LDS race"):
        m.launch("lds_reduce", grid=(1, 1, 1), block=(256, 1, 1), kernarg=struct.pack("<QQ", pa, po))
    m = Machine(prog, race_check=False)
    pa, po = m.upload(a), m.alloc(4)
    m.launch("lds_reduce", grid=(1, 1, 1), block=(256, 1, 1), kernarg=struct.pack("<QQ", pa, po))
    assert m.download(po, np.float32, (1,))[0] != a.sum()


def test_mfma_bf16_builtin(compiled):
    prog = compiled("mfma_bf16")
    assert any(i.mnemonic == "v_mfma_f32_32x32x16_bf16" for i in prog.instrs)
    m = Machine(prog)
    rng = np.random.default_rng(3)
    A = rng.standard_normal((32, 16)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((16, 32)).astype(ml_dtypes.bfloat16)
    C0 = rng.standard_normal((32, 32)).astype(np.float32)
    pa, pb, pc0, pc = m.upload(A), m.upload(B), m.upload(C0), m.alloc(32 * 32 * 4)
    m.launch("mfma_bf16", block=(64, 1, 1), kernarg=struct.pack("<QQQQ", pa, pb, pc0, pc))
    C = m.download(pc, np.float32, (32, 32))
    ref = A.astype(np.float64) @ B.astype(np.float64) + C0
    np.testing.assert_allclose(C, ref, rtol=0, atol=4e-6 * np.abs(ref).max())
    # a layout error would be O(1): make sure the comparison is sensitive
    assert np.abs(C - (A.astype(np.float64) @ B.astype(np.float64))).max() > 0.1


def _fp8(x):
    return np.asarray(x, np.float32).astype(ml_dtypes.float8_e4m3fn).astype(np.float64)


ALTERNATIVES = Semantics(fp8_overflow="saturate", cvt_pk_fp8_low_write="zero_high", mfma_accumulate="fp32_block",
                         mfma_scale_byte="byte0", e8m0_ff="exponent", buffer_oob="start")


@pytest.mark.parametrize("sem", [None, ALTERNATIVES], ids=["default", "alternatives"])
def test_mfma_fp8_scaled_builtin_with_device_conversion(compiled, sem):
    """Also under every alternative reading of the unverified semantics: clang's code must not depend on
    them (it writes the low fp8 word before the high one, keeps scales in byte 0, ...)."""
    prog = compiled("mfma_fp8_scaled", sem)
    names = {i.mnemonic for i in prog.instrs}
    assert "v_mfma_scale_f32_32x32x64_f8f6f4" in names and "v_cvt_pk_fp8_f32" in names
    m = Machine(prog)
    rng = np.random.default_rng(4)
    xa = (rng.standard_normal((32, 64)) * 3).astype(np.float32)
    xb = (rng.standard_normal((32, 64)) * 3).astype(np.float32)
    sa = rng.integers(122, 133, (32, 2)).astype(np.uint8)
    sb = rng.integers(122, 133, (32, 2)).astype(np.uint8)
    ps = m.alloc(32 * 32 * 4)
    m.launch("mfma_fp8_scaled", block=(64, 1, 1),
             kernarg=struct.pack("<5Q", m.upload(xa), m.upload(xb), m.upload(sa), m.upload(sb), ps))
    S = m.download(ps, np.float32, (32, 32))
    qa, qb = _fp8(xa), _fp8(xb)
    ref = sum(np.exp2(sa[:, b:b + 1].astype(float) + sb[:, b][None, :].astype(float) - 254)
              * (qa[:, 32 * b:32 * b + 32] @ qb[:, 32 * b:32 * b + 32].T) for b in range(2))
    np.testing.assert_allclose(S, ref, rtol=0, atol=1e-6 * np.abs(ref).max())
    # the scales matter: ignoring them is far off
    assert np.abs(S - qa @ qb.T).max() > 0.1 * np.abs(ref).max()


def test_missing_waitcnt_is_caught():
    """Removing the s_waitcnt before the use of a loaded register is reported (Semantics.waitcnt_check)."""
    from gfx950emu.snippet import snippet_program, run_wave
    prog = snippet_program("global_load_dword v2, v[0:1], off\nv_add_f32_e32 v3, v2, v2")
    m = Machine(prog)
    addr = m.upload(np.arange(64, dtype=np.float32))
    lo = (addr + 4 * np.arange(64)) & 0xFFFFFFFF
    with pytest.raises(EmuError, match="v2 before the s_waitcnt"):
        run_wave(m, vgprs={0: lo.astype(np.uint32), 1: np.uint32(addr >> 32)})


def test_scaled_conversions_through_clang_builtins(compiled):
    """LLVM's op_sel encodings of the scalef32 conversions (word/byte selects) agree with the emulator."""
    prog = compiled("cvt_scalef32")
    names = {i.mnemonic for i in prog.instrs}
    assert {"v_cvt_scalef32_pk_f32_fp8", "v_cvt_scalef32_f32_fp8", "v_cvt_scalef32_pk_bf16_fp8",
            "v_cvt_scalef32_pk_fp8_f32"} <= names
    rng = np.random.default_rng(8)
    codes = rng.integers(0, 256, (64, 4)).astype(np.uint8)
    codes[(codes & 0x7F) == 0x7F] = 0x22  # no NaN codes
    e = rng.integers(-4, 5, 64)
    s = (np.exp2(e) * rng.uniform(1, 1.99, 64)).astype(np.float32)  # mantissa bits must be ignored
    a = (rng.standard_normal(64) * 30).astype(np.float32)
    b = (rng.standard_normal(64) * 30).astype(np.float32)
    m = Machine(prog)
    pu, po, pb, pd = m.alloc(64 * 8), m.alloc(64 * 4), m.alloc(64 * 4), m.alloc(64 * 4)
    m.launch("cvt_scalef32", block=(64, 1, 1), kernarg=struct.pack(
        "<8Q", m.upload(codes), m.upload(s), m.upload(a), m.upload(b), pu, po, pb, pd))
    f8 = codes.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    p2 = np.exp2(e.astype(np.float64))
    np.testing.assert_array_equal(m.download(pu, np.float32, (64, 2)), (f8[:, 2:4] * p2[:, None]).astype(np.float32))
    np.testing.assert_array_equal(m.download(po, np.float32, (64,)), (f8[:, 1] * p2).astype(np.float32))
    bfw = (f8[:, 0:2] * p2[:, None]).astype(np.float32).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(m.download(pb, ml_dtypes.bfloat16, (64, 2)).view(np.uint16), bfw.view(np.uint16))
    sat = lambda x: np.clip(x, -448, 448).astype(np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    lo, hi = sat(a / p2), sat(b / p2)
    got = m.download(pd, np.uint32, (64,))
    in_range = (np.abs(a / p2) < 464) & (np.abs(b / p2) < 464)  # overflow behaviour is a Semantics choice
    np.testing.assert_array_equal((got >> 16)[in_range], (lo.astype(np.uint32) | (hi.astype(np.uint32) << 8))[in_range])


def test_scratch_private_array(compiled):
    prog = compiled("scratch_array")
    assert any(i.mnemonic.startswith("scratch_store") for i in prog.instrs)
    m = Machine(prog)
    rng = np.random.default_rng(12)
    x = rng.standard_normal((64, 64)).astype(np.float32)
    idx = rng.integers(0, 1000, 64).astype(np.int32)
    po = m.upload(x)
    m.launch("scratch_array", block=(64, 1, 1), kernarg=struct.pack("<QQ", m.upload(idx), po))
    got = m.download(po, np.float32, (64 * 64,))[:64]  # out[t], t < 64 (row 0 of x is overwritten)
    t = np.arange(64)
    want = 2 * x[t, idx & 63] + 2 * x[t, (idx + 7) & 63]
    np.testing.assert_array_equal(got, want.astype(np.float32))
