"""Scalar ALU, compares, branches and loops of the gfx950 emulator against plain Python integers."""
import numpy as np
import pytest

from gfx950emu import EmuError, Machine
from gfx950emu.snippet import run_snippet, snippet_program, run_wave

M32 = 0xFFFFFFFF
M64 = (1 << 64) - 1
RNG = np.random.default_rng(9)
VALS = [0, 1, 2, 31, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x12345678, 0xFFFF8000]


def s32(x):
    return x - (1 << 32) if x >> 31 else x


@pytest.mark.parametrize("op,fn,scc", [
    ("s_add_u32", lambda a, b, c: a + b, lambda a, b, c: int(a + b > M32)),
    ("s_addc_u32", lambda a, b, c: a + b + c, lambda a, b, c: int(a + b + c > M32)),
    ("s_sub_u32", lambda a, b, c: a - b, lambda a, b, c: int(b > a)),
    ("s_subb_u32", lambda a, b, c: a - b - c, lambda a, b, c: int(b + c > a)),
    ("s_add_i32", lambda a, b, c: a + b, lambda a, b, c: int(not -2 ** 31 <= s32(a) + s32(b) < 2 ** 31)),
    ("s_mul_i32", lambda a, b, c: s32(a) * s32(b), None),
    ("s_mul_hi_u32", lambda a, b, c: (a * b) >> 32, None),
    ("s_mul_hi_i32", lambda a, b, c: (s32(a) * s32(b)) >> 32, None),
    ("s_and_b32", lambda a, b, c: a & b, lambda a, b, c: int(a & b != 0)),
    ("s_andn2_b32", lambda a, b, c: a & ~b, lambda a, b, c: int(a & ~b & M32 != 0)),
    ("s_xor_b32", lambda a, b, c: a ^ b, lambda a, b, c: int(a ^ b != 0)),
    ("s_lshl_b32", lambda a, b, c: a << (b & 31), lambda a, b, c: int((a << (b & 31)) & M32 != 0)),
    ("s_lshr_b32", lambda a, b, c: a >> (b & 31), lambda a, b, c: int(a >> (b & 31) != 0)),
    ("s_ashr_i32", lambda a, b, c: s32(a) >> (b & 31), lambda a, b, c: int(s32(a) >> (b & 31) != 0)),
    ("s_min_i32", lambda a, b, c: a if s32(a) < s32(b) else b, None),
    ("s_max_u32", lambda a, b, c: max(a, b), None),
    ("s_cselect_b32", lambda a, b, c: a if c else b, None),
    ("s_lshl2_add_u32", lambda a, b, c: (a << 2) + b, None),
    ("s_bfe_u32", lambda a, b, c: (a >> (b & 31)) & ((1 << ((b >> 16) & 0x7F)) - 1) if (b >> 16) & 0x7F else 0, None),
])
def test_salu_binary(op, fn, scc):
    body = []
    cases = []
    for i, a in enumerate(VALS):
        b = VALS[(i * 5 + 3) % len(VALS)]
        if op == "s_bfe_u32":
            b = (i * 3) | ((i * 2 + 1) << 16)
        c = i % 2
        cases.append((a, b, c))
        body.append(f"s_mov_b32 s10, 0x{a:x}\ns_mov_b32 s11, 0x{b:x}\ns_cmp_eq_u32 s12, {1 - c}\n"
                    f"{op} s{20 + i}, s10, s11\ns_cselect_b32 s{40 + i}, 1, 0")
    w = run_snippet("\n".join(body), sgprs={12: 0})
    for i, (a, b, c) in enumerate(cases):
        # s_cmp_eq_u32 s12 (= 0), 1 - c sets SCC = c before the instruction
        assert w.s[20 + i] == fn(a, b, c) & M32, (op, a, b, c)
        if scc is not None:
            assert w.s[40 + i] == scc(a, b, c), (op, a, b, c)


def test_64bit_scalar_ops_and_compares():
    a, b = 0x123456789ABCDEF0, 0xFFFFFFFF00000001
    body = f"""s_mov_b32 s0, 0x{a & M32:x}
s_mov_b32 s1, 0x{a >> 32:x}
s_mov_b32 s2, 0x{b & M32:x}
s_mov_b32 s3, 0x{b >> 32:x}
s_add_u32 s4, s0, s2
s_addc_u32 s5, s1, s3
s_lshl_b64 s[6:7], s[0:1], 12
s_lshr_b64 s[8:9], s[0:1], 36
s_ashr_i64 s[10:11], s[2:3], 4
s_xor_b64 s[12:13], s[0:1], s[2:3]
s_cmp_lg_u64 s[0:1], s[2:3]
s_cselect_b64 s[14:15], s[0:1], s[2:3]
s_movk_i32 s16, 0x8001
s_sext_i32_i16 s17, s16
s_bcnt1_i32_b64 s18, s[0:1]
s_ff1_i32_b32 s19, 0x100
s_flbit_i32_b32 s20, 0x100"""
    w = run_snippet(body)
    g = lambda i: w.s[i] | (w.s[i + 1] << 32)
    assert g(4) == (a + b) & M64
    assert g(6) == (a << 12) & M64
    assert g(8) == a >> 36
    assert g(10) == ((b - (1 << 64)) >> 4) & M64
    assert g(12) == a ^ b
    assert g(14) == a
    assert w.s[16] == 0xFFFF8001 and w.s[17] == 0xFFFF8001
    assert w.s[18] == bin(a).count("1") and w.s[19] == 8 and w.s[20] == 23


def test_loop_with_scc_branch_and_signed_compare():
    body = """s_mov_b32 s0, 0
s_mov_b32 s1, -5
.Lloop:
s_add_u32 s0, s0, s1
s_add_i32 s1, s1, 1
s_cmp_lt_i32 s1, 10
s_cbranch_scc1 .Lloop
s_cmpk_eq_u32 s1, 10
s_cselect_b32 s2, 7, 8"""
    w = run_snippet(body)
    assert w.s[0] == sum(range(-5, 10)) & M32 and w.s[2] == 7


def test_vccz_execz_branches_and_instruction_limit():
    body = """v_cmp_gt_u32_e32 vcc, 0, v0
s_cbranch_vccz .Lnone
s_mov_b32 s5, 1
.Lnone:
s_mov_b64 exec, 0
s_cbranch_execz .Lend
s_mov_b32 s6, 1
.Lend:
s_mov_b64 exec, -1"""
    w = run_snippet(body, vgprs={0: np.arange(64)})
    assert w.s[5] == 0 and w.s[6] == 0
    prog = snippet_program(".Lspin:\ns_branch .Lspin")
    m = Machine(prog, max_instructions=1000)
    with pytest.raises(EmuError, match="infinite loop"):
        run_wave(m)


def test_unsupported_calls_are_errors():
    with pytest.raises(EmuError, match="function calls"):
        run_snippet("s_getpc_b64 s[0:1]", check=False)


def test_code_with_calls_loads_and_fails_only_when_executed():
    body = "s_mov_b32 s5, 1\ns_endpgm\ndevice_fn:\ns_getpc_b64 s[0:1]\ns_setpc_b64 s[30:31]"
    w = run_snippet(body)
    assert w.s[5] == 1
    with pytest.raises(EmuError, match="function calls"):
        run_snippet("s_getpc_b64 s[0:1]\ns_setpc_b64 s[30:31]")
