"""An in-order issue model of ONE warp over a stretch of sm_90a SASS: how long the stretch takes when nothing but its
own dependencies and pipe throughputs hold it up (no other warp, no memory). A tool to compare two schedules of the
same work offline (for instance where the first exponential of a softmax can issue); its numbers are modelled, not
measured, and other warps sharing the scheduler make the real stretch longer.

    python3 bench/sass_issue_model.py LISTING START END [--take ADDR ...] [--sfu-share N] [--trace]

LISTING: `cuobjdump -sass` of one function (lines `/*0a30*/ FFMA R1, R2, R3, R4 ;`); START, END: hex addresses of
the first and last instruction of the stretch; --take: addresses of predicated branches to follow (others fall
through, as on a path where their predicate is false); --sfu-share N: the special function unit shared with N - 1
other warps doing the same (each of its instructions occupies it N times as long). Prints the modelled cycle of the
last issue and of the first `MUFU.EX2` and first `FFMA.SAT`.

Model: instructions issue in program order, one per cycle at most; an instruction waits for the registers it reads
(the ready cycle of their last writer: issue + LATENCY of the writer's opcode) and for its pipe (one instruction per
OCCUPANCY cycles on that pipe). Throughputs per SM and clock, divided over its 4 schedulers, from the CUDA C++
Programming Guide's arithmetic-instruction table for compute capability 9.0: FP32 add/mul/fma 128 (one warp
instruction per cycle), exp2 and the other special functions 16 (eight cycles; conversions between 32-bit float and
integer are taken to share that unit and rate). Assumptions of this model, not measured: min/max/compare/select at
half rate (two cycles), a shuffle every four cycles, latencies of 4 cycles for the FP32 and integer pipes, 18 for the
special function unit and 24 for a shuffle."""
import argparse
import re
import sys

LATENCY = {"MUFU": 18, "F2I": 18, "I2F": 18, "I2FP": 18, "F2F": 18, "FRND": 18, "SHFL": 24}
DEFAULT_LATENCY = 4
PIPE = {"MUFU": ("xu", 8), "F2I": ("xu", 8), "I2F": ("xu", 8), "I2FP": ("xu", 8), "F2F": ("xu", 8),
        "FRND": ("xu", 8), "FMNMX": ("alu", 2), "FSETP": ("alu", 2), "ISETP": ("alu", 2), "FSEL": ("alu", 2),
        "SEL": ("alu", 2), "SHFL": ("shfl", 4)}
NO_ISSUE = {"BRA", "BSSY", "BSYNC", "NOP"}  # control flow: followed, not timed
NO_DEST = {"FSETP", "ISETP", "VOTE", "VOTEU", "BAR", "SYNCS", "WARPGROUP", "STS", "STG", "ST", "RED", "ATOM"}


def parse(text):
    """[(address, instruction text)] of a cuobjdump -sass listing."""
    out = []
    for line in text.splitlines():
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;", line)
        if m:
            out.append((int(m.group(1), 16), re.sub(r"\s+", " ", m.group(2))))
    return out


def strip_predicate(text):
    """The instruction without its guard predicate (`@P0 `, `@!UP1 `, ...)."""
    return re.sub(r"^@!?U?P\w+ ", "", text)


def opcode(text):
    """(the instruction without its predicate, its base opcode: `FFMA` of `FFMA.SAT`)."""
    body = strip_predicate(text)
    return body, body.split(" ")[0].split(".")[0]


def model(ins, start, end, take=(), sfu_share=1):
    """Issue cycle of each instruction on the path from address start to address end: [(address, cycle, text)]."""
    index = {a: i for i, (a, _) in enumerate(ins)}
    if start not in index or end not in index:
        raise ValueError("START and END must be instruction addresses of the listing")
    ready, pipe_free, t, trace = {}, {}, 0, []
    i, last = index[start], index[end]
    while i <= last:
        addr, text = ins[i]
        i += 1
        body, op = opcode(text)
        if op == "BRA":
            m = re.search(r"0x([0-9a-f]+)$", body)
            if m and (addr in take or not text.startswith("@")) and int(m.group(1), 16) in index:
                i = index[int(m.group(1), 16)]
            continue
        if op in NO_ISSUE:
            continue
        regs = re.findall(r"\bR(\d+)\b", body)
        writes = op not in NO_DEST and bool(regs)
        dst, srcs = (regs[:1], regs[1:]) if writes else ([], regs)
        cycle = t + 1
        for r in srcs:
            cycle = max(cycle, ready.get(r, 0))
        pipe, occupancy = PIPE.get(op, ("fma", 1))
        if pipe == "xu":
            occupancy *= sfu_share
        cycle = max(cycle, pipe_free.get(pipe, 0))
        pipe_free[pipe] = cycle + occupancy
        for r in dst:
            ready[r] = cycle + LATENCY.get(op, DEFAULT_LATENCY)
        t = cycle
        trace.append((addr, cycle, body))
    return trace


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("listing")
    ap.add_argument("start")
    ap.add_argument("end")
    ap.add_argument("--take", nargs="*", default=[])
    ap.add_argument("--sfu-share", type=int, default=1)
    ap.add_argument("--trace", action="store_true")
    a = ap.parse_args()
    with open(a.listing) as f:
        ins = parse(f.read())
    trace = model(ins, int(a.start, 16), int(a.end, 16), {int(x, 16) for x in a.take}, a.sfu_share)
    if not trace:
        sys.exit("no instruction issued on that path")

    def first(pattern):
        return next((c for _, c, b in trace if b.startswith(pattern)), None)

    alone = "one warp alone" if a.sfu_share == 1 else f"special function unit shared {a.sfu_share} ways"
    print(f"{len(trace)} instructions issued; last issue at cycle {trace[-1][1]} (modelled, {alone}); "
          f"first MUFU.EX2 at {first('MUFU.EX2')}, first FFMA.SAT at {first('FFMA.SAT')}")
    if a.trace:
        for addr, c, b in trace:
            print(f"{addr:#06x} {c:6d} {b}")


if __name__ == "__main__":
    main()
