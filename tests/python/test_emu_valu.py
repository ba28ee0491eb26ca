"""Vector ALU instruction semantics of the gfx950 emulator against numpy / plain Python (one wave, 64 lanes).
Every snippet is also assembled with llvm-mc-22 (gfx950), so the syntax is the real assembler's."""
import ml_dtypes
import numpy as np
import pytest

from gfx950emu import EmuError
from gfx950emu.snippet import run_snippet

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
RNG = np.random.default_rng(1234)
M32 = 0xFFFFFFFF


def f32(w, i):
    return w.v[i].view(np.float32).copy()


def u32(w, i):
    return w.v[i].copy()


def rand_f32(n=64, scale=10.0):
    x = (RNG.standard_normal(n) * scale).astype(np.float32)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40]  # specials (1e-40 is a denormal)
    return x


def rand_u32(n=64):
    x = RNG.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    x[:4] = [0, 1, 0x80000000, M32]
    return x


def assert_f32_equal(got, want):
    want = np.asarray(want, np.float32)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    assert same.all(), f"lanes {np.nonzero(~same)[0][:8]}: got {got[~same][:4]}, want {want[~same][:4]}"


@pytest.mark.parametrize("op,fn", [
    ("v_add_f32_e32", lambda a, b: a + b),
    ("v_sub_f32_e32", lambda a, b: a - b),
    ("v_subrev_f32_e32", lambda a, b: b - a),
    ("v_mul_f32_e32", lambda a, b: a * b),
    ("v_max_f32_e32", np.fmax),  # IEEE maxNum: a NaN operand yields the other operand
    ("v_min_f32_e32", np.fmin),
])
def test_f32_binary(op, fn):
    a, b = rand_f32(), rand_f32()[::-1].copy()
    w = run_snippet(f"{op} v0, v1, v2", vgprs={1: a, 2: b})
    assert_f32_equal(f32(w, 0), fn(a, b))


def test_f32_fma_single_rounding():
    # a*b+c with one rounding: choose a*b exact in fp64 but not in fp32
    a = np.float32(1 + 2 ** -12) * np.ones(64, np.float32)
    b = np.float32(1 + 2 ** -12) * np.ones(64, np.float32)
    c = -np.ones(64, np.float32)
    w = run_snippet("v_fma_f32 v0, v1, v2, v3\nv_mov_b32_e32 v4, v3\nv_fmac_f32_e32 v4, v1, v2",
                    vgprs={1: a, 2: b, 3: c})
    want = np.float32(2 ** -11 + 2 ** -24)
    assert (f32(w, 0) == want).all() and (f32(w, 4) == want).all()
    assert np.float32(a[0] * b[0]) + c[0] != want  # two roundings would differ


def test_f32_ternary_and_modifiers():
    a, b, c = rand_f32(), rand_f32(), rand_f32()
    w = run_snippet("v_max3_f32 v0, v1, v2, v3\nv_min3_f32 v4, v1, v2, v3\nv_med3_f32 v5, v1, v2, v3\n"
                    "v_add_f32_e64 v6, -v1, |v2|\nv_mul_f32_e64 v7, v1, v2 clamp\nv_add_f32_e64 v8, v1, v2 mul:2",
                    vgprs={1: a, 2: b, 3: c})
    assert_f32_equal(f32(w, 0), np.fmax(np.fmax(a, b), c))
    assert_f32_equal(f32(w, 4), np.fmin(np.fmin(a, b), c))
    ok = ~(np.isnan(a) | np.isnan(b) | np.isnan(c))
    assert_f32_equal(f32(w, 5)[ok], np.median(np.stack([a, b, c]), axis=0)[ok])
    assert_f32_equal(f32(w, 6), -a + np.abs(b))
    assert_f32_equal(f32(w, 7), np.where(np.isnan(a * b), 0, np.clip(a * b, 0, 1)))
    assert_f32_equal(f32(w, 8), (a + b) * np.float32(2))


def test_f32_transcendental_and_conversions():
    x = (RNG.standard_normal(64) * 4).astype(np.float32)
    p = np.abs(x) + np.float32(0.5)
    w = run_snippet("v_exp_f32_e32 v0, v1\nv_log_f32_e32 v3, v2\nv_rcp_f32_e32 v4, v2\nv_sqrt_f32_e32 v5, v2\n"
                    "v_cvt_i32_f32_e32 v6, v1\nv_cvt_f32_i32_e32 v7, v6\nv_cvt_u32_f32_e32 v8, v2\n"
                    "v_floor_f32_e32 v9, v1\nv_rndne_f32_e32 v10, v1\nv_ldexp_f32 v11, v1, 3\n"
                    "v_cvt_f32_u32_e32 v12, v13", vgprs={1: x, 2: p, 13: (u := rand_u32())})
    np.testing.assert_allclose(f32(w, 0), np.exp2(x.astype(np.float64)), rtol=2 ** -22)
    np.testing.assert_allclose(f32(w, 3), np.log2(p.astype(np.float64)), rtol=2 ** -22, atol=2 ** -22)
    np.testing.assert_allclose(f32(w, 4), 1 / p.astype(np.float64), rtol=2 ** -22)
    np.testing.assert_allclose(f32(w, 5), np.sqrt(p.astype(np.float64)), rtol=2 ** -23)
    np.testing.assert_array_equal(u32(w, 6).view(np.int32), np.trunc(x).astype(np.int32))
    np.testing.assert_array_equal(f32(w, 7), np.trunc(x))
    np.testing.assert_array_equal(u32(w, 8), np.trunc(p).astype(np.uint32))
    np.testing.assert_array_equal(f32(w, 9), np.floor(x))
    np.testing.assert_array_equal(f32(w, 10), np.rint(x))
    np.testing.assert_array_equal(f32(w, 11), x * 8)
    np.testing.assert_array_equal(f32(w, 12), u.astype(np.float32))


def test_cvt_i32_f32_saturates_and_nan_to_zero():
    x = np.array([3e9, -3e9, np.nan, np.inf, -np.inf, -1.5, 1.5, 0.0] * 8, np.float32)
    w = run_snippet("v_cvt_i32_f32_e32 v0, v1\nv_cvt_u32_f32_e32 v2, v1", vgprs={1: x})
    np.testing.assert_array_equal(u32(w, 0).view(np.int32)[:8],
                                  [2 ** 31 - 1, -2 ** 31, 0, 2 ** 31 - 1, -2 ** 31, -1, 1, 0])
    np.testing.assert_array_equal(u32(w, 2)[:8], [3000000000, 0, 0, M32, 0, 0, 1, 0])


def _py(fn, *cols):
    return np.array([fn(*[int(c[i]) for c in cols]) & M32 for i in range(64)], np.uint32)


@pytest.mark.parametrize("op,fn", [
    ("v_add_u32_e32", lambda a, b: a + b),
    ("v_sub_u32_e32", lambda a, b: a - b),
    ("v_subrev_u32_e32", lambda a, b: b - a),
    ("v_and_b32_e32", lambda a, b: a & b),
    ("v_or_b32_e32", lambda a, b: a | b),
    ("v_xor_b32_e32", lambda a, b: a ^ b),
    ("v_lshlrev_b32_e32", lambda a, b: b << (a & 31)),
    ("v_lshrrev_b32_e32", lambda a, b: b >> (a & 31)),
    ("v_ashrrev_i32_e32", lambda a, b: (b - ((b >> 31) << 32)) >> (a & 31)),
    ("v_max_u32_e32", max),
    ("v_min_i32_e32", lambda a, b: min(a - ((a >> 31) << 32), b - ((b >> 31) << 32))),
    ("v_mul_lo_u32", lambda a, b: a * b),
    ("v_mul_hi_u32", lambda a, b: (a * b) >> 32),
    ("v_mul_u32_u24_e32", lambda a, b: (a & 0xFFFFFF) * (b & 0xFFFFFF)),
    ("v_sub_u16_e32", lambda a, b: ((a & 0xFFFF) - (b & 0xFFFF)) & 0xFFFF),
    ("v_mul_lo_u16_e32", lambda a, b: ((a & 0xFFFF) * (b & 0xFFFF)) & 0xFFFF),
    ("v_lshlrev_b16_e32", lambda a, b: ((b & 0xFFFF) << (a & 15)) & 0xFFFF),
])
def test_int_binary(op, fn):
    a, b = rand_u32(), rand_u32()
    w = run_snippet(f"{op} v0, v1, v2", vgprs={1: a, 2: b})
    np.testing.assert_array_equal(u32(w, 0), _py(fn, a, b))


def _perm_ref(s0, s1, sel):
    data = (s0 << 32) | s1
    out = 0
    for k in range(4):
        c = (sel >> (8 * k)) & 0xFF
        if c < 8:
            byte = (data >> (8 * c)) & 0xFF
        elif c < 12:
            byte = 0xFF if (data >> (16 * (c - 8) + 15)) & 1 else 0
        elif c == 12:
            byte = 0
        else:
            byte = 0xFF
        out |= byte << (8 * k)
    return out


def _bfe_i_ref(v, off, wd):
    off, wd = off & 31, wd & 31
    if wd == 0:
        return 0
    r = (v >> off) & ((1 << wd) - 1)
    return r - (1 << wd) if r >> (wd - 1) else r


@pytest.mark.parametrize("op,fn,consts", [
    ("v_lshl_add_u32", lambda a, b, c: (a << (b & 31)) + c, None),
    ("v_add_lshl_u32", lambda a, b, c: (a + b) << (c & 31), None),
    ("v_lshl_or_b32", lambda a, b, c: (a << (b & 31)) | c, None),
    ("v_and_or_b32", lambda a, b, c: (a & b) | c, None),
    ("v_or3_b32", lambda a, b, c: a | b | c, None),
    ("v_add3_u32", lambda a, b, c: a + b + c, None),
    ("v_xad_u32", lambda a, b, c: (a ^ b) + c, None),
    ("v_bfi_b32", lambda a, b, c: (a & b) | (~a & c), None),
    ("v_alignbit_b32", lambda a, b, c: (((a << 32) | b) >> (c & 31)), None),
    ("v_mad_u32_u24", lambda a, b, c: (a & 0xFFFFFF) * (b & 0xFFFFFF) + c, None),
    ("v_bfe_u32", lambda a, b, c: (a >> (b & 31)) & ((1 << (c & 31)) - 1), (None, 0x1F, 0x1F)),
    ("v_bfe_i32", lambda a, b, c: _bfe_i_ref(a, b, c), (None, 0x1F, 0x1F)),
    ("v_perm_b32", _perm_ref, (None, None, 0x0F0F0F0F)),
])
def test_int_ternary(op, fn, consts):
    a, b, c = rand_u32(), rand_u32(), rand_u32()
    if consts:
        b = b & consts[1] if consts[1] else b
        c = c & consts[2] if consts[2] else c
    w = run_snippet(f"{op} v0, v1, v2, v3", vgprs={1: a, 2: b, 3: c})
    np.testing.assert_array_equal(u32(w, 0), _py(fn, a, b, c))


@pytest.mark.parametrize("table", [0x6C, 0x96, 0xE8, 0x01, 0x80])
def test_bitop3(table):
    a, b, c = rand_u32(), rand_u32(), rand_u32()

    def ref(x, y, z):
        out = 0
        for bit in range(32):
            idx = (((x >> bit) & 1) << 2) | (((y >> bit) & 1) << 1) | ((z >> bit) & 1)
            out |= ((table >> idx) & 1) << bit
        return out
    w = run_snippet(f"v_bitop3_b32 v0, v1, v2, v3 bitop3:0x{table:x}", vgprs={1: a, 2: b, 3: c})
    np.testing.assert_array_equal(u32(w, 0), _py(ref, a, b, c))


def test_64bit_ops():
    a = RNG.integers(0, 2 ** 63, 64, dtype=np.int64).astype(np.uint64)
    c = RNG.integers(0, 2 ** 63, 64, dtype=np.int64).astype(np.uint64)
    sh = RNG.integers(0, 64, 64).astype(np.uint32)
    lo = lambda x: (x & M32).astype(np.uint32)
    hi = lambda x: (x >> 32).astype(np.uint32)
    w = run_snippet("v_lshlrev_b64 v[10:11], v6, v[2:3]\nv_lshrrev_b64 v[12:13], v6, v[2:3]\n"
                    "v_ashrrev_i64 v[14:15], v6, v[2:3]\nv_lshl_add_u64 v[16:17], v[2:3], 2, v[4:5]\n"
                    "v_mad_u64_u32 v[18:19], s[0:1], v2, v4, v[4:5]\nv_mov_b64_e32 v[20:21], v[4:5]",
                    vgprs={2: lo(a), 3: hi(a), 4: lo(c), 5: hi(c), 6: sh})
    get = lambda i: [int(w.v[i][l]) | (int(w.v[i + 1][l]) << 32) for l in range(64)]
    M64 = (1 << 64) - 1
    A, C, S = [int(x) for x in a], [int(x) for x in c], [int(x) for x in sh]
    assert get(10) == [(x << s) & M64 for x, s in zip(A, S)]
    assert get(12) == [x >> s for x, s in zip(A, S)]
    assert get(14) == [((x - (1 << 64) if x >> 63 else x) >> s) & M64 for x, s in zip(A, S)]
    assert get(16) == [((x << 2) + y) & M64 for x, y in zip(A, C)]
    assert get(18) == [((x & M32) * (y & M32) + y) & M64 for x, y in zip(A, C)]
    assert get(20) == C


def test_carry_chain_64bit_add_and_sub():
    a = RNG.integers(0, 2 ** 64, 64, dtype=np.uint64)
    b = RNG.integers(0, 2 ** 64, 64, dtype=np.uint64)
    a[0], b[0] = 0xFFFFFFFF, 1  # carry out of the low word
    w = run_snippet("v_add_co_u32_e32 v10, vcc, v1, v3\nv_addc_co_u32_e32 v11, vcc, v2, v4, vcc\n"
                    "v_sub_co_u32_e64 v12, s[4:5], v1, v3\nv_subb_co_u32_e64 v13, s[4:5], v2, v4, s[4:5]",
                    vgprs={1: (a & M32).astype(np.uint32), 2: (a >> 32).astype(np.uint32),
                           3: (b & M32).astype(np.uint32), 4: (b >> 32).astype(np.uint32)})
    M64 = (1 << 64) - 1
    s = [int(w.v[10][l]) | (int(w.v[11][l]) << 32) for l in range(64)]
    d = [int(w.v[12][l]) | (int(w.v[13][l]) << 32) for l in range(64)]
    assert s == [(int(x) + int(y)) & M64 for x, y in zip(a, b)]
    assert d == [(int(x) - int(y)) & M64 for x, y in zip(a, b)]
    vcc = w.s[106] | (w.s[107] << 32)
    assert vcc == sum(1 << l for l in range(64) if int(a[l]) + int(b[l]) > M64)


def test_exec_mask_leaves_inactive_lanes():
    ex = 0x00FF00FF0000FFFF
    a = rand_f32()
    old = np.full(64, 12345, np.uint32)
    w = run_snippet("v_add_f32_e32 v0, v1, v1", vgprs={0: old, 1: a}, exec_mask=ex)
    act = np.array([(ex >> l) & 1 for l in range(64)], bool)
    assert_f32_equal(f32(w, 0)[act], (a + a)[act])
    np.testing.assert_array_equal(u32(w, 0)[~act], 12345)


@pytest.mark.parametrize("cmp,fn,t", [
    ("v_cmp_lt_f32_e32", np.less, "f"), ("v_cmp_neq_f32_e32", lambda a, b: ~(a == b), "f"),
    ("v_cmp_le_i32_e32", lambda a, b: a.view(np.int32) <= b.view(np.int32), "i"),
    ("v_cmp_gt_u32_e32", np.greater, "i"), ("v_cmp_eq_u32_e32", np.equal, "i"),
])
def test_vcmp_writes_vcc_and_cndmask(cmp, fn, t):
    a = rand_f32() if t == "f" else rand_u32() % 8
    b = rand_f32()[::-1].copy() if t == "f" else rand_u32()[::-1] % 8
    ex = (1 << 64) - 1 - (1 << 63) - (1 << 5)  # two inactive lanes read as 0 in VCC
    w = run_snippet(f"{cmp} vcc, v1, v2\nv_cndmask_b32_e32 v3, v4, v5, vcc",
                    vgprs={1: a, 2: b, 4: 111, 5: 222}, exec_mask=ex)
    res = fn(a, b)
    act = np.array([(ex >> l) & 1 for l in range(64)], bool)
    want = sum(1 << l for l in range(64) if res[l] and act[l])
    assert w.s[106] | (w.s[107] << 32) == want
    np.testing.assert_array_equal(u32(w, 3)[act], np.where(res, 222, 111)[act])


def test_vcmpx_and_saveexec_branching():
    x = np.arange(64, dtype=np.uint32)
    body = """v_cmp_gt_u32_e32 vcc, 10, v1
s_and_saveexec_b64 s[2:3], vcc
s_cbranch_execz .Lskip
v_mov_b32_e32 v2, 7
.Lskip:
s_or_b64 exec, exec, s[2:3]
v_cmpx_lt_u32_e32 vcc, 60, v1
v_mov_b32_e32 v3, 9"""
    w = run_snippet(body, vgprs={1: x})
    np.testing.assert_array_equal(u32(w, 2), np.where(x < 10, 7, 0))
    np.testing.assert_array_equal(u32(w, 3), np.where(x > 60, 9, 0))
    assert (w.s[126] | (w.s[127] << 32)) == sum(1 << l for l in range(61, 64))


def test_lane_ops_readlane_writelane_readfirstlane_mbcnt():
    x = (np.arange(64) * 3 + 1).astype(np.uint32)
    w = run_snippet("v_readfirstlane_b32 s4, v1\nv_readlane_b32 s5, v1, 37\ns_mov_b32 s6, 99\n"
                    "v_writelane_b32 v2, s6, 5\nv_mbcnt_lo_u32_b32 v3, -1, 0\nv_mbcnt_hi_u32_b32 v3, -1, v3\n"
                    "v_mbcnt_lo_u32_b32 v4, s8, 0\nv_mbcnt_hi_u32_b32 v4, s9, v4",
                    vgprs={1: x}, sgprs={8: 0xAAAAAAAA, 9: 0x0000FFFF}, exec_mask=((1 << 64) - 1) ^ 0b11)
    assert w.s[4] == x[2] and w.s[5] == x[37]
    assert w.v[2][5] == 99 and w.v[2][4] == 0
    act = np.arange(64) >= 2
    np.testing.assert_array_equal(u32(w, 3)[act], np.arange(64)[act])
    mask = 0x0000FFFFAAAAAAAA
    want = [bin(mask & ((1 << l) - 1)).count("1") for l in range(64)]
    np.testing.assert_array_equal(u32(w, 4)[act], np.array(want)[act])


def test_dpp_row_shr_quad_perm_and_bound_ctrl():
    x = np.arange(100, 164).astype(np.uint32)
    w = run_snippet("v_mov_b32_dpp v2, v1 row_shr:1 row_mask:0xf bank_mask:0xf\n"
                    "v_mov_b32_dpp v3, v1 quad_perm:[3,2,1,0] row_mask:0xf bank_mask:0xf\n"
                    "v_add_u32_dpp v4, v1, v1 row_shr:3 row_mask:0xf bank_mask:0xf bound_ctrl:1\n"
                    "v_mov_b32_dpp v5, v1 row_bcast:15 row_mask:0xa bank_mask:0xf",
                    vgprs={1: x, 2: 7, 5: 5})
    l = np.arange(64)
    np.testing.assert_array_equal(u32(w, 2), np.where(l % 16 >= 1, x[np.maximum(l - 1, 0)], 7))  # invalid: kept
    np.testing.assert_array_equal(u32(w, 3), x[(l & ~3) | (3 - (l & 3))])
    np.testing.assert_array_equal(u32(w, 4), np.where(l % 16 >= 3, x[np.maximum(l - 3, 0)], 0) + x)
    np.testing.assert_array_equal(u32(w, 5), np.where((l // 16) % 2 == 1, x[(l & ~15) - 1], 5))


def test_sdwa_selects():
    x = rand_u32()
    w = run_snippet("v_and_b32_sdwa v2, v1, v1 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_2 "
                    "src1_sel:DWORD\nv_or_b32_sdwa v3, v1, v4 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE "
                    "src0_sel:WORD_1 src1_sel:DWORD", vgprs={1: x, 3: 0x12345678, 4: 0})
    np.testing.assert_array_equal(u32(w, 2), (x >> 16) & 0xFF & x)
    np.testing.assert_array_equal(u32(w, 3), ((x >> 16) << 16) | 0x5678)


def test_pk_f32_and_accvgpr_moves():
    a, b = rand_f32(), rand_f32()
    w = run_snippet("v_pk_mul_f32 v[4:5], v[0:1], v[2:3]\nv_pk_add_f32 v[6:7], v[0:1], v[2:3] op_sel_hi:[0,1]\n"
                    "v_accvgpr_write_b32 a3, v0\nv_accvgpr_mov_b32 a4, a3\nv_accvgpr_read_b32 v8, a4",
                    vgprs={0: a, 1: b, 2: b, 3: a})
    assert_f32_equal(f32(w, 4), a * b)
    assert_f32_equal(f32(w, 5), b * a)
    assert_f32_equal(f32(w, 6), a + b)
    assert_f32_equal(f32(w, 7), a + a)  # op_sel_hi 0 for src0: high lane of the result uses src0's low word
    np.testing.assert_array_equal(u32(w, 8), a.view(np.uint32))


def test_cvt_pk_bf16_f32_round_to_nearest_even():
    x = rand_f32()
    x[6:10] = [1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20, 3.0e38]  # ties to even, above-tie, large
    y = rand_f32()[::-1].copy()
    w = run_snippet("v_cvt_pk_bf16_f32 v0, v1, v2", vgprs={1: x, 2: y})
    lo = (u32(w, 0) & 0xFFFF).astype(np.uint16).view(ml_dtypes.bfloat16).astype(np.float32)
    hi = (u32(w, 0) >> 16).astype(np.uint16).view(ml_dtypes.bfloat16).astype(np.float32)
    assert_f32_equal(lo, x.astype(ml_dtypes.bfloat16).astype(np.float32))
    assert_f32_equal(hi, y.astype(ml_dtypes.bfloat16).astype(np.float32))
    assert lo[6] == 1.0 and lo[7] == np.float32(1 + 2 ** -6) and lo[8] == np.float32(1 + 2 ** -7)


def test_unknown_instruction_and_modifier_are_errors():
    with pytest.raises(EmuError, match="unknown instruction 'v_frobnicate_b32'"):
        run_snippet("v_frobnicate_b32 v0, v1", check=False)
    with pytest.raises(EmuError, match="row_xmask"):
        run_snippet("v_mov_b32_dpp v0, v1 row_xmask:1", check=False)
    with pytest.raises(EmuError, match="unknown instruction 'ds_read_b64_tr_b16'"):
        run_snippet("ds_read_b64_tr_b16 v[0:1], v2", check=False)


def test_dpp_newbcast_and_64bit():
    x = np.arange(100, 164).astype(np.uint32)
    y = np.arange(500, 564).astype(np.uint32)
    w = run_snippet("v_mov_b32_dpp v4, v1 row_newbcast:3 row_mask:0xf bank_mask:0xf\n"
                    "v_mov_b64_dpp v[6:7], v[2:3] row_newbcast:1 row_mask:0xf bank_mask:0xf",
                    vgprs={1: x, 2: x, 3: y})
    l = np.arange(64)
    np.testing.assert_array_equal(w.v[4], x[(l & ~15) | 3])
    np.testing.assert_array_equal(w.v[6], x[(l & ~15) | 1])
    np.testing.assert_array_equal(w.v[7], y[(l & ~15) | 1])
    with pytest.raises(EmuError, match="only row_newbcast"):
        run_snippet("v_mov_b64_dpp v[8:9], v[2:3] row_shr:1 row_mask:0xf bank_mask:0xf", check=False)


def test_sdwa_compare_applies_selects():
    x = rand_u32()
    y = (x >> 8) & 0xFF
    y[::3] += 1
    w = run_snippet("v_cmp_eq_u32_sdwa vcc, v1, v2 src0_sel:BYTE_1 src1_sel:DWORD", vgprs={1: x, 2: y})
    want = sum(1 << i for i in range(64) if ((int(x[i]) >> 8) & 0xFF) == int(y[i]))
    assert w.s[106] | (w.s[107] << 32) == want


def test_packed_u16_ops_with_op_sel():
    """v_pk_{add,sub,max,min}_u16, v_pk_lshlrev_b16, v_pk_lshrrev_b16 (VOP3P): low result from the halves op_sel
    selects, high result from the halves op_sel_hi selects (default high), each wrapping mod 2^16."""
    rng = np.random.default_rng(11)
    a = rng.integers(0, 2 ** 32, 64, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2 ** 32, 64, dtype=np.uint64).astype(np.uint32)
    body = ("v_pk_add_u16 v3, v1, v2\nv_pk_sub_u16 v4, v1, v2\nv_pk_max_u16 v5, v1, v2\nv_pk_min_u16 v6, v1, v2\n"
            "v_pk_add_u16 v7, v1, v2 op_sel:[1,0] op_sel_hi:[1,0]\nv_pk_lshlrev_b16 v8, v1, v2\n"
            "v_pk_lshrrev_b16 v9, v1, v2")
    w = run_snippet(body, vgprs={1: a, 2: b})
    lo = lambda x: x.astype(np.int64) & 0xFFFF
    hi = lambda x: x.astype(np.int64) >> 16
    pack = lambda l, h: ((l & 0xFFFF) | ((h & 0xFFFF) << 16)).astype(np.uint32)
    np.testing.assert_array_equal(w.v[3], pack(lo(a) + lo(b), hi(a) + hi(b)))
    np.testing.assert_array_equal(w.v[4], pack(lo(a) - lo(b), hi(a) - hi(b)))
    np.testing.assert_array_equal(w.v[5], pack(np.maximum(lo(a), lo(b)), np.maximum(hi(a), hi(b))))
    np.testing.assert_array_equal(w.v[6], pack(np.minimum(lo(a), lo(b)), np.minimum(hi(a), hi(b))))
    np.testing.assert_array_equal(w.v[7], pack(hi(a) + lo(b), hi(a) + lo(b)))
    np.testing.assert_array_equal(w.v[8], pack(lo(b) << (lo(a) & 15), hi(b) << (hi(a) & 15)))
    np.testing.assert_array_equal(w.v[9], pack(lo(b) >> (lo(a) & 15), hi(b) >> (hi(a) & 15)))
