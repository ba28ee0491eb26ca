"""FP8 generator pipeline: IR checks, emitted assembly, code object (ELF, descriptor, v5 metadata), the generated
.inc (bytes + argument struct) and reproducibility (tools/gen_asm.py, tools/zyfa_gen)."""
import pathlib
import re
import shutil
import struct
import subprocess
import sys

import pytest

from gfx950hazard import check_text
from zyfa_gen import generate
from zyfa_gen.emit import emit_kernel
from zyfa_gen.ir import IRError, Program, S, V
from zyfa_gen.kernels import qk_block_fp8

ROOT = pathlib.Path(__file__).resolve().parents[2]
NAME = "zyfa_fp8_qk_block_32x128"


@pytest.fixture(scope="module")
def gen():
    return generate(NAME)


# ---------------------------------------------------------------------------------------------- IR rules
@pytest.mark.parametrize("args,msg", [
    ((V(128, 16), V(9, 8), V(24, 8), 0, V(88), V(90)), "A tuple v\\[9:16\\] must start at an even register"),
    ((V(128, 16), V(8, 4), V(24, 8), 0, V(88), V(90)), "A must be 8"),
    ((V(128, 16), V(8, 8), V(24, 8), V(120, 16), V(88), V(90)), "partially overlaps"),
    ((V(128, 16), V(8, 8), V(24, 8), 0, S(4), V(90)), "scale_a must be one VGPR"),
    ((V(128, 16), V(8, 8), V(24, 8), 1, V(88), V(90)), "SrcC must be"),
])
def test_ir_rejects_illegal_mfma_operands(args, msg):
    with pytest.raises(IRError, match=msg):
        Program().mfma_scale_f32_32x32x64_fp8(*args)


def test_ir_register_bounds():
    with pytest.raises(IRError):
        V(250, 8)
    with pytest.raises(IRError):
        S(102)
    assert str(V(8, 8)[4:8]) == "v[12:15]" and str(S(4, 2)) == "s[4:5]" and str(V(3)) == "v3"


# ---------------------------------------------------------------------------------------------- assembly
def test_emitted_assembly_is_hazard_free_and_padding_is_needed(gen):
    _, asm, _, _ = gen
    assert ".amdhsa_code_object_version 5" in asm and "DO NOT EDIT" in asm
    assert asm.count("v_mfma_scale_f32_32x32x64_f8f6f4") == 8
    assert check_text(asm) == []
    stripped = re.sub(r"(?m)^\s*s_nop \d+.*\n", "", asm)
    assert stripped != asm
    assert "mfma_d_to_read" in {v.rule for v in check_text(stripped)}


def test_emit_refuses_program_without_endpgm():
    spec = qk_block_fp8.build()
    spec.program.items.pop()
    with pytest.raises(Exception, match="s_endpgm"):
        emit_kernel(spec, "x")


# ---------------------------------------------------------------------------------------------- code object
def _elf(co: bytes):
    assert co[:4] == b"\x7fELF" and co[4] == 2 and co[5] == 1  # ELF64, little endian
    e_type, e_machine = struct.unpack_from("<HH", co, 16)
    e_flags = struct.unpack_from("<I", co, 48)[0]
    shoff = struct.unpack_from("<Q", co, 40)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", co, 58)
    secs = [struct.unpack_from("<IIQQQQIIQQ", co, shoff + i * shentsize) for i in range(shnum)]
    symtab = [s for s in secs if s[1] == 2][0]  # SHT_SYMTAB
    strtab = secs[symtab[6]]
    syms = {}
    for off in range(symtab[4], symtab[4] + symtab[5], 24):
        st_name, _, _, shndx, value, size = struct.unpack_from("<IBBHQQ", co, off)
        end = co.index(b"\0", strtab[4] + st_name)
        name = co[strtab[4] + st_name:end].decode()
        syms[name] = (shndx, value, size)
    return e_type, e_machine, e_flags, co[7], co[8], secs, syms


def test_code_object_header_and_descriptor(gen):
    spec, asm, co, _ = gen
    e_type, e_machine, e_flags, osabi, abiver, secs, syms = _elf(co)
    assert (e_type, e_machine) == (3, 224)  # ET_DYN, EM_AMDGPU
    assert e_flags & 0xFF == 0x4F  # EF_AMDGPU_MACH_AMDGCN_GFX950
    assert (osabi, abiver) == (64, 3)  # ELFOSABI_AMDGPU_HSA, code object v5
    shndx, kd_addr, kd_size = syms[NAME + ".kd"]
    assert kd_size == 64
    sec = secs[shndx]
    kd = co[sec[4] + kd_addr - sec[3]:][:64]
    group, private, kernarg = struct.unpack_from("<III", kd, 0)
    entry = struct.unpack_from("<q", kd, 16)[0]
    rsrc3, rsrc1, rsrc2 = struct.unpack_from("<III", kd, 44)
    props = struct.unpack_from("<H", kd, 56)[0]
    assert (group, private, kernarg) == (0, 0, spec.kernarg_size) == (0, 0, 56)
    assert kd_addr + entry == syms[NAME][1]  # entry points at the kernel's code
    vgprs = spec.program.max_reg["v"] + 1
    assert rsrc1 & 0x3F == (vgprs + 7) // 8 - 1  # VGPR granules of 8
    assert rsrc3 & 0x3F == (vgprs + 3) // 4 - 1  # ACCUM_OFFSET
    assert (rsrc2 >> 1) & 0x1F == 2 and (rsrc2 >> 7) & 1 == 1  # 2 user SGPRs, workgroup id x
    assert props & (1 << 3)  # kernarg segment pointer in s[0:1]


def test_metadata_matches_args_and_struct(gen):
    spec, _, co, inc = gen
    readelf = shutil.which("llvm-readelf-22") or "/usr/lib/llvm-22/bin/llvm-readelf"
    r = subprocess.run([readelf, "--notes", "-"], input=co, capture_output=True)
    if r.returncode != 0:  # older readelf cannot read stdin: use a temp file
        import tempfile
        with tempfile.NamedTemporaryFile(suffix=".co") as f:
            f.write(co)
            f.flush()
            r = subprocess.run([readelf, "--notes", f.name], capture_output=True)
    notes = r.stdout.decode()
    assert "amdhsa.target:   amdgcn-amd-amdhsa--gfx950" in notes
    args = re.findall(r"\.name:\s+(\w+)\n\s+\.offset:\s+(\d+)\n\s+\.size:\s+(\d+)", notes)
    assert [(n, int(o), int(s)) for n, o, s in args] == [(a.name, a.offset, a.size) for a in spec.args]
    assert re.search(r"\.kernarg_segment_size: 56", notes)
    assert re.search(r"\.vgpr_count:\s+%d" % (spec.program.max_reg["v"] + 1), notes)
    # the generated C++ struct pins the same offsets
    pinned = re.findall(r"offsetof\(\w+_args, (\w+)\) == (\d+)", inc)
    assert [(n, int(o)) for n, o in pinned] == [(a.name, a.offset) for a in spec.args]
    assert f"sizeof({NAME}_args) == 56" in inc


def test_inc_embeds_exactly_the_code_object(gen):
    _, asm, co, inc = gen
    body = inc[inc.index("_code_object[") :]
    data = bytes(int(x, 16) for x in re.findall(r"0x([0-9a-f]{2})", body))
    assert data == co
    import hashlib
    assert hashlib.sha256(asm.encode()).hexdigest() in inc
    assert "DO NOT EDIT" in inc and "tools/gen_asm.py" in inc


# ---------------------------------------------------------------------------------------------- reproducibility
def test_generation_is_byte_for_byte_reproducible(gen):
    _, asm, co, inc = gen
    _, asm2, co2, inc2 = generate(NAME)
    assert (asm, co, inc) == (asm2, co2, inc2)


def test_checked_in_files_are_current(gen):
    _, asm, _, inc = gen
    assert (ROOT / "asm" / f"{NAME}.s").read_text() == asm
    assert (ROOT / "include" / "zyfa" / "fp8" / "gfx950" / f"{NAME}.inc").read_text() == inc
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_asm.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_check_mode_detects_a_stale_file(tmp_path):
    (tmp_path / "asm").mkdir()
    (tmp_path / "include" / "zyfa" / "fp8" / "gfx950").mkdir(parents=True)
    gen_asm = str(ROOT / "tools" / "gen_asm.py")
    r = subprocess.run([sys.executable, gen_asm, "--root", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert subprocess.run([sys.executable, gen_asm, "--check", "--root", str(tmp_path)]).returncode == 0
    inc = tmp_path / "include" / "zyfa" / "fp8" / "gfx950" / f"{NAME}.inc"
    inc.write_text(inc.read_text().replace("0x7f, 0x45", "0x7f, 0x46", 1))
    r = subprocess.run([sys.executable, gen_asm, "--check", "--root", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 1 and "stale" in r.stderr
    inc.unlink()
    subprocess.run([sys.executable, gen_asm, "--root", str(tmp_path)], check=True, capture_output=True)
    (tmp_path / "asm" / "zyfa_old_kernel.s").write_text("; orphan\n")
    r = subprocess.run([sys.executable, gen_asm, "--check", "--root", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 1 and "zyfa_old_kernel.s has no generator kernel" in r.stderr


def test_agpr_accumulators_set_accum_offset_and_counts():
    """A kernel whose MFMA accumulates in AGPRs: accum_offset after the VGPRs, unified count in the descriptor."""
    from zyfa_gen.build import assemble_and_link
    from zyfa_gen.ir import A
    from zyfa_gen.kernel import KernelSpec
    p = Program()
    p.op("v_mov_b32_e32", V(40), 127)
    p.op("v_mov_b32_e32", V(41), 127)
    p.mfma_scale_f32_32x32x64_fp8(A(0, 16), V(8, 8), V(16, 8), 0, V(40), V(41))
    p.op("v_accvgpr_read_b32", V(0), A(15))
    p.op("s_endpgm")
    spec = KernelSpec("zyfa_test_agpr", "AGPR test kernel", [], p)
    asm = emit_kernel(spec, "test")
    assert ".amdhsa_accum_offset 44" in asm and ".amdhsa_next_free_vgpr 60" in asm
    assert check_text(asm) == []
    co = assemble_and_link(asm)
    _, _, _, _, _, secs, syms = _elf(co)
    shndx, kd_addr, _ = syms["zyfa_test_agpr.kd"]
    kd = co[secs[shndx][4] + kd_addr - secs[shndx][3]:][:64]
    rsrc3, rsrc1 = struct.unpack_from("<II", kd, 44)
    assert rsrc1 & 0x3F == (60 + 7) // 8 - 1 and rsrc3 & 0x3F == 44 // 4 - 1
