"""Reading a gfx950 code object (ELF, e_machine AMDGPU) back into assembly text the emulator parses:
instructions from ``llvm-objdump-22 -d --mcpu=gfx950`` (branch targets turned into labels), each kernel's
64-byte descriptor (``<name>.kd``) decoded into ``.amdhsa_*`` directives (AMDGPUUsage, "Kernel Descriptor"),
and the ``NT_AMDGPU_METADATA`` note (``llvm-readelf-22 --notes``) as an ``.amdgpu_metadata`` block."""
from __future__ import annotations

import os
import re
import struct
import subprocess

from .errors import EmuError

LLVM_BIN = os.environ.get("ZYFA_LLVM_BIN", "/usr/lib/llvm-22/bin")


def _elf_symbols(data: bytes):
    """name -> (value, size, section index) and section index -> (addr, offset) of a 64-bit LE ELF."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise EmuError("not a 64-bit ELF code object")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    secs = []
    for i in range(shnum):
        name, typ, flags, addr, off, size, link, info, align, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + i * shentsize)
        secs.append((typ, addr, off, size, link, entsize))
    syms = {}
    for typ, addr, off, size, link, entsize in secs:
        if typ != 2:  # SHT_SYMTAB
            continue
        stroff = secs[link][2]
        for j in range(size // entsize):
            st_name, st_info, st_other, st_shndx, st_value, st_size = struct.unpack_from(
                "<IBBHQQ", data, off + j * entsize)
            end = data.index(b"\0", stroff + st_name)
            syms[data[stroff + st_name:end].decode()] = (st_value, st_size, st_shndx)
    return syms, {i: (s[1], s[2]) for i, s in enumerate(secs)}


def decode_descriptor(kd: bytes) -> dict:
    """64-byte kernel descriptor -> ``.amdhsa_*`` directive values (names without the prefix)."""
    group, private, kernarg = struct.unpack_from("<III", kd, 0)
    rsrc3, rsrc1, rsrc2 = struct.unpack_from("<III", kd, 44)
    props, preload = struct.unpack_from("<HH", kd, 56)
    d = {
        "group_segment_fixed_size": group, "private_segment_fixed_size": private, "kernarg_size": kernarg,
        "accum_offset": ((rsrc3 & 0x3F) + 1) * 4,
        "enable_private_segment": rsrc2 & 1, "user_sgpr_count": (rsrc2 >> 1) & 0x1F,
        "system_sgpr_workgroup_id_x": (rsrc2 >> 7) & 1, "system_sgpr_workgroup_id_y": (rsrc2 >> 8) & 1,
        "system_sgpr_workgroup_id_z": (rsrc2 >> 9) & 1, "system_sgpr_workgroup_info": (rsrc2 >> 10) & 1,
        "system_vgpr_workitem_id": (rsrc2 >> 11) & 3,
        "user_sgpr_private_segment_buffer": props & 1, "user_sgpr_dispatch_ptr": (props >> 1) & 1,
        "user_sgpr_queue_ptr": (props >> 2) & 1, "user_sgpr_kernarg_segment_ptr": (props >> 3) & 1,
        "user_sgpr_dispatch_id": (props >> 4) & 1, "user_sgpr_flat_scratch_init": (props >> 5) & 1,
        "user_sgpr_private_segment_size": (props >> 6) & 1, "uses_dynamic_stack": (props >> 11) & 1,
        "user_sgpr_kernarg_preload_length": preload & 0x7F, "user_sgpr_kernarg_preload_offset": preload >> 7,
        "next_free_vgpr": ((rsrc1 & 0x3F) + 1) * 8, "next_free_sgpr": 0,
    }
    if (props >> 10) & 1:
        raise EmuError("wave32 kernel descriptor: the emulator runs wave64 only")
    return d


_INSN = re.compile(r"^\s+(\S.*?)\s*//\s*([0-9A-Fa-f]+):[^<]*(<[^>]*>)?\s*$")
_FUNC = re.compile(r"^([0-9a-fA-F]+) <([^>]+)>:$")


def code_object_to_asm(path) -> str:
    """Assembly text (parseable by :func:`gfx950emu.asm.parse_asm`) for a gfx950 code object."""
    data = open(path, "rb").read()
    syms, secs = _elf_symbols(data)
    r = subprocess.run([f"{LLVM_BIN}/llvm-objdump", "-d", "--mcpu=gfx950", str(path)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise EmuError(f"llvm-objdump failed on {path}: {r.stderr}")
    funcs = {}
    lines = []
    for line in r.stdout.splitlines():
        m = _FUNC.match(line)
        if m:
            funcs[m.group(2)] = int(m.group(1), 16)
            lines.append(f"{m.group(2)}:")
            continue
        m = _INSN.match(line)
        if not m:
            continue
        text, addr = m.group(1), int(m.group(2), 16)
        mn = text.split()[0]
        if mn == "s_branch" or mn.startswith("s_cbranch_"):
            simm = int(text.split()[1], 0)
            simm = simm - 0x10000 if simm >= 0x8000 else simm
            text = f"{mn} .L_{addr + 4 + 4 * simm:x}"
        lines.append(f".L_{addr:x}:")
        lines.append("\t" + text)
    out = ["\t.text"] + lines
    for name in funcs:
        kd = syms.get(name + ".kd")
        if kd is None:
            continue
        value, size, shndx = kd
        saddr, soff = secs[shndx]
        raw = data[soff + value - saddr: soff + value - saddr + 64]
        out.append(f"\t.amdhsa_kernel {name}")
        out += [f"\t\t.amdhsa_{k} {v}" for k, v in decode_descriptor(raw).items()]
        out.append("\t.end_amdhsa_kernel")
    r = subprocess.run([f"{LLVM_BIN}/llvm-readelf", "--notes", str(path)], capture_output=True, text=True)
    m = re.search(r"AMDGPU Metadata:\n\s*(---.*?\n\.\.\.)", r.stdout, re.S)
    if m:
        out += ["\t.amdgpu_metadata", m.group(1), "\t.end_amdgpu_metadata"]
    return "\n".join(out) + "\n"
