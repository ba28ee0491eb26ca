"""Program.from_code_object: gfx950 code objects (clang-22 output, and llvm-mc + ld.lld output) are
disassembled with llvm-objdump-22, their kernel descriptors decoded, and run like the assembly text."""
import pathlib
import struct
import subprocess

import numpy as np

from gfx950emu import Machine, Program
from gfx950emu.codeobj import LLVM_BIN
from gfx950emu.toolchain import CLANG, hip_flags

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_clang_code_object_runs(tmp_path):
    co = tmp_path / "vadd.co"
    subprocess.run([CLANG] + hip_flags() + ["--no-gpu-bundle-output", "-o", str(co),
                                            str(ROOT / "tests" / "emu_kernels" / "vector_add.hip")], check=True)
    prog = Program.from_code_object(co)
    assert [(a.offset, a.size) for a in prog.args["vector_add"]] == [(0, 8), (8, 8), (16, 8), (24, 4)]
    m = Machine(prog)
    n = 300
    a = np.arange(n, dtype=np.float32)
    b = np.float32(0.25) * a
    pc = m.alloc(4 * n)
    m.launch("vector_add", grid=(2, 1, 1), block=(256, 1, 1),
             kernarg=struct.pack("<QQQi", m.upload(a), m.upload(b), pc, n))
    np.testing.assert_array_equal(m.download(pc, np.float32, (n,)), a + b)


def test_descriptor_round_trip(tmp_path):
    """Descriptor fields written as .amdhsa directives, assembled and linked with LLVM 22, decode back."""
    from test_emu_program import INIT_BODY, INIT_DIRECTIVES, kernel_text
    d = dict(INIT_DIRECTIVES, group_segment_fixed_size=4096, accum_offset=12)
    text = kernel_text("init_state", INIT_BODY, d)
    s, o, co = tmp_path / "k.s", tmp_path / "k.o", tmp_path / "k.co"
    s.write_text(text)
    subprocess.run([f"{LLVM_BIN}/llvm-mc", "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx950", "-filetype=obj", str(s),
                    "-o", str(o)], check=True)
    subprocess.run([f"{LLVM_BIN}/ld.lld", "-shared", str(o), "-o", str(co)], check=True)
    from_co = Program.from_code_object(co).kernel("init_state")
    from_text = Program.from_asm_text(text).kernel("init_state")
    for key in ("group_segment_fixed_size", "kernarg_size", "accum_offset", "user_sgpr_count",
                "user_sgpr_dispatch_ptr", "user_sgpr_kernarg_segment_ptr", "system_sgpr_workgroup_id_x",
                "system_sgpr_workgroup_id_y", "system_sgpr_workgroup_id_z", "system_vgpr_workitem_id"):
        assert from_co.d(key) == from_text.d(key), key
    # and it runs the same
    outs = []
    for prog in (Program.from_code_object(co), Program.from_asm_text(text)):
        m = Machine(prog)
        out = m.alloc(4096)
        m.launch("init_state", grid=(2, 3, 2), block=(8, 4, 2), kernarg=struct.pack("<Q", out))
        outs.append(m.download(out, np.uint32, (1024,)))
    np.testing.assert_array_equal(outs[0], outs[1])
