"""A static cycle model of one gfx950 SIMD running one or two waves of a generated instruction stream.

Every number it prints is **modelled**, not measured: no MI355X has run zyfa's kernels. The model exists to
compare schedules (one wave vs two-wave ping-pong, exact exp vs Lean P) and to keep a kernel's matrix-pipe
utilisation from regressing unnoticed. Timing facts and their sources are :data:`gfx950isa.table.TIMING`.

Model (per SIMD):

* Each wave issues its instructions in program order, at most one per 4-clock slot (:data:`table.SLOT`).
* Pipes: matrix (MFMA: busy ``passes x 4`` cycles), VALU (VALU, packed and transcendental ops), SALU (also
  branches), LDS, VMEM, SMEM. A pipe accepts one instruction at a time from either wave; two waves can use
  *different* pipes in the same slot (an MFMA of one wave runs while the other wave's VALU ops issue — what a
  ping-pong schedule exploits).
* Dependencies: an instruction waits until every register it reads or writes is ready: results of VALU/SALU
  after their latency, MFMA D after ``passes x 4`` cycles — except the accumulate chain (an MFMA reading as SrcC
  exactly the D of an earlier MFMA issues as soon as the pipe is free, facts §3#3); memory results when the
  ``s_waitcnt`` that covers them is passed (a register read without one waits for the load as well).
* Memory instructions (LDS, VMEM, SMEM) issue into a queue: issue takes one slot, the transfer starts when
  the unit is free (LDS: bytes at the SIMD's share of 256 B/clk per CU, i.e. 16 cycles per ``ds_read_b128``),
  and completes after the latency (VMEM 320, LDS/SMEM 20 cycles). ``s_waitcnt vmcnt(N)/lgkmcnt(N)`` stalls until
  all but the N newest operations of that counter have completed.
* ``s_nop N`` holds the wave for N+1 slots; ``s_barrier`` holds it until every modelled wave has arrived;
  ``s_setprio N`` sets the wave's priority: when both waves could issue to the same pipe in the same slot, the
  higher priority (then the lower wave id) goes first.
* Control flow: ``s_branch`` is taken; ``s_cbranch_*`` to a label is taken ``trips[label] - 1`` times per
  entry, so a counted loop body runs ``trips`` times; a label not in `trips` is not taken, except that a
  backward branch (``s_cbranch_*`` or ``s_branch``) uses ``trips["*backward"]`` when given (clang's loops,
  whose labels are not known in advance; a backward ``s_branch`` then falls through after its trips).

Reports: total cycles, matrix-pipe busy % (MFMA busy cycles / total cycles), VALU cycles (pipe occupancy of
VALU and transcendental ops), FLOPs of the MFMAs, and modelled TFLOP/s = FLOPs / cycles x clock x SIMDs (the
whole chip running this stream on every SIMD; :data:`table.CLOCK_GHZ`, :data:`table.SIMDS`).
"""
from __future__ import annotations

import dataclasses

from . import table
from .roles import analyze
from .syntax import Instr, parse_items

__all__ = ["CycleReport", "simulate", "simulate_text", "format_report"]

#: Pipes whose instructions queue (issue does not wait for the unit; the transfer waits, completion reports it).
_QUEUED = ("lds", "vmem", "smem")


@dataclasses.dataclass
class CycleReport:
    """Result of :func:`simulate` (all modelled)."""
    waves: int
    cycles: int
    mfma_busy: int
    valu_cycles: int
    trans_cycles: int
    flops: int
    instructions: int
    per_wave_end: list

    @property
    def mfma_busy_pct(self) -> float:
        return 100.0 * self.mfma_busy / self.cycles if self.cycles else 0.0

    @property
    def tflops(self) -> float:
        """Modelled TFLOP/s of the whole chip (every SIMD running this stream)."""
        if not self.cycles:
            return 0.0
        return self.flops / self.cycles * table.CLOCK_GHZ * 1e9 * table.SIMDS / 1e12


def _lds_bytes(ins: Instr) -> int:
    """Bytes a wave64 DS instruction moves (64 lanes x table.ds_bytes_per_lane)."""
    return 64 * table.ds_bytes_per_lane(ins.base)


def _flatten(items, trips: dict, entry: str | None = None) -> list:
    """The dynamic instruction sequence from label `entry` (default: the first instruction): follows branches
    with the trip counts."""
    instrs = [x for x in items if isinstance(x, Instr)]
    label_at = {}
    pending = []
    for x in items:
        if isinstance(x, tuple):
            pending.append(x[1])
        else:
            for n in pending:
                label_at[n] = x.index
            pending = []
    out = []
    left: dict = {}
    pc = 0
    if entry is not None:
        if entry not in label_at:
            raise ValueError(f"cycle model: no label {entry!r}")
        pc = label_at[entry]
    guard = 0
    while 0 <= pc < len(instrs):
        ins = instrs[pc]
        guard += 1
        if guard > 2_000_000:
            raise ValueError("cycle model: instruction stream too long (runaway loop?)")
        if ins.kind == "end":
            out.append(ins)
            break
        if ins.kind == "branch":
            out.append(ins)
            tgt = ins.target
            if ins.base == "s_branch" and not (tgt in label_at and label_at[tgt] <= pc and "*backward" in trips):
                pc = label_at[tgt]
                continue
            key = (pc, tgt)
            if key not in left:
                n = trips.get(tgt)
                if n is None:
                    backward = tgt in label_at and label_at[tgt] <= pc
                    n = trips.get("*backward", 1) if backward else 1
                left[key] = max(int(n) - 1, 0)
            if left[key] > 0 and tgt in label_at:
                left[key] -= 1
                pc = label_at[tgt]
                continue
            left.pop(key, None)
            pc += 1
            continue
        out.append(ins)
        pc += 1
    return out


class _Wave:
    def __init__(self, wid, stream):
        self.id = wid
        self.stream = stream
        self.pc = 0
        self.t = 0            # earliest next issue slot
        self.prio = 0
        self.ready = {}       # register unit -> cycle its value is ready
        self.vm = []          # completion times of outstanding VMEM ops (issue order)
        self.lgkm = []        # (completion time, is_smem)
        self.mem_dst = {}     # register unit -> completion time of the load writing it
        self.barriers = 0     # barriers passed
        self.arrive = {}      # barrier number -> release time seen by this wave
        self.done = False


def simulate(streams: list, trips: dict | None = None, trace: list | None = None, entry: str | None = None,
             barrier_sync: bool = True, executed: bool = False) -> CycleReport:
    """Models the waves of `streams` (each a list of parsed items: Instr and ("label", name)) on one SIMD.
    `trace`, when given, receives (issue cycle, wave id, instruction text) for every issued instruction;
    `entry`: the label to start at (a kernel symbol in a file with several); `barrier_sync=False`: the waves
    belong to different workgroups, so their ``s_barrier``s do not wait for each other; `executed=True`: each
    stream is already the dynamic instruction sequence of a wave (e.g. recorded with the emulator's
    ``Machine.trace``), so control flow is not followed again — the way to model clang's kernels, whose loop
    trip counts depend on the data."""
    trips = trips or {}
    waves = []
    for i, items in enumerate(streams):
        for x in items:
            if isinstance(x, Instr) and not x.kind:
                analyze(x)
        waves.append(_Wave(i, list(items) if executed else _flatten(items, trips, entry)))
    pipe_free = {"mfma": 0, "valu": 0, "salu": 0, "lds": 0, "vmem": 0, "smem": 0, "none": 0}
    mfma_busy = valu_cycles = trans_cycles = flops = count = 0
    lds_clk = table.LDS_BYTES_PER_CLK_PER_CU / 4
    last_mfma_d = {}  # wave id -> frozenset(D units) of its last MFMA

    def earliest(w):
        """(time, pipe, extra) at which w's next instruction can issue, or None if blocked on a barrier."""
        ins = w.stream[w.pc]
        t = w.t
        base = ins.base
        if base == "s_waitcnt":
            vm = _count(ins, "vmcnt", 63)
            lg = _count(ins, "lgkmcnt", 15)
            if len(w.vm) > vm:
                t = max(t, max(w.vm[:len(w.vm) - vm]))
            if len(w.lgkm) > lg:
                if lg == 0:
                    t = max(t, max(c for c, _ in w.lgkm))
                else:
                    t = max(t, max(c for c, _ in w.lgkm[:len(w.lgkm) - lg]))
            return t, "none"
        if base == "s_barrier" and barrier_sync:
            k = w.barriers + 1
            t_rel = t
            for v in waves:
                if v is w or v.done:
                    continue
                if v.barriers >= k:
                    t_rel = max(t_rel, v.arrive[k])
                elif v.barriers == k - 1 and v.pc < len(v.stream) and v.stream[v.pc].base == "s_barrier":
                    t_rel = max(t_rel, v.t)
                else:
                    return None
            return t_rel + table.TIMING["barrier"].latency - table.SLOT, "none"
        cls = table.timing_class(base, ins.kind)
        tm = table.TIMING.get(cls, table.TIMING["salu"])
        pipe = tm.pipe
        if pipe not in _QUEUED:
            t = max(t, pipe_free[pipe])
        regs = ins.uses | ins.defs
        chain = ins.kind == "mfma" and frozenset(ins.mfma_c) == last_mfma_d.get(w.id) and ins.mfma_c
        for r in regs:
            if chain and r in ins.mfma_c:
                continue
            rt = w.ready.get(r, 0)
            mt = w.mem_dst.get(r)
            if mt is not None:
                rt = max(rt, mt)
            t = max(t, rt)
        return t, pipe

    while True:
        live = [w for w in waves if not w.done]
        if not live:
            break
        cands = []
        for w in live:
            if w.pc >= len(w.stream):
                w.done = True
                continue
            e = earliest(w)
            if e is not None:
                cands.append((e[0], -w.prio, w.id, w, e[1]))
        if not cands:
            if all(w.done for w in waves):
                break
            raise ValueError("cycle model: deadlock (a barrier not reached by every wave)")
        cands.sort(key=lambda c: c[:3])
        t, _, _, w, pipe = cands[0]
        ins = w.stream[w.pc]
        base = ins.base
        count += 1
        if trace is not None:
            trace.append((t, w.id, ins.text))
        slots = 1
        if ins.kind == "nop":
            slots = int(ins.operands[0].value) + 1 if ins.operands else 1
        elif base == "s_setprio":
            w.prio = int(ins.operands[0].value) & 3
        elif base == "s_barrier":
            w.barriers += 1
            w.arrive[w.barriers] = t
        elif base == "s_waitcnt":
            vm = _count(ins, "vmcnt", 63)
            lg = _count(ins, "lgkmcnt", 15)
            w.vm = w.vm[len(w.vm) - vm:] if vm else []
            if lg == 0:
                w.lgkm = []
            else:
                w.lgkm = w.lgkm[len(w.lgkm) - lg:]
            for r, c in list(w.mem_dst.items()):
                if c <= t:
                    del w.mem_dst[r]
        elif ins.kind == "mfma":
            busy = ins.passes * 4
            pipe_free["mfma"] = t + busy
            mfma_busy += busy
            flops += table.mfma_flops(ins.mnemonic)
            for r in ins.defs:
                w.ready[r] = t + busy
            last_mfma_d[w.id] = frozenset(ins.mfma_d)
        else:
            cls = table.timing_class(base, ins.kind)
            tm = table.TIMING.get(cls, table.TIMING["salu"])
            occ = tm.occupancy
            lat = tm.latency
            if ins.kind == "ds":
                occ = max(occ, int(_lds_bytes(ins) / lds_clk))
            if tm.pipe in _QUEUED:
                # memory ops queue: the transfer starts when the unit is free; completion = transfer + latency
                start = max(t, pipe_free[tm.pipe])
                pipe_free[tm.pipe] = start + occ
                lat = start - t + occ + tm.latency
            elif tm.pipe in pipe_free and tm.pipe != "none":
                pipe_free[tm.pipe] = t + occ
            if tm.pipe == "valu":
                valu_cycles += occ
                if ins.kind == "trans":
                    trans_cycles += occ
            done = t + lat
            if ins.kind == "vmem":
                w.vm.append(done)
                for r in ins.defs:
                    w.mem_dst[r] = done
            elif ins.kind in ("ds", "smem"):
                w.lgkm.append((done, ins.kind == "smem"))
                for r in ins.defs:
                    w.mem_dst[r] = done
            else:
                for r in ins.defs:
                    w.ready[r] = done
        w.t = t + slots * table.SLOT
        w.pc += 1
        if ins.kind == "end" or w.pc >= len(w.stream):
            w.done = True
    end = [w.t for w in waves]
    cycles = max(end + [pipe_free["mfma"]])
    return CycleReport(len(waves), cycles, mfma_busy, valu_cycles, trans_cycles, flops, count, end)


def _count(ins: Instr, name: str, none: int) -> int:
    v = ins.mods.get(name)
    return none if v is None else int(v)


def simulate_text(text: str, waves: int = 1, trips: dict | None = None, entry: str | None = None,
                  barrier_sync: bool = True) -> CycleReport:
    """Models `waves` copies of the assembly `text` (the same stream on every wave) on one SIMD."""
    return simulate([parse_items(text) for _ in range(waves)], trips, entry=entry, barrier_sync=barrier_sync)


def format_report(name: str, r: CycleReport) -> str:
    return (f"{name}: modelled {r.cycles} cycles, {r.waves} wave(s)/SIMD, matrix pipe busy {r.mfma_busy_pct:.1f}% "
            f"({r.mfma_busy} cycles), VALU {r.valu_cycles} cycles (transcendental {r.trans_cycles}), "
            f"{r.flops} FLOP, modelled {r.tflops:.0f} TFLOP/s at {table.CLOCK_GHZ} GHz x {table.SIMDS} SIMDs "
            "(modelled, not measured)")
