"""Assemble and link a generated .s into a gfx950 code object with LLVM 22, byte-for-byte reproducibly.

    llvm-mc-22 -triple=amdgcn-amd-amdhsa -mcpu=gfx950 -filetype=obj k.s -o k.o
    ld.lld-22 -shared k.o -o k.co
    llvm-objcopy-22 --remove-section=.comment k.co      (drops "Linker: <lld version>")

The result is an ELF ET_DYN, e_machine EM_AMDGPU (224), code object v5 (gfx950-facts.md §0, §5). Tools are
taken from $ZYFA_LLVM_MC / $ZYFA_LLD / $ZYFA_OBJCOPY or the Debian llvm-22 / lld-22 names.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

__all__ = ["assemble_and_link", "ToolError", "tool"]


class ToolError(RuntimeError):
    """An LLVM tool is missing or failed; the message has its stderr."""


def tool(env: str, *names: str) -> str:
    """Path of an LLVM tool: $env if set, else the first of `names` found on PATH or in /usr/lib/llvm-22/bin."""
    if os.environ.get(env):
        return os.environ[env]
    for n in names:
        p = shutil.which(n) or (f"/usr/lib/llvm-22/bin/{n.replace('-22', '')}"
                                if os.path.exists(f"/usr/lib/llvm-22/bin/{n.replace('-22', '')}") else None)
        if p:
            return p
    raise ToolError(f"none of {names} found (install llvm-22 and lld-22: tools/ci/install_deps.sh)")


def _run(cmd, cwd):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise ToolError(f"{' '.join(cmd)} failed:\n{r.stderr}")


def assemble_and_link(asm_text: str) -> bytes:
    """Code object bytes for `asm_text` (gfx950, as emitted by zyfa_gen.emit)."""
    mc = tool("ZYFA_LLVM_MC", "llvm-mc-22")
    lld = tool("ZYFA_LLD", "ld.lld-22")
    objcopy = tool("ZYFA_OBJCOPY", "llvm-objcopy-22")
    with tempfile.TemporaryDirectory() as td:
        with open(os.path.join(td, "k.s"), "w") as f:
            f.write(asm_text)
        _run([mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx950", "-filetype=obj", "k.s", "-o", "k.o"], td)
        _run([lld, "-shared", "k.o", "-o", "k.co"], td)
        _run([objcopy, "--remove-section=.comment", "k.co"], td)
        with open(os.path.join(td, "k.co"), "rb") as f:
            return f.read()
