"""Where a warp's time goes in the key-tile loop of an sm_90a attention kernel, from Nsight Compute's source view.

    python3 bench/loop_segments.py SRC.csv [SRC2.csv ...]

SRC.csv: `ncu -i REPORT --page source --csv --print-source sass` of a report taken with `--set full` (warp stall
sampling on). The loop is the backward branch whose body holds both kinds of wgmma (`HGMMA` for bf16, `QGMMA` for
e4m3: Q.K^T with both operands in shared memory, P.V with P from registers) and whose instructions execute most often
on average; a body unrolled over several key tiles counts each Q.K^T start (`... gdesc[..], RZ, !UPT`) as a tile.

Clock: a stall sample is one warp's state at one sampling instant, and a sample of reason `selected` is that warp
issuing, which takes one cycle. The loop's instructions per tile divided by its `selected` samples per tile is
therefore the cycles one sample stands for, and a group's samples times that are its cycles per key tile per warp
(the time a warp spends there, issuing or stalled). With two consumer warpgroups in ping-pong every key tile of a
warpgroup is one period of the schedule, so the total is comparable between kernels of the same tile shape.

    python3 bench/loop_segments.py --work-tile SRC.csv [SRC2.csv ...]

prints instead, per consumer warp and work tile, the cycles in the key-tile loops and outside them (the work tile's
start, its first key tile, the last P.V and the epilogue) and the instructions executed outside them.

    python3 bench/loop_segments.py --reasons SRC.csv [SRC2.csv ...]

prints the loop's cycles per key tile by stall reason (Nsight Compute's `stall_*` columns: `math_pipe_throttle`, a
busy unit such as the MUFU; `wait`, a fixed-latency dependence; `short_scoreboard`, a MUFU or shared-memory result;
...), over the whole loop and at `MUFU.EX2` alone.

Printed per kernel: instructions per tile, cycles per tile, and the cycles by group: the ping-pong turn (samples
stalled on a named barrier), each wgmma wait (`WARPGROUP.DEPBAR`), mbarrier waits, wgmma issue, and the arithmetic
by opcode (MUFU.EX2, FMNMX, FFMA, ...). With several files, the groups side by side."""
import csv
import os
import re
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sass_issue_model import strip_predicate  # noqa: E402


def load(path):
    """The instructions of an exported source view: dicts with addr, src (whitespace folded), samples (all warp stall
    samples), exec (warp-level instructions executed), selected and barrier (samples of those two stall reasons).
    Exits naming the first missing column."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    head = next(i for i, r in enumerate(rows) if "Address" in r and "Source" in r)
    hdr, data = rows[head], rows[head + 1 :]
    col = {name: hdr.index(name) for name in hdr}
    need = ("Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed", "stall_selected")
    missing = [n for n in need if n not in col]
    if missing:
        sys.exit(f"{path}: no column {missing[0]!r}; export with --page source --csv --print-source sass "
                 "of a --set full report")

    def num(r, name):
        v = r[col[name]].replace(",", "") if col.get(name) is not None and col[name] < len(r) else ""
        return int(float(v)) if v not in ("", "-") else 0

    ins = []
    for r in data:
        if len(r) <= col["Source"] or not r[col["Address"]].strip():
            continue
        ins.append({
            "addr": int(r[col["Address"]], 16),
            "src": re.sub(r"\s+", " ", r[col["Source"]].strip()),
            "samples": num(r, "Warp Stall Sampling (All Samples)"),
            "exec": num(r, "Instructions Executed"),
            "selected": num(r, "stall_selected"),
            "barrier": num(r, "stall_barrier"),
            "reasons": {name[len("stall_"):]: num(r, name) for name in col
                        if name.startswith("stall_") and "not_issued" not in name},
        })
    return ins


def opcode(src):
    """The full opcode with its modifiers (`SYNCS.PHASECHK.TRANS64.TRYWAIT`), predicate stripped."""
    body = strip_predicate(src)
    return body.split(" ")[0] if body else ""


def wgmma_kind(src):
    """'qk' (both operands in shared memory), 'pv' (A from registers) or None."""
    m = re.match(r"[HQ]GMMA\.\S+ R\d+, (R\d+|gdesc)", strip_predicate(src))
    if not m:
        return None
    return "qk" if m.group(1) == "gdesc" else "pv"


def find_loop(ins):
    """(first, last) indices of the key-tile loop: the backward branch's body holding both wgmma kinds whose
    instructions run most often on average. Exits when there is none."""
    index = {x["addr"]: i for i, x in enumerate(ins)}
    best = None
    for i, x in enumerate(ins):
        m = re.search(r"BRA (?:\S+, )?0x([0-9a-f]+)", x["src"])
        if not m or opcode(x["src"]) != "BRA":
            continue
        t = index.get(int(m.group(1), 16))
        if t is None or t >= i:
            continue
        body = ins[t : i + 1]
        rs = sum(1 for y in body if wgmma_kind(y["src"]) == "pv")
        ss = sum(1 for y in body if wgmma_kind(y["src"]) == "qk")
        if rs and ss:
            rate = sum(y["exec"] for y in body) / len(body)  # the inner loop: its instructions run the most often
            if best is None or rate > best[0]:
                best = (rate, t, i)
    if best is None:
        sys.exit("no loop with both Q.K^T and P.V wgmma found")
    return best[1], best[2]


def group(x):
    """The instruction group a sample of x is charged to (the named-barrier stall is split off by analyse)."""
    op, src = opcode(x["src"]), x["src"]
    kind = wgmma_kind(src)
    if kind:
        return "wgmma issue (P.V)" if kind == "pv" else "wgmma issue (Q.K^T)"
    if "DEPBAR" in op:
        return "wgmma wait " + ("(all)" if src.rstrip(" ;").endswith("0x0") else "(but the last)")
    if op.startswith("SYNCS.PHASECHK") or op == "NANOSLEEP" or (op == "BRA" and x.get("after_trywait")):
        return "mbarrier wait"
    if op.startswith("BAR"):
        return "named barrier"
    base = op.split(".")[0]
    if base in ("MUFU", "FMNMX", "FFMA", "FADD", "FMUL", "F2FP", "SHFL", "FSEL", "FSETP", "PRMT", "F2I", "I2FP"):
        return base + (".EX2" if base == "MUFU" and ".EX2" in op else "")
    if base.startswith("U") or base in ("R2UR", "S2UR"):
        return "uniform datapath"
    return "other"


def key_loop(path):
    """The key-tile loop of one kernel and its clock: (body (the loop's instructions), tiles (key tiles it ran),
    instructions per tile, cycles one sample stands for)."""
    ins = load(path)
    lo, hi = find_loop(ins)
    body = ins[lo : hi + 1]
    starts = [x for x in body if wgmma_kind(x["src"]) == "qk" and "RZ, !UPT" in x["src"]]
    tiles = sum(x["exec"] for x in starts) or max(x["exec"] for x in body)
    instr = sum(x["exec"] for x in body) / tiles
    selected = sum(x["selected"] for x in body)
    if selected == 0:
        sys.exit(f"{path}: no 'selected' samples in the loop (was warp stall sampling on?)")
    return body, tiles, instr, instr / (selected / tiles)  # instructions per tile over selected samples per tile


def analyse(path):
    """Cycles per key tile per warp of one kernel: dict with path, instr (instructions per tile), total, groups
    (Counter of cycles by group) and range (first and last address, instruction count of the loop)."""
    body, tiles, instr, cycles_per_sample = key_loop(path)
    for a, b in zip(body, body[1:]):
        b["after_trywait"] = opcode(a["src"]).startswith("SYNCS.PHASECHK")
    groups = Counter()
    for x in body:
        turn = x["barrier"]  # samples stalled on a named barrier: the ping-pong turn, wherever ptxas charges them
        groups["ping-pong turn (named barrier)"] += turn * cycles_per_sample / tiles
        groups[group(x)] += (x["samples"] - turn) * cycles_per_sample / tiles
    total = sum(groups.values())
    return {"path": path, "instr": instr, "total": total, "groups": groups,
            "range": (body[0]["addr"], body[-1]["addr"], len(body))}


def reasons(path):
    """Cycles per key tile per warp by stall reason: (over the whole loop, at MUFU.EX2), two Counters; clock as in
    analyse."""
    body, tiles, _, cycles_per_sample = key_loop(path)
    scale = cycles_per_sample / tiles
    loop, ex2 = Counter(), Counter()
    for x in body:
        for k, v in x["reasons"].items():
            loop[k] += v * scale
            if group(x) == "MUFU.EX2":
                ex2[k] += v * scale
    return loop, ex2


def work_tile_split(path):
    """Where a work tile's time goes: (key-loop cycles, cycles outside the key loops, warp instructions outside the
    key loops), per consumer warp and work tile. Key loops: backward branches of at most 1,200 instructions whose
    body holds both wgmma kinds (the masked and the unmasked loop; longer bodies are the persistent loop or cold
    mbarrier retry blocks branching back). A work tile: one Q.K^T start (`RZ, !UPT`) outside them. The clock is
    analyse's; instructions from the first `USETMAXREG.DEALLOC` (the producer's) to the next EXIT are left out."""
    ins = load(path)
    index = {x["addr"]: i for i, x in enumerate(ins)}
    in_loop = [False] * len(ins)
    for i, x in enumerate(ins):
        m = re.search(r"BRA (?:\S+, )?0x([0-9a-f]+)", x["src"])
        if not m or opcode(x["src"]) != "BRA":
            continue
        t = index.get(int(m.group(1), 16))
        if t is None or t >= i or i - t > 1200:
            continue
        kinds = {wgmma_kind(y["src"]) for y in ins[t : i + 1]}
        if {"qk", "pv"} <= kinds:
            for k in range(t, i + 1):
                in_loop[k] = True
    producer, on = [False] * len(ins), False
    for k, x in enumerate(ins):
        op = opcode(x["src"])
        on = on or (op.startswith("USETMAXREG") and "DEALLOC" in op)
        producer[k] = on
        on = on and op != "EXIT"
    lo, hi = find_loop(ins)
    body = ins[lo : hi + 1]
    clock = sum(x["exec"] for x in body) / sum(x["selected"] for x in body)  # cycles per sample, as in analyse
    starts = sum(x["exec"] for k, x in enumerate(ins)
                 if not in_loop[k] and wgmma_kind(x["src"]) == "qk" and "RZ, !UPT" in x["src"])
    inside = sum(x["samples"] for k, x in enumerate(ins) if in_loop[k])
    outside = [x for k, x in enumerate(ins) if not in_loop[k] and not producer[k]]
    return (inside * clock / starts, sum(x["samples"] for x in outside) * clock / starts,
            sum(x["exec"] for x in outside) / starts)


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    if sys.argv[1] == "--work-tile":
        for p in sys.argv[2:]:
            loop, out, n = work_tile_split(p)
            print(f"{p.rsplit('/', 1)[-1]}: per consumer warp and work tile {loop:.0f} cycles in the key loops, "
                  f"{out:.0f} outside them ({n:.0f} warp instructions outside)")
        return
    if sys.argv[1] == "--reasons":
        names = [p.rsplit("/", 1)[-1] for p in sys.argv[2:]]
        res = [reasons(p) for p in sys.argv[2:]]
        for title, part in (("whole loop", 0), ("at MUFU.EX2", 1)):
            keys = sorted(set().union(*(r[part] for r in res)), key=lambda k: -max(r[part][k] for r in res))
            print(f"cycles per key tile per warp by stall reason, {title}: " + " / ".join(names))
            for k in keys:
                if max(r[part][k] for r in res) >= 1:
                    print(f"  {k:28s} " + " ".join(f"{r[part][k]:8.0f}" for r in res))
            print(f"  {'total':28s} " + " ".join(f"{sum(r[part].values()):8.0f}" for r in res))
        return
    res = [analyse(p) for p in sys.argv[1:]]
    names = [r["path"].rsplit("/", 1)[-1] for r in res]
    for n, r in zip(names, res):
        a, b, k = r["range"]
        print(f"{n}: loop {a:#x}-{b:#x} ({k} instructions), {r['instr']:.0f} instructions and "
              f"{r['total']:.0f} cycles per key tile per warp")
    keys = sorted(set().union(*(r["groups"] for r in res)), key=lambda g: -max(r["groups"][g] for r in res))
    w = max(len(k) for k in keys)
    cw = [max(8, len(n)) for n in names]
    print(f"{'cycles per key tile':{w}s} " + " ".join(f"{n:>{c}s}" for n, c in zip(names, cw)))
    for g in keys:
        if max(r["groups"][g] for r in res) >= 1:
            print(f"{g:{w}s} " + " ".join(f"{r['groups'][g]:{c}.0f}" for r, c in zip(res, cw)))
    print(f"{'total':{w}s} " + " ".join(f"{r['total']:{c}.0f}" for r, c in zip(res, cw)))


if __name__ == "__main__":
    main()
