"""The generator IR for real kernels (tools/zyfa_gen): typed builders from the instruction table, named virtual
registers (lifetimes, allocation, pressure), counted loops, the waitcnt and nop passes, kernel arguments loaded
from the Arg list, and the generated dispatch table. One loop kernel built only from these runs in the emulator
with its waitcnt check on."""
import pathlib
import struct
import subprocess

import numpy as np
import pytest

from gfx950emu import Machine, Program as EmuProgram
from zyfa_gen import dispatch
from zyfa_gen.emit import emit_kernel
from zyfa_gen.ir import IRError, Label, Op, Program, S, V
from zyfa_gen.kernel import Arg, KernelSpec, layout_args, load_kernargs
from zyfa_gen.passes import insert_waitcnt

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _ops(items):
    return [x.render().split(" ;")[0].strip() for x in items if isinstance(x, Op)]


# ---------------------------------------------------------------------------------------------- builders
def test_typed_builders_check_class_and_size():
    p = Program()
    p.v_add_u32_e32(V(1), V(2), V(3))
    p.s_load_dwordx4(S(4, 4), S(0, 2), "0x10")
    with pytest.raises(IRError, match="operand src1 must be one of \\[v\\]"):
        p.v_add_u32_e32(V(1), V(2), S(3))
    with pytest.raises(IRError, match="sdst must be 4 register"):
        p.s_load_dwordx4(S(4, 2), S(0, 2), "0x10")
    with pytest.raises(IRError, match="3 operands"):
        p.v_add_u32_e32(V(1), V(2))
    with pytest.raises(IRError, match="must be a register, got the constant"):
        p.buffer_load_dword(V(1), V(2), S(4, 4), "0", offen=True) and None
        p.v_add_u32_e32(V(1), V(2), 5)
    with pytest.raises(AttributeError):
        p.v_not_an_instruction(V(1))


# ---------------------------------------------------------------------------------------------- registers
def test_read_before_write_and_dead_register_are_errors():
    p = Program()
    a, b = p.vreg("a"), p.vreg("b")
    p.v_add_u32_e32(a, b, b)
    p.v_readfirstlane_b32(S(4), a)
    p.s_endpgm()
    with pytest.raises(IRError, match="%b is read before any instruction writes it"):
        p.finalize()
    p = Program()
    a = p.vreg("a")
    p.v_mov_b32_e32(a, 1)
    p.s_endpgm()
    with pytest.raises(IRError, match="%a is written but never read"):
        p.finalize()


def test_allocation_reuses_dead_registers_and_reports_pressure():
    p = Program()
    lane = p.vreg("lane", pin=0)
    x, y, z = p.vreg("x"), p.vreg("y", 2), p.vreg("z")
    p.v_mov_b32_e32(x, lane)        # lane dies here
    p.v_mov_b32_e32(y[0], x)        # x dies
    p.v_mov_b32_e32(y[1], 2)
    p.v_add_u32_e32(z, y[0], y[1])  # y dies
    p.v_readfirstlane_b32(S(4), z)
    p.s_endpgm()
    p.finalize()
    ops = _ops(p.items)
    assert ops[:4] == ["v_mov_b32_e32 v1, v0", "v_mov_b32_e32 v2, v1", "v_mov_b32_e32 v3, 2",
                       "v_add_u32_e32 v0, v2, v3"]
    assert p.pressure.live["v"] == 3 and p.pressure.top["v"] == 4 and p.pressure.top["s"] == 5


def test_loop_keeps_values_live_across_the_back_edge():
    p = Program()
    n, i = p.sreg("n"), p.sreg("i")
    acc, t = p.vreg("acc"), p.vreg("t")
    p.s_mov_b32(n, 4)
    p.s_mov_b32(i, 0)
    p.v_mov_b32_e32(acc, 0)
    with p.loop(".Lbody", i, n):
        p.v_mov_b32_e32(t, i)           # t lives only inside one iteration ...
        p.v_add_u32_e32(acc, acc, t)    # ... acc across iterations
    p.v_readfirstlane_b32(S(10), acc)
    p.s_endpgm()
    p.finalize()
    text = "\n".join(_ops(p.items))
    assert "s_cbranch_scc1 .Lbody" in text and "s_cmp_lt_u32" in text
    acc_reg = _ops(p.items)[2].split()[1].rstrip(",")
    t_reg = _ops(p.items)[3].split()[1].rstrip(",")
    assert acc_reg != t_reg


# ---------------------------------------------------------------------------------------------- waitcnt
def _wait_lines(items):
    return [x for x in _ops(items) if x.startswith("s_waitcnt")]


def test_waitcnt_counts_younger_loads_and_scalar_loads_force_zero():
    p = Program()
    for j in range(3):
        p.buffer_load_dword(V(10 + j), V(1), S(4, 4), 0, offen=True)
    p.v_add_u32_e32(V(20), V(10), V(2))   # oldest load: 2 younger ones may stay outstanding
    p.v_add_u32_e32(V(21), V(12), V(2))   # newest: vmcnt(0)
    p.s_load_dword(S(8), S(0, 2), "0x0")
    p.ds_read_b32(V(30), V(3))
    p.ds_read_b32(V(31), V(3))
    p.v_add_u32_e32(V(22), V(30), V(2))   # LDS op, one younger LDS op: lgkmcnt(1) even with the scalar load
    p.s_add_u32(S(9), S(8), 1)            # scalar load: lgkmcnt(0)
    p.ds_write_b32(V(3), V(22))
    p.s_barrier()                          # a DS write must land before the barrier
    p.s_endpgm()
    assert _wait_lines(insert_waitcnt(p.items)) == [
        "s_waitcnt vmcnt(2)", "s_waitcnt vmcnt(0)", "s_waitcnt lgkmcnt(1)", "s_waitcnt lgkmcnt(0)",
        "s_waitcnt lgkmcnt(0)"]


def test_waitcnt_lds_dma_waits_at_the_barrier_that_publishes_it():
    """An LDS-DMA load is waited for (vmcnt) before the barrier that publishes its data: the next barrier by
    default, the second one for lds_publish = 2 (a load issued one block ahead); a younger ordinary load may stay
    outstanding."""
    p = Program()
    p.op("buffer_load_dwordx4", V(1), S(4, 4), 0, offen=True, lds=True)      # publish at the next barrier
    x = p.op("buffer_load_dwordx4", V(2), S(4, 4), 0, offen=True, lds=True)  # one block ahead
    x.lds_publish = 2
    p.buffer_load_dword(V(10), V(1), S(4, 4), 0, offen=True)
    p.s_barrier()        # the first DMA: 2 younger VMEM ops may stay outstanding
    p.s_barrier()        # the second DMA: 1 younger
    p.v_add_u32_e32(V(20), V(10), V(10))
    p.s_endpgm()
    assert _wait_lines(insert_waitcnt(p.items)) == ["s_waitcnt vmcnt(2)", "s_waitcnt vmcnt(1)", "s_waitcnt vmcnt(0)"]


def test_waitcnt_flushes_at_labels_and_honours_explicit_waits():
    items = [Op("buffer_load_dword", (V(10), V(1), S(4, 4), 0), {"offen": True}),
             Op("s_waitcnt", ("vmcnt(0)",), {}),
             Op("v_add_u32_e32", (V(2), V(10), V(10)), {}),
             Op("buffer_load_dword", (V(11), V(1), S(4, 4), 0), {"offen": True}),
             Label(".Lx"),
             Op("v_add_u32_e32", (V(3), V(11), V(11)), {}),
             Op("s_endpgm", (), {})]
    assert _wait_lines(insert_waitcnt(items)) == ["s_waitcnt vmcnt(0)", "s_waitcnt vmcnt(0)"]


def test_waitcnt_follows_a_prefetch_across_the_loop_back_edge():
    """A load issued at the end of an iteration and read at the start of the next: the pass carries its queue
    around the back edge (no flush at the loop head) and waits at the read with the count that is safe on both
    entry paths (from the prologue's load and from the previous iteration's)."""
    def build():
        p = Program()
        x, y, acc = p.vreg("x"), p.vreg("y"), p.vreg("acc")
        i = p.sreg("i")
        p.buffer_load_dword(x, V(0), S(4, 4), 0, offen=True)          # prologue prefetch
        p.v_mov_b32_e32(acc, 0)
        p.s_mov_b32(i, 0)
        with p.loop(".Lp", i, 8):
            p.v_add_u32_e32(acc, acc, x)                               # needs this iteration's x
            p.buffer_load_dword(y, V(0), S(4, 4), 0, offen=True)       # an unrelated load in flight
            p.buffer_load_dword(x, V(0), S(4, 4), 0, offen=True)       # next iteration's x (WAR on x: ok, read above)
            p.v_add_u32_e32(acc, acc, y)                               # y: x's load may stay outstanding
        p.v_readfirstlane_b32(S(10), acc)
        p.s_endpgm()
        p.finalize()
        return p
    text = [x.render().split(" ;")[0].strip() if isinstance(x, Op) else f"{x.name}:"
            for x in insert_waitcnt(build().items)]
    head = text.index(".Lp:")
    assert text[head + 1] == "s_waitcnt vmcnt(0)"       # x: the newest load on the prologue path and the back edge
    k = next(j for j in range(head, len(text)) if text[j].startswith("v_add") and j > head + 3)
    assert text[k - 1] == "s_waitcnt vmcnt(1)"          # y: x's load (issued after it) may still be outstanding
    assert text.count("s_waitcnt vmcnt(0)") == 1 and not any("lgkmcnt" in t for t in text)


# ---------------------------------------------------------------------------------------------- kernargs
def test_kernargs_offsets_come_from_the_arg_list():
    args = [Arg("x", "ptr", "const float*", "x"), Arg("n", "u32", "std::uint32_t", "n"),
            Arg("y", "ptr", "float*", "y"), Arg("m", "u32", "std::uint32_t", "m")]
    assert layout_args(args) == 32 and [a.offset for a in args] == [0, 8, 16, 24]
    p = Program()
    kern = p.sreg("kernarg", 2, pin=0)
    regs = load_kernargs(p, args, kern)
    assert _ops(p.items) == ["s_load_dwordx8 %arg0_7, %kernarg, 0x0"]
    assert (regs["y"].offset, regs["y"].n, regs["m"].offset, regs["m"].n) == (4, 2, 6, 1)


# ---------------------------------------------------------------------------------------------- end to end
def _sum_kernel():
    """out[lane] = sum_{j < n} x[j * 64 + lane] (u32), a loop with one load per iteration."""
    args = [Arg("x", "ptr", "const std::uint32_t*", "x", const=True), Arg("out", "ptr", "std::uint32_t*", "out"),
            Arg("n", "u32", "std::uint32_t", "iterations")]
    p = Program()
    kern = p.sreg("kernarg", 2, pin=0)
    lane = p.vreg("lane", pin=0)
    a = load_kernargs(p, args, kern)
    rx, ro = p.sreg("rsrc_x", 4), p.sreg("rsrc_out", 4)
    for r, ptr in ((rx, a["x"]), (ro, a["out"])):
        p.s_mov_b32(r[0], ptr[0])
        p.s_and_b32(r[1], ptr[1], "0xffff")
        p.s_mov_b32(r[2], "0x10000")
        p.s_mov_b32(r[3], "0x20000")
    off, acc, val = p.vreg("off"), p.vreg("acc"), p.vreg("val")
    i, soff = p.sreg("i"), p.sreg("soff")
    p.v_lshlrev_b32_e32(off, 2, lane)
    p.v_mov_b32_e32(acc, 0)
    p.s_mov_b32(i, 0)
    with p.loop(".Lsum", i, a["n"]):
        p.s_lshl_b32(soff, i, 8)
        p.buffer_load_dword(val, off, rx, soff, offen=True)
        p.v_add_u32_e32(acc, acc, val)
    p.buffer_store_dword(acc, off, ro, 0, offen=True)
    p.s_endpgm()
    return KernelSpec("zyfa_test_sum_loop", "loop test kernel", args, p)


def test_loop_kernel_runs_in_the_emulator_with_waitcnt_check():
    asm = emit_kernel(_sum_kernel(), "test")
    assert "s_cbranch_scc1 .Lsum" in asm and "s_waitcnt vmcnt(0)" in asm
    prog = EmuProgram.from_asm_text(asm)
    m = Machine(prog)
    x = np.arange(64 * 5, dtype=np.uint32) * 3 + 1
    xa = m.upload(x)
    out = m.alloc(256)
    m.launch("zyfa_test_sum_loop", grid=(1, 1, 1), block=(64, 1, 1), kernarg=struct.pack("<QQI4x", xa, out, 5))
    got = m.download(out, np.uint32, (64,))
    np.testing.assert_array_equal(got, x.reshape(5, 64).sum(axis=0))


# ---------------------------------------------------------------------------------------------- dispatch
def test_dispatch_table_lists_every_kernel_and_compiles_on_the_host(tmp_path):
    text = (ROOT / dispatch.FILE).read_text()
    assert '{"qk_block_fp8", "m=32,n=128,d=128", zyfa_fp8_qk_block_32x128_name' in text
    src = tmp_path / "t.cpp"
    src.write_text('#include <cstddef>\n#include <cstdint>\n#include <cstring>\n'
                   '#include <zyfa/fp8/gfx950/dispatch_table.inc>\n'
                   'int main() { auto* e = zyfa::fp8::gen::find_kernel("qk_block_fp8", "m=32,n=128,d=128");\n'
                   '  return e && e->kernarg_size == 56 && e->workgroup_size == 64 &&\n'
                   '         !zyfa::fp8::gen::find_kernel("qk_block_fp8", "m=32,n=64,d=128") ? 0 : 1; }\n')
    exe = tmp_path / "t"
    subprocess.run(["g++", "-std=c++17", "-I", str(ROOT / "include"), str(src), "-o", str(exe)], check=True)
    assert subprocess.run([str(exe)]).returncode == 0


# ---------------------------------------------------------------------------------------------- unverified semantics
def _mfma_items(pre, **mods):
    p = Program()
    for x in pre:
        p.op(*x)
    p.op("v_mfma_scale_f32_32x32x64_f8f6f4", V(0, 16), V(16, 8), V(24, 8), 0, V(40), V(41),
         **({"op_sel_hi": [0, 0, 0]} | mods))
    p.op("s_endpgm")
    return p.items


def test_generator_rejects_unverified_semantics():
    from zyfa_gen.passes import UnverifiedSemantics, check_verified_semantics
    check_verified_semantics(_mfma_items([("v_mov_b32_e32", V(40), 127), ("v_mov_b32_e32", V(41), 127)]))
    with pytest.raises(UnverifiedSemantics, match="op_sel on the scale operands"):
        check_verified_semantics(_mfma_items([], op_sel=[1, 0, 0]))
    with pytest.raises(UnverifiedSemantics, match="op_sel_hi on the scale operands"):
        check_verified_semantics(_mfma_items([], op_sel_hi=[0, 1, 0]))
    with pytest.raises(UnverifiedSemantics, match="byte 0xFF"):
        check_verified_semantics(_mfma_items([("v_mov_b32_e32", V(41), "0xff")]))
    with pytest.raises(UnverifiedSemantics, match="byte 0xFF"):
        check_verified_semantics(_mfma_items([("v_mov_b32_e32", V(40), -1)]))
    low = ("v_cvt_pk_fp8_f32", V(16), V(50), V(51))
    with pytest.raises(UnverifiedSemantics, match="high half"):
        check_verified_semantics(_mfma_items([low]))
    p = Program()
    p.op(*low)
    p.op("v_cvt_pk_fp8_f32", V(16), V(52), V(53), op_sel=[0, 0, 1])
    p.op("v_add_u32_e32", V(60), V(16), V(16))
    p.op("s_endpgm")
    check_verified_semantics(p.items)
