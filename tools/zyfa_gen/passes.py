"""Passes over a finalized :class:`~zyfa_gen.ir.Program` (physical registers): memory waits and hazard nops.

``insert_waitcnt`` — computes ``s_waitcnt vmcnt(N)`` / ``lgkmcnt(N)`` from the outstanding memory operations
(gfx950-facts.md §3): each VMEM load/store and LDS-DMA load is one vmcnt event, each DS op and scalar load one
lgkmcnt event. Before an instruction that reads or overwrites a register an outstanding load will write, the
pass waits until that load has retired, with the largest count that still guarantees it:

* vmcnt: VMEM ops return in issue order, so N = the number of VMEM ops issued after it;
* lgkmcnt: LDS ops return in order, scalar loads may not; N = the number of later LGKM ops if no scalar load is
  outstanding, else 0;
* before ``s_barrier``: every outstanding DS write (lgkmcnt) and every LDS-DMA load (vmcnt) that the barrier
  publishes — gfx950's barrier does not wait for memory (facts §3). An LDS-DMA op carries ``lds_publish`` (default
  1): the number of barriers after its issue whose release must find its data in LDS, so a load issued one block
  ahead (``lds_publish = 2``) stays in flight across the first barrier and is waited for before the second (the
  kernel states which barrier publishes the data; the pass computes the count);
* across control flow: a dataflow over the basic blocks (labels start them, branches and ``s_endpgm`` end them);
  the state entering a block merges its predecessors' (loop back edges included, iterated to a fixed point), so a
  load issued in one iteration and read in the next is waited for where it is read, with the count that is safe
  on every path;
* nothing at ``s_endpgm`` (stores complete on their own);
* never more than a counter can count (vmcnt 63, lgkmcnt 15 outstanding): the oldest are waited for
  (conservative: whether the hardware stalls issue at a full counter is not in the facts).

An explicit ``s_waitcnt`` in the program is kept and retires what it says. The emulator checks the result
(``Semantics.waitcnt_check``: reading a register before its load is retired is an error).

``insert_nops`` — the ``s_nop`` padding the hazard rules need, from :func:`gfx950hazard.checker.required_nops`
(LLVM's program-order rule, minimum over control-flow paths).
"""
from __future__ import annotations

import re

from gfx950hazard.checker import required_nops
from gfx950hazard.isa import parse
from gfx950isa.roles import analyze
from gfx950isa.roles import units as _units
from gfx950isa.syntax import parse_instruction

from .ir import Label, Op

__all__ = ["insert_waitcnt", "insert_nops", "waitcnt_op", "check_verified_semantics", "UnverifiedSemantics"]

VMCNT_MAX, LGKMCNT_MAX = 63, 15


def waitcnt_op(vm: int | None, lgkm: int | None, why: str) -> Op:
    """``s_waitcnt`` with the given counters (None = no wait on that counter)."""
    parts = []
    if vm is not None:
        parts.append(f"vmcnt({vm})")
    if lgkm is not None:
        parts.append(f"lgkmcnt({lgkm})")
    return Op("s_waitcnt", (" ".join(parts),), {}, why)


def _facts(x: Op):
    ins = parse_instruction(x.render().split(" ;")[0], 0)
    analyze(ins)
    return ins


class _Queues:
    """Outstanding memory operations, oldest first."""

    def __init__(self):
        self.vm = []    # [(defs, lds_dma)]: lds_dma = barriers left until an LDS-DMA load must be in LDS, 0 = not DMA
        self.lgkm = []  # [(defs, is_smem, is_ds_write)]

    def younger_lds(self, i: int) -> int:
        return sum(1 for _, smem, _ in self.lgkm[i + 1:] if not smem)

    def lgkm_need(self, i: int) -> int:
        """Largest lgkmcnt that guarantees entry i has completed: LDS ops complete in order, scalar loads in
        any order (so a scalar load needs 0, and only younger LDS ops may stay outstanding)."""
        return 0 if self.lgkm[i][1] else self.younger_lds(i)

    def retire(self, vm, lgkm):
        if vm is not None and len(self.vm) > vm:
            self.vm = self.vm[len(self.vm) - vm:] if vm else []
        if lgkm is not None:
            if lgkm == 0:
                self.lgkm = []
            else:
                self.lgkm = [e for i, e in enumerate(self.lgkm) if e[1] or 1 + self.younger_lds(i) <= lgkm]


def _merge(states: list) -> _Queues:
    """Conservative merge of queue states at a control-flow join: queues aligned at their newest end, the
    register sets and flags of the entries at each position united (a register pending at k younger ops on one
    path and k' on another is then found at min(k, k'), which is safe for both)."""
    out = _Queues()
    for attr in ("vm", "lgkm"):
        qs = [getattr(q, attr) for q in states]
        n = max((len(q) for q in qs), default=0)
        merged = []
        for pos in range(n, 0, -1):  # pos-th entry from the newest end
            parts = [q[len(q) - pos] for q in qs if len(q) >= pos]
            regs = set().union(*(e[0] for e in parts))
            if attr == "vm":  # barriers left: the smallest of the paths (waits at the earliest barrier)
                flags = (min((e[1] for e in parts if e[1]), default=0),)
            else:
                flags = tuple(any(e[j] for e in parts) for j in range(1, len(parts[0])))
            merged.append((regs,) + flags)
        setattr(out, attr, merged)
    return out


def _same(a: _Queues, b: _Queues) -> bool:
    return a.vm == b.vm and a.lgkm == b.lgkm


def _copy(q: _Queues) -> _Queues:
    c = _Queues()
    c.vm = [(set(e[0]),) + tuple(e[1:]) for e in q.vm]
    c.lgkm = [(set(e[0]),) + tuple(e[1:]) for e in q.lgkm]
    return c


def _step(q: _Queues, x, ins, emit) -> None:
    """Advances `q` over instruction `x` (facts `ins`), calling emit(op) for a wait it needs first."""
    m = ins.base
    if m == "s_waitcnt":
        text = x.render()
        vm = lg = None
        mm = re.search(r"vmcnt\((\d+)\)", text)
        if mm:
            vm = int(mm.group(1))
        mm = re.search(r"lgkmcnt\((\d+)\)", text)
        if mm:
            lg = int(mm.group(1))
        q.retire(vm, lg)
        return
    touched = ins.uses | ins.defs
    need_vm = need_lg = None
    for i, e in enumerate(q.vm):
        if e[0] & touched:
            need_vm = len(q.vm) - 1 - i  # the newest dependency decides (in-order return)
    for i, e in enumerate(q.lgkm):
        if e[0] & touched:
            need_lg = min(need_lg, q.lgkm_need(i)) if need_lg is not None else q.lgkm_need(i)
    if m == "s_barrier":
        for i, (_, dma) in enumerate(q.vm):
            if dma == 1:
                need_vm = min(need_vm, len(q.vm) - 1 - i) if need_vm is not None else len(q.vm) - 1 - i
        for i, (_, _, w) in enumerate(q.lgkm):
            if w:
                need_lg = min(need_lg, q.lgkm_need(i)) if need_lg is not None else q.lgkm_need(i)
    if need_vm is not None:
        need_vm = min(need_vm, VMCNT_MAX)
    if need_lg is not None:
        need_lg = min(need_lg, LGKMCNT_MAX)
    if need_vm is not None or need_lg is not None:
        regs = sorted({f"{f}{i}" for f, i in touched
                       if any((f, i) in e[0] for e in q.vm) or any((f, i) in e[0] for e in q.lgkm)})
        why = "for " + ", ".join(regs[:4]) + (" ..." if len(regs) > 4 else "") if regs else "LDS data the barrier publishes"
        emit(waitcnt_op(need_vm, need_lg, why))
        q.retire(need_vm, need_lg)
    if m == "s_barrier":  # one barrier fewer for the LDS-DMA loads still in flight
        q.vm = [(e[0], e[1] - 1 if e[1] > 1 else e[1]) for e in q.vm]
    if ins.kind == "vmem":
        dma = "lds" in ins.mods or "_lds_" in m
        q.vm.append((set(ins.defs), max(1, int(getattr(x, "lds_publish", 1))) if dma else 0))
    elif ins.kind == "ds":
        q.lgkm.append((set(ins.defs), False, not ins.defs))
    elif ins.kind == "smem":
        q.lgkm.append((set(ins.defs), True, False))
    # more outstanding operations than a counter holds: wait for the oldest (never in zyfa's kernels)
    if len(q.vm) > VMCNT_MAX or len(q.lgkm) > LGKMCNT_MAX:
        vm = VMCNT_MAX if len(q.vm) > VMCNT_MAX else None
        lg = LGKMCNT_MAX if len(q.lgkm) > LGKMCNT_MAX else None
        emit(waitcnt_op(vm, lg, "counter capacity"))
        q.retire(vm, lg)


def insert_waitcnt(items: list) -> list:
    """`items` with the s_waitcnt instructions the outstanding memory operations require (see module doc).

    A dataflow pass over the basic blocks: the queue state entering a block is the merge of its predecessors'
    exit states (fall-through and branches, loop back edges included), iterated to a fixed point, so a load issued
    in one loop iteration and first read in the next is waited for exactly where it is read."""
    facts = {id(x): _facts(x) for x in items if isinstance(x, Op)}
    # basic blocks: a label starts one, a branch or s_endpgm ends one
    blocks, cur = [], []
    for x in items:
        if isinstance(x, Label) and cur:
            blocks.append(cur)
            cur = []
        cur.append(x)
        if isinstance(x, Op) and facts[id(x)].kind in ("branch", "end"):
            blocks.append(cur)
            cur = []
    if cur:
        blocks.append(cur)
    label_block = {b[0].name: i for i, b in enumerate(blocks) if isinstance(b[0], Label)}
    preds = [[] for _ in blocks]
    for i, b in enumerate(blocks):
        last = next((x for x in reversed(b) if isinstance(x, Op)), None)
        f = facts[id(last)] if last is not None else None
        falls = not (f is not None and (f.kind == "end" or f.base == "s_branch"))
        if falls and i + 1 < len(blocks):
            preds[i + 1].append(i)
        if f is not None and f.kind == "branch" and f.target in label_block:
            preds[label_block[f.target]].append(i)
    exit_state = [None] * len(blocks)

    def run(i, q, emit):
        for x in blocks[i]:
            if isinstance(x, Op):
                _step(q, x, facts[id(x)], emit)
        return q

    for _ in range(16):
        changed = False
        for i in range(len(blocks)):
            ins_ = [exit_state[p] for p in preds[i] if exit_state[p] is not None]
            q = _merge(ins_) if ins_ else _Queues()
            out = run(i, q, lambda op: None)
            if exit_state[i] is None or not _same(out, exit_state[i]):
                exit_state[i] = _copy(out)
                changed = True
        if not changed:
            break
    else:
        raise RuntimeError("waitcnt pass: no fixed point (unbounded outstanding memory operations in a loop)")
    result = []
    for i, b in enumerate(blocks):
        ins_ = [exit_state[p] for p in preds[i] if exit_state[p] is not None]
        q = _merge(ins_) if ins_ else _Queues()
        for x in b:
            if isinstance(x, Op):
                _step(q, x, facts[id(x)], result.append)
            result.append(x)
    return result


def insert_nops(items: list) -> list:
    """`items` with ``s_nop`` padding before each instruction that the hazard rules say needs it."""
    raw = [x.render() if isinstance(x, Op) else (f"{x.name}:" if isinstance(x, Label) else "") for x in items]
    pad = required_nops(parse("\n".join(raw) + "\n"))
    out = []
    seen = 0
    for x in items:
        if isinstance(x, Op):
            ws = pad.get(seen, 0)
            while ws > 0:
                n = min(ws, 16)
                out.append(Op("s_nop", (n - 1,), {}, "hazard padding (gfx950hazard)"))
                ws -= n
            seen += 1
        out.append(x)
    return out


class UnverifiedSemantics(ValueError):
    """A generated instruction relies on a behaviour the emulator marks unverified (gfx950-facts.md §7, §8)."""


def _const_value(op) -> int | None:
    if op.kind == "const" and isinstance(op.value, int):
        return op.value & 0xFFFFFFFF
    return None


def check_verified_semantics(items: list) -> None:
    """Rejects (UnverifiedSemantics) any use of a behaviour the emulator can only guess (its ``Semantics`` switches):

    * ``op_sel``/``op_sel_hi`` on the scale operands of a scaled MFMA (which byte is used is disputed: facts §1.4,
      §8.7) — the scale must be byte 0 with every select bit 0;
    * an E8M0 scale byte 0xFF (NaN by the spec, 2^128 in AMD's emulator: facts §8.10): a scale register whose
      byte 0 was last set to the constant 0xFF in straight-line code;
    * reading a register after ``v_cvt_pk_fp8_f32``/``v_cvt_pk_bf8_f32`` wrote only its low half (LLVM keeps the
      high half, AMD's emulator zeroes it: facts §8.13): write the low half, then the high half
      (``op_sel:[0,0,1]``), then read.

    Not checked statically: the per-lane/per-dword out-of-bounds rule of buffer loads (facts §6, §8.16–§8.18);
    kernels keep every load either fully inside or fully outside a V#'s extent (documented per kernel)."""
    const_of: dict = {}       # register unit -> 32-bit constant last written (straight-line)
    low_only: dict = {}       # register unit -> text of the low-half fp8 convert that left the high half open
    for x in items:
        if isinstance(x, Label):
            const_of.clear()
            low_only.clear()
            continue
        if not isinstance(x, Op):
            continue
        ins = _facts(x)
        m = ins.base
        for r in ins.uses:
            if r in low_only and not (m in ("v_cvt_pk_fp8_f32", "v_cvt_pk_bf8_f32") and r in ins.defs):
                raise UnverifiedSemantics(
                    f"{x.render()}: reads {r[0]}{r[1]} whose high half {low_only[r]!r} left undefined "
                    "(v_cvt_pk_fp8_f32 without op_sel keeps or zeroes the other half: facts §8.13); write the "
                    "high half (op_sel:[0,0,1]) before reading")
        if ins.kind == "mfma" and m.startswith("v_mfma_scale_"):
            for key in ("op_sel", "op_sel_hi"):
                v = ins.mods.get(key)
                if v is not None and any(v):
                    raise UnverifiedSemantics(f"{x.render()}: {key} on the scale operands selects a byte only by "
                                              "an unverified reading (facts §1.4, §8.7); keep scales in byte 0")
            for op in ins.operands[4:6]:
                for u in _units(op):
                    c = const_of.get(u)
                    if c is not None and c & 0xFF == 0xFF:
                        raise UnverifiedSemantics(f"{x.render()}: scale register {u[0]}{u[1]} holds byte 0xFF "
                                                  "(E8M0 NaN by the spec, 2^128 in AMD's emulator: facts §8.10)")
        # track definitions
        if m in ("v_mov_b32", "s_mov_b32") and len(ins.operands) == 2 and _const_value(ins.operands[1]) is not None:
            for u in ins.defs:
                const_of[u] = _const_value(ins.operands[1])
        else:
            for u in ins.defs:
                const_of.pop(u, None)
        if m in ("v_cvt_pk_fp8_f32", "v_cvt_pk_bf8_f32"):
            sel = ins.mods.get("op_sel")
            high = isinstance(sel, list) and len(sel) >= 3 and sel[-1] == 1
            for u in ins.defs:
                if high:
                    low_only.pop(u, None)
                else:
                    low_only[u] = x.render()
        else:
            for u in ins.defs:
                low_only.pop(u, None)
