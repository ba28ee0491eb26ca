"""The instruction IR for hand-scheduled gfx950 kernels.

A kernel is a :class:`Program`: a list of :class:`Op` (mnemonic, operands, modifiers), :class:`Label` and
:class:`Comment` items, built in Python by a kernel module (tools/zyfa_gen/kernels/). Operands are physical
:class:`Reg` ranges, named virtual registers (:class:`~zyfa_gen.regs.VReg` from ``p.vreg``/``p.sreg``/``p.areg``,
sliced like ``acc[0:4]``) or plain text (constants, ``off``, labels). The IR

* builds instructions through typed builders (``p.v_add_u32_e32(dst, a, b)``): every mnemonic with an operand
  signature in :data:`gfx950isa.table.SIGNATURES` checks operand count and register class (VGPR, AGPR, SGPR,
  constant, label) and tuple size when it is built; ``p.op(mnemonic, ...)`` stays for anything else;
* checks register-tuple rules the assembler would reject later with a less useful message (MFMA tuple sizes
  from :data:`gfx950isa.table.MFMA_SHAPES`, even alignment, SrcC identical to or disjoint from D, scale
  operands in VGPRs — gfx950-facts.md §1.1, §1.4);
* has basic blocks and counted loops (:meth:`Program.loop`: label, body, ``s_add_u32``/``s_cmp``/
  ``s_cbranch_scc1`` back edge);
* at emission (:meth:`Program.finalize`) allocates the virtual registers (lifetimes from the one instruction
  table's operand roles, pressure report: :mod:`zyfa_gen.regs`), then :mod:`zyfa_gen.passes` inserts the
  ``s_waitcnt``s the outstanding memory operations need and the ``s_nop``s the hazard rules need.
"""
from __future__ import annotations

import contextlib
import dataclasses

from gfx950isa import table as isa_table

from .regs import IRError, Pressure, VReg, VSlice, allocate

__all__ = ["Reg", "V", "S", "A", "Op", "Label", "Comment", "Program", "IRError", "VReg", "VSlice", "Pressure"]


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


_DEFAULT_ALIGN = {"v": 2, "a": 2}


def _operand_file_n(o):
    """(file, n) of a register operand (physical or virtual), else None."""
    if isinstance(o, (Reg, VReg, VSlice)):
        return o.file, o.n
    return None


def _const_like(o) -> bool:
    if isinstance(o, (int, float)):
        return True
    t = str(o).strip().lower()
    try:
        float(int(t, 0)) if not any(c in t for c in ".e") or t.startswith("0x") else float(t)
        return True
    except ValueError:
        return t in ("inf", "-inf")


class Program:
    """Instruction list of one kernel, its virtual registers, loops, and (after :meth:`finalize`) the
    physical register high-water marks and the register pressure."""

    def __init__(self):
        self.items: list = []
        self.max_reg = {"v": -1, "s": -1, "a": -1}
        self.vregs: list = []
        self.loops: list = []  # (first item index of the body, index of the back-edge branch)
        self.pressure: Pressure | None = None
        self._names: set = set()
        self._final = False

    # --- registers --------------------------------------------------------------------------------------
    def _new(self, name: str, file: str, n: int, align, pin) -> VReg:
        if name in self._names:
            raise IRError(f"virtual register %{name} defined twice")
        self._names.add(name)
        if align is None:
            align = _DEFAULT_ALIGN.get(file, 1) if n >= 2 else 1
            if file == "s":
                align = 2 if n == 2 else (4 if n >= 4 else 1)
        v = VReg(name, file, n, align, pin)
        self.vregs.append(v)
        return v

    def vreg(self, name: str, n: int = 1, align: int | None = None, pin: int | None = None) -> VReg:
        """A named virtual VGPR range (tuples of 2+ even-aligned unless `align` says otherwise); `pin` fixes
        its physical first register (hardware-initialised registers such as the workitem id in v0)."""
        return self._new(name, "v", n, align, pin)

    def sreg(self, name: str, n: int = 1, align: int | None = None, pin: int | None = None) -> VReg:
        """A named virtual SGPR range (pairs even, quads and wider 4-aligned); `pin` as for :meth:`vreg`
        (kernarg pointer s[0:1], workgroup id s2)."""
        return self._new(name, "s", n, align, pin)

    def areg(self, name: str, n: int = 1, align: int | None = None, pin: int | None = None) -> VReg:
        """A named virtual AGPR range."""
        return self._new(name, "a", n, align, pin)

    def _track(self, operands):
        for o in operands:
            if isinstance(o, Reg):
                self.max_reg[o.file] = max(self.max_reg[o.file], o.hi)

    # --- instructions -----------------------------------------------------------------------------------
    def op(self, mnemonic: str, *operands, comment: str = "", **mods) -> Op:
        """Append an instruction. Modifier names with a trailing underscore drop it (``or_=...``)."""
        if self._final:
            raise IRError("program already finalized")
        mods = {k.rstrip("_"): v for k, v in mods.items()}
        o = Op(mnemonic, tuple(operands), mods, comment)
        self._track(operands)
        self.items.append(o)
        return o

    def __getattr__(self, name: str):
        """Typed builder for every mnemonic with a signature in gfx950isa.table.SIGNATURES."""
        sig = isa_table.SIGNATURES.get(name)
        if sig is None:
            raise AttributeError(f"{type(self).__name__} has no attribute or instruction builder {name!r}")

        def build(*operands, comment: str = "", **mods):
            if len(operands) != len(sig):
                raise IRError(f"{name}: {len(sig)} operands ({', '.join(r for r, _, _ in sig)}), got {len(operands)}")
            for o, (role, cls, n) in zip(operands, sig):
                fn = _operand_file_n(o)
                if fn is not None:
                    f, k = fn
                    if f not in cls:
                        raise IRError(f"{name}: operand {role} must be one of [{cls}] registers/values, got {o!r}")
                    if n and k != n:
                        raise IRError(f"{name}: operand {role} must be {n} register(s), got {k} ({o!r})")
                elif isinstance(o, Label) or (isinstance(o, str) and o.startswith(".L")):
                    if "l" not in cls:
                        raise IRError(f"{name}: operand {role} cannot be the label {o}")
                elif o == "off":
                    if "o" not in cls:
                        raise IRError(f"{name}: operand {role} cannot be off")
                elif isinstance(o, str) and o in ("vcc", "exec", "m0", "vcc_lo", "vcc_hi", "exec_lo", "exec_hi"):
                    if "s" not in cls:
                        raise IRError(f"{name}: operand {role} cannot be {o}")
                elif _const_like(o):
                    if "i" not in cls:
                        raise IRError(f"{name}: operand {role} must be a register, got the constant {o}")
                else:
                    raise IRError(f"{name}: operand {role}: cannot classify {o!r}")
            ops = tuple(o.name if isinstance(o, Label) else o for o in operands)
            return self.op(name, *ops, comment=comment, **mods)
        return build

    def label(self, name: str) -> Label:
        """Append a branch target (use ``.L`` names to keep them out of the symbol table)."""
        lab = Label(name)
        self.items.append(lab)
        return lab

    def comment(self, text: str) -> None:
        """Append a comment line to the emitted assembly."""
        self.items.append(Comment(text))

    @contextlib.contextmanager
    def loop(self, name: str, counter, count):
        """A counted loop: ``with p.loop(".Lkv", counter, n): body``. `counter` (an SGPR, virtual or physical)
        must hold the start value before the loop; the back edge adds 1 and repeats while counter < `count`
        (an SGPR or constant): ``s_add_u32``, ``s_cmp_lt_u32``, ``s_cbranch_scc1`` (SCC is clobbered). The body
        runs at least once. Register lifetimes and the waitcnt pass see the back edge."""
        start = len(self.items)
        self.label(name)
        yield
        self.s_add_u32(counter, counter, 1, comment=f"{name}: next iteration")
        self.s_cmp_lt_u32(counter, count)
        self.s_cbranch_scc1(name)
        self.loops.append((start, len(self.items) - 1))

    # --- emission ---------------------------------------------------------------------------------------
    def finalize(self) -> None:
        """Allocate the virtual registers (checks lifetimes, records :attr:`pressure`) and replace them with
        physical :class:`Reg` operands. Idempotent."""
        if self._final:
            return
        from gfx950isa.roles import operand_roles
        from gfx950isa.syntax import AsmError, parse_instruction
        accesses: dict = {}
        where = {}
        fixed = {"v": set(), "a": set(), "s": set()}
        for pos, x in enumerate(self.items):
            if not isinstance(x, Op):
                continue
            for o in x.operands:
                if isinstance(o, Reg):
                    fixed[o.file].update(range(o.lo, o.hi + 1))
            if not any(isinstance(o, (VReg, VSlice)) for o in x.operands):
                continue
            probe = Op(x.mnemonic, tuple(Reg(o.file, 0, o.n) if isinstance(o, (VReg, VSlice)) else o
                                         for o in x.operands), x.mods)
            where[pos] = x.render()
            try:
                roles = operand_roles(parse_instruction(probe.render().split(" ;")[0], pos))
            except (AsmError, ValueError) as e:
                raise IRError(f"{x.render()}: {e}") from None
            for o, (rd, wr) in zip(x.operands, roles):
                if isinstance(o, (VReg, VSlice)):
                    if not (rd or wr):
                        raise IRError(f"{x.render()}: operand {o!r} is neither read nor written")
                    accesses.setdefault(o.base, []).append((pos, rd, wr))
        # a pinned register is defined by the hardware at entry
        assign, self.pressure = allocate(accesses, self.loops, self.vregs, fixed, where)
        for x in self.items:
            if isinstance(x, Op) and any(isinstance(o, (VReg, VSlice)) for o in x.operands):
                ops = []
                for o in x.operands:
                    if isinstance(o, (VReg, VSlice)):
                        if o.base not in assign:
                            raise IRError(f"virtual register %{o.base.name} is unused")
                        o = Reg(o.file, assign[o.base] + o.offset, o.n)
                    ops.append(o)
                x.operands = tuple(ops)
                self._track(ops)
        self._final = True

    # --- checked helpers for instructions with register-tuple rules ------------------------------------
    def mfma_scale_f32_32x32x64_fp8(self, d, a, b, c, scale_a, scale_b, comment=""):
        """``v_mfma_scale_f32_32x32x64_f8f6f4`` with A and B in e4m3 (cbsz = blgp = 0, the defaults).

        d: 16 VGPRs/AGPRs (32x32 fp32, layout gfx950-facts.md §1.2); a, b: 8 VGPRs each (32 fp8 per lane);
        c: same tuple as d (accumulate), a disjoint 16-register tuple, or the inline constant 0;
        scale_a, scale_b: one VGPR each, E8M0 in byte 0 (op_sel = op_sel_hi = 0; §1.4, §8.7: SGPR and inline
        scales are rejected by LLVM 22 because of a hardware defect). 16 passes. Physical or virtual
        registers."""
        name = "v_mfma_scale_f32_32x32x64_f8f6f4"
        shape = isa_table.MFMA_SHAPES[name]
        regs = (Reg, VReg, VSlice)
        for what, r, n in (("D", d, shape.cd_regs), ("A", a, shape.ab_regs), ("B", b, shape.ab_regs)):
            if not isinstance(r, regs) or r.n != n or r.file == "s":
                raise IRError(f"{name}: {what} must be {n} VGPRs/AGPRs, got {r}")
            if (r.lo if isinstance(r, Reg) else r.offset) % 2:
                raise IRError(f"{name}: {what} tuple {r} must start at an even register")
        if isinstance(c, regs):
            if c.n != shape.cd_regs or (c.lo if isinstance(c, Reg) else c.offset) % 2 or c.file != d.file:
                raise IRError(f"{name}: SrcC {c} must be {shape.cd_regs} registers of D's file, even-aligned")
            if _overlaps(c, d) and not _same(c, d):
                raise IRError(f"{name}: SrcC {c} partially overlaps D {d}")
        elif str(c) != "0":
            raise IRError(f"{name}: SrcC must be a register tuple or 0, got {c}")
        for what, r in (("scale_a", scale_a), ("scale_b", scale_b)):
            if not isinstance(r, regs) or r.file != "v" or r.n != 1:
                raise IRError(f"{name}: {what} must be one VGPR, got {r}")
        return self.op(name, d, a, b, c, scale_a, scale_b, op_sel_hi=[0, 0, 0], comment=comment)


def _span(r):
    if isinstance(r, Reg):
        return (r.file, None, r.lo, r.hi)
    return (r.file, r.base, r.offset, r.offset + r.n - 1)


def _overlaps(x, y) -> bool:
    fx, bx, lx, hx = _span(x)
    fy, by, ly, hy = _span(y)
    return fx == fy and bx is by and lx <= hy and ly <= hx


def _same(x, y) -> bool:
    return _span(x) == _span(y)
