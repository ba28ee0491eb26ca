"""Program-level behaviour of the gfx950 emulator: the .amdhsa_kernel descriptor -> initial wave state,
kernel-argument and dispatch-packet setup, grids, s_barrier interleaving of waves, metadata parsing."""
import os
import struct
import subprocess
import tempfile

import numpy as np
import pytest

from gfx950emu import EmuError, Machine, Program
from gfx950emu.snippet import LLVM_MC

HEADER = """\t.amdgcn_target "amdgcn-amd-amdhsa--gfx950"
\t.amdhsa_code_object_version 5
\t.text
\t.globl {name}
\t.p2align 8
\t.type {name},@function
{name}:
"""


def kernel_text(name, body, directives):
    d = "\n".join(f"\t\t.amdhsa_{k} {v}" for k, v in directives.items())
    return (HEADER.format(name=name) + body +
            f"\n\ts_endpgm\n\t.section .rodata,\"a\",@progbits\n\t.p2align 6\n\t.amdhsa_kernel {name}\n{d}\n"
            "\t.end_amdhsa_kernel\n")


def assemble(text):
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "k.s")
        open(p, "w").write(text)
        r = subprocess.run([LLVM_MC, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx950", "-filetype=obj", p, "-o",
                            os.path.join(d, "k.o")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


INIT_BODY = """\ts_load_dwordx2 s[8:9], s[2:3], 0x0
\ts_load_dword s10, s[0:1], 0x4
\ts_mul_i32 s11, s6, 3
\ts_add_u32 s11, s11, s5
\ts_mul_i32 s11, s11, 2
\ts_add_u32 s11, s11, s4
\ts_lshl_b32 s12, s11, 8
\tv_lshlrev_b32_e32 v1, 2, v0
\tv_and_b32_e32 v1, 0xfc, v1
\tv_lshlrev_b32_e32 v2, 2, v0
\tv_bfe_u32 v3, v0, 10, 10
\tv_bfe_u32 v4, v0, 20, 10
\tv_and_b32_e32 v5, 0x3ff, v0
\tv_mad_u32_u24 v3, v4, 4, v3
\tv_mad_u32_u24 v3, v3, 8, v5
\tv_lshlrev_b32_e32 v3, 2, v3
\ts_waitcnt lgkmcnt(0)
\tv_add_u32_e32 v3, s12, v3
\tglobal_store_dword v3, v0, s[8:9]
\ts_lshl_b32 s13, s11, 4
\tv_mov_b32_e32 v6, s13
\tv_mov_b32_e32 v8, s4
\tv_mov_b32_e32 v9, s5
\tv_mov_b32_e32 v10, s6
\tv_mov_b32_e32 v11, s10
\tglobal_store_dwordx4 v6, v[8:11], s[8:9] offset:3072"""

INIT_DIRECTIVES = dict(next_free_vgpr=16, next_free_sgpr=16, accum_offset=16, user_sgpr_count=4,
                       user_sgpr_dispatch_ptr=1, user_sgpr_kernarg_segment_ptr=1, system_sgpr_workgroup_id_x=1,
                       system_sgpr_workgroup_id_y=1, system_sgpr_workgroup_id_z=1, system_vgpr_workitem_id=2,
                       kernarg_size=8)


def test_initial_state_from_descriptor():
    text = kernel_text("init_state", INIT_BODY, INIT_DIRECTIVES)
    assemble(text)
    m = Machine(Program.from_asm_text(text))
    out = m.alloc(4096)
    m.launch("init_state", grid=(2, 3, 2), block=(8, 4, 2), kernarg=struct.pack("<Q", out))
    ids = m.download(out, np.uint32, (12, 64))
    t = np.arange(64)
    packed = (t % 8) | (((t // 8) % 4) << 10) | ((t // 32) << 20)
    np.testing.assert_array_equal(ids, np.broadcast_to(packed, (12, 64)))
    wg = m.download(out + 3072, np.uint32, (12, 4))
    for z in range(2):
        for y in range(3):
            for x in range(2):
                lin = (z * 3 + y) * 2 + x
                assert list(wg[lin]) == [x, y, z, 8 | (4 << 16)], lin


BARRIER_BODY = """\ts_load_dwordx2 s[4:5], s[0:1], 0x0
\tv_lshlrev_b32_e32 v1, 2, v0
\tv_add_u32_e32 v2, 0x3e8, v0
\tds_write_b32 v1, v2
\ts_waitcnt lgkmcnt(0)
\ts_barrier
\tv_add_u32_e32 v3, 64, v0
\tv_and_b32_e32 v3, 0xff, v3
\tv_lshlrev_b32_e32 v3, 2, v3
\tds_read_b32 v4, v3
\ts_waitcnt lgkmcnt(0)
\ts_barrier
\tds_write_b32 v1, v0
\ts_waitcnt lgkmcnt(0)
\ts_barrier
\tds_read_b32 v5, v3
\ts_waitcnt lgkmcnt(0)
\tv_add_u32_e32 v4, v4, v5
\ts_waitcnt lgkmcnt(0)
\tglobal_store_dword v1, v4, s[4:5]"""


def test_barrier_interleaves_waves():
    """Four waves exchange data through LDS across s_barrier; each reads what the next wave wrote before
    the barrier, and the second phase overwrites LDS, so both 'run each wave to the end' and 'ignore the
    barrier' orders give different results."""
    text = kernel_text("xchg", BARRIER_BODY, dict(next_free_vgpr=8, next_free_sgpr=8, accum_offset=8,
                                                   user_sgpr_count=2, user_sgpr_kernarg_segment_ptr=1,
                                                   group_segment_fixed_size=1024, kernarg_size=8))
    assemble(text)
    m = Machine(Program.from_asm_text(text))
    out = m.alloc(1024)
    m.launch("xchg", block=(256, 1, 1), kernarg=struct.pack("<Q", out))
    t = np.arange(256)
    nxt = (t + 64) % 256
    np.testing.assert_array_equal(m.download(out, np.uint32, (256,)), (nxt + 1000) + nxt)


def test_metadata_args_and_hidden_args_are_filled():
    body = "\ts_load_dword s4, s[0:1], 0x10\n\ts_load_dwordx2 s[6:7], s[0:1], 0x0\n\ts_waitcnt lgkmcnt(0)\n" \
           "\tv_mov_b32_e32 v1, 0\n\tv_mov_b32_e32 v2, s4\n\tglobal_store_dword v1, v2, s[6:7]"
    text = kernel_text("hid", body, dict(next_free_vgpr=4, next_free_sgpr=8, accum_offset=4, user_sgpr_count=2,
                                          user_sgpr_kernarg_segment_ptr=1, kernarg_size=24))
    text += """\t.amdgpu_metadata
---
amdhsa.kernels:
  - .args:
      - .address_space:  global
        .name:           out
        .offset:         0
        .size:           8
        .value_kind:     global_buffer
      - .offset:         16
        .size:           4
        .value_kind:     hidden_block_count_x
    .group_segment_fixed_size: 0
    .kernarg_segment_align: 8
    .kernarg_segment_size: 24
    .max_flat_workgroup_size: 256
    .name:           hid
    .private_segment_fixed_size: 0
    .sgpr_count:     8
    .symbol:         hid.kd
    .vgpr_count:     4
    .wavefront_size: 64
amdhsa.target:   amdgcn-amd-amdhsa--gfx950
amdhsa.version:
  - 1
  - 2
...
\t.end_amdgpu_metadata
"""
    assemble(text)
    prog = Program.from_asm_text(text)
    assert [(a.name, a.offset, a.size, a.value_kind) for a in prog.args["hid"]] == [
        ("out", 0, 8, "global_buffer"), ("", 16, 4, "hidden_block_count_x")]
    m = Machine(prog)
    out = m.alloc(4)
    m.launch("hid", grid=(5, 1, 1), block=(64, 1, 1), kernarg=struct.pack("<Q", out))
    assert m.download(out, np.uint32, (1,))[0] == 5


def test_launch_errors():
    text = kernel_text("k", "\ts_nop 0", dict(next_free_vgpr=4, next_free_sgpr=8, accum_offset=4,
                                              group_segment_fixed_size=100000))
    m = Machine(Program.from_asm_text(text), lds_bytes=64 * 1024)
    with pytest.raises(EmuError, match="LDS"):
        m.launch("k")
    with pytest.raises(EmuError, match="no kernel named"):
        m.launch("nope")
    with pytest.raises(EmuError, match="1..1024"):
        Machine(Program.from_asm_text(text)).launch("k", block=(2048, 1, 1))


def test_lds_starts_poisoned():
    body = "\ts_load_dwordx2 s[4:5], s[0:1], 0x0\n\tv_lshlrev_b32_e32 v1, 2, v0\n\tds_read_b32 v2, v1\n" \
           "\ts_waitcnt lgkmcnt(0)\n\tglobal_store_dword v1, v2, s[4:5]"
    text = kernel_text("rd", body, dict(next_free_vgpr=4, next_free_sgpr=8, accum_offset=4, user_sgpr_count=2,
                                         user_sgpr_kernarg_segment_ptr=1, group_segment_fixed_size=256,
                                         kernarg_size=8))
    assemble(text)
    for fill, want in ((None, 0xFFFFFFFF), (0, 0)):
        m = Machine(Program.from_asm_text(text), **({} if fill is None else {"lds_fill": fill}))
        out = m.alloc(256)
        m.launch("rd", block=(64, 1, 1), kernarg=struct.pack("<Q", out))
        assert (m.download(out, np.uint32, (64,)) == want).all()


def test_registers_start_poisoned():
    body = "\ts_load_dwordx2 s[4:5], s[0:1], 0x0\n\tv_lshlrev_b32_e32 v1, 2, v0\n\tv_add_u32_e32 v2, s9, v7\n" \
           "\ts_waitcnt lgkmcnt(0)\n\tglobal_store_dword v1, v2, s[4:5]"
    text = kernel_text("rg", body, dict(next_free_vgpr=8, next_free_sgpr=16, accum_offset=8, user_sgpr_count=2,
                                         user_sgpr_kernarg_segment_ptr=1, kernarg_size=8))
    assemble(text)
    for kw, want in (({}, 0xFFFFFFFE), ({"reg_fill": 0}, 0)):
        m = Machine(Program.from_asm_text(text), **kw)
        out = m.alloc(256)
        m.launch("rg", block=(64, 1, 1), kernarg=struct.pack("<Q", out))
        assert (m.download(out, np.uint32, (64,)) == want).all()


RACE_OK = """\tv_lshlrev_b32_e32 v1, 2, v0
\tds_write_b32 v1, v0
\ts_waitcnt lgkmcnt(0)
\ts_barrier
\tv_xor_b32_e32 v2, 0x100, v1
\tds_read_b32 v3, v2
\ts_waitcnt lgkmcnt(0)"""


RACE_WAR = """\tv_lshlrev_b32_e32 v1, 2, v0
\tv_xor_b32_e32 v2, 0x100, v1
\tv_cmp_gt_u32_e32 vcc, 64, v0
\ts_and_saveexec_b64 s[0:1], vcc
\tds_read_b32 v3, v2
\ts_waitcnt lgkmcnt(0)
\ts_or_b64 exec, exec, s[0:1]
\tv_cmp_le_u32_e32 vcc, 64, v0
\ts_and_saveexec_b64 s[0:1], vcc
\tds_write_b32 v1, v0
\ts_waitcnt lgkmcnt(0)
\ts_or_b64 exec, exec, s[0:1]"""


@pytest.mark.parametrize("variant,error", [
    ("ok", None),
    ("no_barrier", "LDS race: wave 1 writes byte 256, which wave 0 read"),
    ("no_waitcnt", "LDS race: wave 0 reads byte 256, which wave 1 wrote"),
    ("war", "LDS race: wave 1 writes byte 256, which wave 0 read"),
])
def test_lds_race_check(variant, error):
    """Two waves exchange a dword each through LDS. The race check flags a missing barrier, a barrier whose
    writer has not waited for its LDS store (s_barrier does not wait on gfx950), and a write after another
    wave's read in the same barrier epoch."""
    body = RACE_OK
    if variant == "no_barrier":
        body = body.replace("\ts_barrier\n", "")
    elif variant == "no_waitcnt":
        body = body.replace("\ts_waitcnt lgkmcnt(0)\n\ts_barrier", "\ts_barrier\n\ts_waitcnt lgkmcnt(0)")
    elif variant == "war":  # only wave 0 reads bytes 256..511, then only wave 1 writes them
        body = RACE_WAR
    text = kernel_text("race", body, dict(next_free_vgpr=4, next_free_sgpr=8, accum_offset=4,
                                           group_segment_fixed_size=512))
    assemble(text)
    m = Machine(Program.from_asm_text(text))
    if error is None:
        m.launch("race", block=(128, 1, 1))
    else:
        with pytest.raises(EmuError, match=error):
            m.launch("race", block=(128, 1, 1))


def test_trace_hook_counts_instructions():
    import collections
    text = kernel_text("xchg", BARRIER_BODY, dict(next_free_vgpr=8, next_free_sgpr=8, accum_offset=8,
                                                   user_sgpr_count=2, user_sgpr_kernarg_segment_ptr=1,
                                                   group_segment_fixed_size=1024, kernarg_size=8))
    m = Machine(Program.from_asm_text(text))
    counts = collections.Counter()
    order = []
    m.trace = lambda w, ins: (counts.update([ins.mnemonic]), order.append((w.wave_id, ins.mnemonic)))
    m.launch("xchg", block=(256, 1, 1), kernarg=struct.pack("<Q", m.alloc(1024)))
    assert counts["s_barrier"] == 3 * 4 and counts["s_endpgm"] == 4
    assert sum(counts.values()) == m.instructions_executed
    # waves interleave at barriers: wave 1 starts before wave 0 finishes
    first_w1 = next(i for i, (wid, _) in enumerate(order) if wid == 1)
    last_w0 = max(i for i, (wid, _) in enumerate(order) if wid == 0)
    assert first_w1 < last_w0


@pytest.mark.parametrize("body,directives,error", [
    ("\tv_mov_b32_e32 v9, 0", dict(next_free_vgpr=8, accum_offset=8, next_free_sgpr=8), "uses v9"),
    ("\tv_accvgpr_write_b32 a4, 0", dict(next_free_vgpr=12, accum_offset=8, next_free_sgpr=8), "uses a4"),
    ("\ts_mov_b32 s20, 0", dict(next_free_vgpr=8, accum_offset=8, next_free_sgpr=16), "uses s20"),
    ("\tv_mov_b32_e32 v7, 0\n\tv_accvgpr_write_b32 a3, 0\n\ts_mov_b32 s15, 0",
     dict(next_free_vgpr=12, accum_offset=8, next_free_sgpr=16), None),
])
def test_register_allocation_is_checked_against_the_descriptor(body, directives, error):
    text = kernel_text("alloc", body, directives)
    assemble(text)
    m = Machine(Program.from_asm_text(text))
    if error:
        with pytest.raises(EmuError, match=error):
            m.launch("alloc")
    else:
        m.launch("alloc")
        assert m.program.check_registers("alloc") == {"vgpr": 7, "agpr": 3, "sgpr": 15}
