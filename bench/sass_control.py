"""ptxas's own schedule of a key-tile loop, read from the control bits of each sm_90a SASS instruction: the stall
count it encodes (cycles before the warp may issue its next instruction), the yield bit, the dependency barriers it
sets and waits for. Summed over the loop, the stall counts are the cycles one warp spends per key tile with nothing
but the compiler's fixed waits in its way; Nsight Compute's `wait` stall reason counts the same cycles as measured.

    python3 bench/sass_control.py LISTING [LISTING ...] [--list]

LISTING: `cuobjdump -sass -fun FUNCTION LIB` of one kernel (the encoding lines `/* 0x... */` are needed). The loop
taken is the smallest one closed by a backward branch whose body holds a wgmma (`HGMMA`) and an exponential
(`MUFU.EX2`): the unmasked key-tile loop of an attention kernel. Prints, per listing, the loop's instructions, the sum
of stall counts, the static cycle of its first and last `MUFU.EX2` and of its wgmma and barrier instructions, and the
stall counts summed per opcode side by side; --list prints the loop with each instruction's control fields.

Encoding (Volta and later, 128-bit instructions; Jia et al. 2018, "Dissecting the NVIDIA Volta GPU Architecture via
Microbenchmarking", arXiv:1804.06826, section 2.1): bits 105-108 stall count, 109 yield, 110-112 the dependency
barrier a variable-latency result sets, 113-115 the one a source read releases (7: none), 116-121 the barriers waited
for, 122-125 operand reuse. sm_90a listings keep that layout: each `MUFU.EX2` sets a barrier and its consumers wait
for the same one."""
import argparse
import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loop_segments import opcode  # noqa: E402  (the full opcode, predicate stripped)

INSTR = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*/\* (0x[0-9a-f]{16}) \*/")
HIGH = re.compile(r"/\* (0x[0-9a-f]{16}) \*/")


def parse(path):
    """[(address, text, control)] of every instruction of the listing; control from the high 64 bits."""
    lines = open(path).read().splitlines()
    out = []
    for j, line in enumerate(lines):
        m = INSTR.search(line)
        h = HIGH.search(lines[j + 1]) if m and j + 1 < len(lines) else None
        if h:
            hi = int(h.group(1), 16)
            ctrl = {"stall": (hi >> 41) & 0xF, "yield": (hi >> 45) & 1, "set": (hi >> 46) & 7,
                    "release": (hi >> 49) & 7, "wait": (hi >> 52) & 0x3F}
            out.append((int(m.group(1), 16), m.group(2), ctrl))
    return out


def key_loop(ins):
    """The smallest backward-branch loop whose body has an HGMMA and a MUFU.EX2 (None if there is none)."""
    at = {a: k for k, (a, _, _) in enumerate(ins)}
    best = None
    for k, (a, text, _) in enumerate(ins):
        m = re.search(r"\bBRA\b.*?(0x[0-9a-f]+)", text)
        if not m or int(m.group(1), 16) >= a or int(m.group(1), 16) not in at:
            continue
        body = ins[at[int(m.group(1), 16)]:k + 1]
        if any("HGMMA" in t for _, t, _ in body) and any("MUFU.EX2" in t for _, t, _ in body):
            if best is None or len(body) < len(best):
                best = body
    return best


def summarize(body):
    """(stall cycles of the loop, {opcode: stall cycles}, {marker opcode: [static cycle of each]}, per-instruction
    static cycles): a static cycle is the sum of the stall counts before that instruction."""
    cycle, cycles, marks, ops = 0, [], collections.defaultdict(list), collections.Counter()
    for _, text, c in body:
        op = opcode(text)
        cycles.append(cycle)
        if op.startswith(("HGMMA", "BAR", "MUFU.EX2", "WARPGROUP", "SYNCS")):
            marks[op.split(".")[0] if op.startswith("HGMMA") else op].append(cycle)
        ops[op] += c["stall"]
        cycle += c["stall"]
    return cycle, ops, marks, cycles


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("listings", nargs="+")
    ap.add_argument("--list", action="store_true", help="print each loop with its control fields")
    args = ap.parse_args()
    per_op = []
    for path in args.listings:
        body = key_loop(parse(path))
        if body is None:
            raise SystemExit(f"{path}: no loop with HGMMA and MUFU.EX2")
        total, ops, marks, cycles = summarize(body)
        if args.list:
            for (a, text, c), cycle in zip(body, cycles):
                print("%5d %05x S%-2d Y%d set %s wait %02x  %s" % (cycle, a, c["stall"], c["yield"],
                                                                  c["set"] if c["set"] != 7 else "-", c["wait"], text))
        print(f"{path}: loop {body[0][0]:#x}-{body[-1][0]:#x}, {len(body)} instructions, {total} stall cycles "
              f"(first MUFU.EX2 at {marks['MUFU.EX2'][0]}, last at {marks['MUFU.EX2'][-1]})")
        for op, at in sorted(marks.items()):
            if op != "MUFU.EX2":
                print(f"  {op:32s} at " + " ".join(map(str, at)))
        per_op.append(ops)
    print("stall cycles per opcode: " + " / ".join(args.listings))
    total = collections.Counter()
    for ops in per_op:
        total.update(ops)
    for op, _ in total.most_common():
        if any(ops[op] >= 8 for ops in per_op):
            print(f"  {op:32s}" + "".join(f"{ops[op]:7d}" for ops in per_op))


if __name__ == "__main__":
    main()
