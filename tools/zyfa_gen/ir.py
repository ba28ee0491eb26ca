"""A small instruction IR for hand-scheduled gfx950 kernels.

A kernel is a :class:`Program`: a list of :class:`Op` (mnemonic, operands, modifiers) and :class:`Label`
items, built in Python by a kernel module (tools/zyfa_gen/kernels/). Operands are :class:`Reg` ranges or
plain text (constants, ``off``, labels). The IR knows nothing about semantics; it

* renders LLVM assembler syntax (``v[8:15]``, ``s4``, ``offset:32``, ``op_sel_hi:[0,0,0]``),
* checks register-tuple rules the assembler would reject later with a less useful message (MFMA tuple sizes,
  even alignment, SrcC identical to or disjoint from D, scale operands in VGPRs — gfx950-facts.md §1.1, §1.4),
* records the highest SGPR/VGPR/AGPR used, for the kernel descriptor.

Hazard padding (s_nop) is not written by hand: :func:`zyfa_gen.emit.emit_kernel` computes it with the
gfx950hazard checker and inserts it, then re-checks the final text.
"""
from __future__ import annotations

import dataclasses

__all__ = ["Reg", "V", "S", "A", "Op", "Label", "Comment", "Program", "IRError"]


class IRError(ValueError):
    """An instruction that violates a register rule; the message names the instruction and operand."""


@dataclasses.dataclass(frozen=True)
class Reg:
    """A range of `n` consecutive 32-bit registers starting at `lo` in register file `file` ("v", "s", "a")."""
    file: str
    lo: int
    n: int = 1

    def __post_init__(self):
        limit = {"v": 256, "a": 256, "s": 102}[self.file]
        if self.lo < 0 or self.n < 1 or self.lo + self.n > limit:
            raise IRError(f"register {self.file}{self.lo} x{self.n} outside the {self.file} file (0..{limit - 1})")

    def __str__(self) -> str:
        return f"{self.file}{self.lo}" if self.n == 1 else f"{self.file}[{self.lo}:{self.lo + self.n - 1}]"

    def __getitem__(self, i):
        """Sub-range: r[i] is one register, r[i:j] a range (relative to lo)."""
        if isinstance(i, slice):
            start, stop, _ = i.indices(self.n)
            return Reg(self.file, self.lo + start, stop - start)
        if not 0 <= i < self.n:
            raise IRError(f"{self}[{i}] out of range")
        return Reg(self.file, self.lo + i, 1)

    @property
    def hi(self) -> int:
        return self.lo + self.n - 1

    def overlaps(self, o: "Reg") -> bool:
        return self.file == o.file and self.lo <= o.hi and o.lo <= self.hi


def V(lo: int, n: int = 1) -> Reg:
    """VGPR range v[lo : lo+n-1]."""
    return Reg("v", lo, n)


def S(lo: int, n: int = 1) -> Reg:
    """SGPR range s[lo : lo+n-1]."""
    return Reg("s", lo, n)


def A(lo: int, n: int = 1) -> Reg:
    """AGPR range a[lo : lo+n-1]."""
    return Reg("a", lo, n)


@dataclasses.dataclass
class Op:
    """One instruction. `mods` are rendered after the operands in insertion order: True -> bare word
    (``offen``), other values -> ``name:value``; list values -> ``[a,b,c]``."""
    mnemonic: str
    operands: tuple
    mods: dict
    comment: str = ""

    def render(self) -> str:
        parts = [", ".join(str(o) for o in self.operands)] if self.operands else []
        for k, v in self.mods.items():
            if v is True:
                parts.append(k)
            elif isinstance(v, (list, tuple)):
                parts.append(f"{k}:[{','.join(str(x) for x in v)}]")
            else:
                parts.append(f"{k}:{v}")
        text = f"{self.mnemonic} {' '.join(parts)}".rstrip()
        return f"{text:<72} ; {self.comment}" if self.comment else text


@dataclasses.dataclass
class Label:
    name: str


@dataclasses.dataclass
class Comment:
    text: str


class Program:
    """Instruction list of one kernel plus the register high-water marks."""

    def __init__(self):
        self.items: list = []
        self.max_reg = {"v": -1, "s": -1, "a": -1}

    def _track(self, operands):
        for o in operands:
            if isinstance(o, Reg):
                self.max_reg[o.file] = max(self.max_reg[o.file], o.hi)

    def op(self, mnemonic: str, *operands, comment: str = "", **mods) -> Op:
        """Append an instruction. Modifier names with a trailing underscore drop it (``or_=...``)."""
        mods = {k.rstrip("_"): v for k, v in mods.items()}
        o = Op(mnemonic, tuple(operands), mods, comment)
        self._track(operands)
        self.items.append(o)
        return o

    def label(self, name: str) -> None:
        """Append a branch target (use ``.L`` names to keep them out of the symbol table)."""
        self.items.append(Label(name))

    def comment(self, text: str) -> None:
        """Append a comment line to the emitted assembly."""
        self.items.append(Comment(text))

    # --- checked helpers for instructions with register-tuple rules ------------------------------------
    def mfma_scale_f32_32x32x64_fp8(self, d: Reg, a: Reg, b: Reg, c, scale_a: Reg, scale_b: Reg, comment=""):
        """``v_mfma_scale_f32_32x32x64_f8f6f4`` with A and B in e4m3 (cbsz = blgp = 0, the defaults).

        d: 16 VGPRs/AGPRs (32x32 fp32, layout gfx950-facts.md §1.2); a, b: 8 VGPRs each (32 fp8 per lane);
        c: same tuple as d (accumulate), a disjoint 16-register tuple, or the inline constant 0;
        scale_a, scale_b: one VGPR each, E8M0 in byte 0 (op_sel = op_sel_hi = 0; §1.4, §8.7: SGPR and inline
        scales are rejected by LLVM 22 because of a hardware defect). 16 passes."""
        name = "v_mfma_scale_f32_32x32x64_f8f6f4"
        for what, r, n in (("D", d, 16), ("A", a, 8), ("B", b, 8)):
            if not isinstance(r, Reg) or r.n != n or r.file == "s":
                raise IRError(f"{name}: {what} must be {n} VGPRs/AGPRs, got {r}")
            if r.lo % 2:
                raise IRError(f"{name}: {what} tuple {r} must start at an even register")
        if a.file not in ("v", "a") or b.file not in ("v", "a") or d.file not in ("v", "a"):
            raise IRError(f"{name}: A, B, D must be VGPRs or AGPRs")
        if isinstance(c, Reg):
            if c.n != 16 or c.lo % 2 or c.file != d.file:
                raise IRError(f"{name}: SrcC {c} must be 16 registers of D's file, even-aligned")
            if c.overlaps(d) and c != d:
                raise IRError(f"{name}: SrcC {c} partially overlaps D {d}")
        elif str(c) != "0":
            raise IRError(f"{name}: SrcC must be a register tuple or 0, got {c}")
        for what, r in (("scale_a", scale_a), ("scale_b", scale_b)):
            if not isinstance(r, Reg) or r.file != "v" or r.n != 1:
                raise IRError(f"{name}: {what} must be one VGPR, got {r}")
        return self.op(name, d, a, b, c, scale_a, scale_b, op_sel_hi=[0, 0, 0], comment=comment)
