"""Named virtual registers and their allocation.

A kernel module asks the :class:`~zyfa_gen.ir.Program` for named register ranges (``p.vreg("q_a", 8)``,
``p.sreg("rsrc_q", 4, align=4)``, ``p.areg(...)``) instead of writing register numbers. Slices
(``q_a[0:4]``, ``acc[r]``) name parts of a range. At emission :func:`allocate`

* finds each virtual range's lifetime from the operand roles of the one instruction table
  (:func:`gfx950isa.roles.operand_roles`): first definition to last use, extended over a whole loop when the
  range is live around the loop's back edge (used in the loop and defined before it, or read in the body before
  it is written there);
* rejects a read of a range that no earlier instruction wrote (``IRError`` naming the range and the
  instruction) and a range that is written but never read (dead code in a hand-scheduled kernel is a bug);
* assigns physical registers first-fit in program order (deterministic, so output stays byte-for-byte
  reproducible), honouring alignment (VGPR/AGPR tuples even, SGPR pairs even, SGPR quads and wider 4) and
  registers pinned by the hardware ABI (``pin=`` — kernarg pointer s[0:1], workitem id v0, ...);
* reports the pressure: the largest number of registers of each file live at one instruction, and the
  highest register used (what the kernel descriptor allocates).
"""
from __future__ import annotations

import dataclasses

__all__ = ["VReg", "VSlice", "Pressure", "allocate", "LIMITS"]

#: Allocatable registers per file (gfx950-facts.md §4: v0-v255, a0-a255, s0-s101).
LIMITS = {"v": 256, "a": 256, "s": 102}


class IRError(ValueError):
    """An instruction that breaks a register rule (class, tuple size, alignment, overlap) or a lifetime rule (read
    before written, never read, out of registers); the message names the register and the instruction."""


@dataclasses.dataclass(eq=False)
class VReg:
    """A named virtual register range of `n` 32-bit registers in file ``"v"``, ``"a"`` or ``"s"``.
    ``align``: required alignment of the first register; ``pin``: a fixed physical first register."""
    name: str
    file: str
    n: int = 1
    align: int = 1
    pin: int | None = None

    def __getitem__(self, i):
        if isinstance(i, slice):
            start, stop, _ = i.indices(self.n)
            return VSlice(self, start, stop - start)
        if not 0 <= i < self.n:
            raise IRError(f"{self.name}[{i}] out of range (n = {self.n})")
        return VSlice(self, i, 1)

    @property
    def base(self) -> "VReg":
        return self

    @property
    def offset(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"%{self.name}"


@dataclasses.dataclass(frozen=True, eq=False)
class VSlice:
    """Registers ``offset .. offset+n-1`` of a :class:`VReg`."""
    base: VReg
    offset: int
    n: int

    @property
    def file(self) -> str:
        return self.base.file

    def __getitem__(self, i):
        if isinstance(i, slice):
            start, stop, _ = i.indices(self.n)
            return VSlice(self.base, self.offset + start, stop - start)
        if not 0 <= i < self.n:
            raise IRError(f"{self!r}[{i}] out of range")
        return VSlice(self.base, self.offset + i, 1)

    def __repr__(self) -> str:
        return f"%{self.base.name}[{self.offset}:{self.offset + self.n}]"


@dataclasses.dataclass
class Pressure:
    """Per file: the most registers live at one instruction (``live``) and the highest register number used
    plus one (``top``, what the descriptor must allocate)."""
    live: dict
    top: dict

    def __str__(self) -> str:
        return ", ".join(f"{f.upper()}GPR live max {self.live[f]}, allocated {self.top[f]}" for f in ("v", "a", "s"))


def _aligned(lo: int, align: int) -> int:
    return (lo + align - 1) // align * align


def allocate(accesses: dict, loops: list, order: list, fixed: dict, where: dict) -> tuple:
    """Physical first register of every VReg.

    accesses: VReg -> list of (position, read, written) in program order; loops: [(start, end)] positions of
    loop bodies (back edge at end); order: VRegs in creation order; fixed: file -> set of physical registers
    used by explicit (non-virtual) operands; where: position -> instruction text (for messages).
    Returns ({VReg: lo}, Pressure)."""
    ranges = {}
    for v in order:
        acc = accesses.get(v)
        if not acc:
            continue
        first_def = None
        for pos, rd, wr in acc:
            if rd and first_def is None and v.pin is None:
                raise IRError(f"virtual register %{v.name} is read before any instruction writes it: "
                              f"{where[pos]}")
            if wr and first_def is None:
                first_def = pos
        if not any(rd for _, rd, _ in acc):
            raise IRError(f"virtual register %{v.name} is written but never read (first write: "
                          f"{where[acc[0][0]]})")
        lo = 0 if v.pin is not None else acc[0][0]
        hi = acc[-1][0]
        changed = True
        while changed:
            changed = False
            for (ls, le) in loops:
                inside = [a for a in acc if ls <= a[0] <= le]
                if not inside:
                    continue
                carried = lo < ls or hi > le
                if not carried:
                    # read in the body before it is written there: loop-carried
                    seen_w = False
                    for _, rd, wr in inside:
                        if rd and not seen_w:
                            carried = True
                            break
                        seen_w = seen_w or wr
                if carried and (lo > ls or hi < le):
                    lo, hi = min(lo, ls), max(hi, le)
                    changed = True
        ranges[v] = (lo, hi)
    # first-fit in order of range start (ties: creation order); pinned first
    assign = {}
    busy: dict = {f: [] for f in LIMITS}  # file -> list of (lo_reg, hi_reg, start, end)
    for f, regs in fixed.items():
        for r in regs:
            busy[f].append((r, r, -1, 1 << 30))
    idx = {v: i for i, v in enumerate(order)}
    todo = sorted(ranges, key=lambda v: (v.pin is None, ranges[v][0], idx[v]))
    for v in todo:
        s, e = ranges[v]
        def clash(c):
            return [b for a, b, ss, ee in busy[v.file] if not (c + v.n - 1 < a or c > b) and not (e < ss or s > ee)]
        if v.pin is not None:
            cand = v.pin
            if clash(cand):
                raise IRError(f"%{v.name}: pinned {v.file}{cand} overlaps another live register")
        else:
            cand = 0
            while True:
                cand = _aligned(cand, v.align)
                c = clash(cand)
                if not c:
                    break
                cand = max(c) + 1
        if cand + v.n > LIMITS[v.file]:
            raise IRError(f"out of {v.file.upper()}GPRs allocating %{v.name} ({v.n} registers)")
        assign[v] = cand
        busy[v.file].append((cand, cand + v.n - 1, s, e))
    # pressure
    positions = sorted({p for (s, e) in ranges.values() for p in (s, e)})
    live = {f: 0 for f in LIMITS}
    for p in positions:
        cur = {f: 0 for f in LIMITS}
        for v, (s, e) in ranges.items():
            if s <= p <= e:
                cur[v.file] += v.n
        for f in LIMITS:
            live[f] = max(live[f], cur[f] + len(fixed.get(f, ())))
    top = {f: 0 for f in LIMITS}
    for v, lo in assign.items():
        top[v.file] = max(top[v.file], lo + v.n)
    for f, regs in fixed.items():
        if regs:
            top[f] = max(top[f], max(regs) + 1)
    return assign, Pressure(live, top)
