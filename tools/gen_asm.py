#!/usr/bin/env python3
"""zyfa's gfx950 assembly generator: kernel IR (tools/zyfa_gen/kernels/) -> asm/<kernel>.s -> code object
(llvm-mc-22, ld.lld-22) -> include/zyfa/fp8/gfx950/<kernel>.inc (byte array + kernel-argument struct), and
include/zyfa/fp8/gfx950/dispatch_table.inc (family + configuration -> kernel).

    python3 tools/gen_asm.py                 # regenerate every kernel in place
    python3 tools/gen_asm.py --check         # regenerate in memory, exit 1 if any checked-in file differs
    python3 tools/gen_asm.py --list          # kernel names
    python3 tools/gen_asm.py --kernel NAME   # only that kernel (with or without --check)
    python3 tools/gen_asm.py --cycles        # modelled cycle report of every kernel + cycle-model calibration
    python3 tools/gen_asm.py --cycles-csv    # bench/results.csv rows of the attention kernels (modelled)

Every generated .s passes the gfx950hazard checker (the generator pads with s_nop and re-checks). Output is
byte-for-byte reproducible for a given LLVM 22 release. Details: docs/generator.md.
"""
import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from zyfa_gen import dispatch, generate  # noqa: E402
from zyfa_gen.kernels import ALL  # noqa: E402


def outputs(name: str):
    """{repo-relative path: text} of one kernel's generated files."""
    _, asm, _, inc = generate(name)
    return {f"asm/{name}.s": asm, f"include/zyfa/fp8/gfx950/{name}.inc": inc}


def dispatch_output():
    """{path: text} of the generated dispatch table (every kernel of ALL)."""
    entries = []
    for name, (mod, cfg) in ALL.items():
        entries.append((mod.__name__.rsplit(".", 1)[-1], cfg, mod.build(cfg)))
    return {dispatch.FILE: dispatch.render_dispatch(entries)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the checked-in files; write nothing")
    ap.add_argument("--list", action="store_true", help="print the kernel names")
    ap.add_argument("--kernel", action="append", help="generate only this kernel (repeatable)")
    ap.add_argument("--root", default=str(ROOT), help="repository root to write to / compare with")
    ap.add_argument("--cycles", action="store_true", help="print the modelled cycle report; write nothing")
    ap.add_argument("--cycles-csv", metavar="DATE", help="print bench/results.csv rows (device 'MI355X (modelled)') "
                    "of the attention kernels' modelled times, dated DATE; write nothing")
    a = ap.parse_args(argv)
    if a.cycles_csv:
        from zyfa_gen.attention_cycles import attention_csv_rows, attention_kernels
        attn = attention_kernels()
        gen = {n: generate(n)[1] for n in sorted(attn)}
        print("\n".join(attention_csv_rows(gen, attn, a.cycles_csv)))
        return 0
    if a.cycles:
        from zyfa_gen.cycle_report import report_lines
        gen = {n: generate(n)[1] for n in (a.kernel or sorted(ALL))}
        print("\n".join(report_lines(gen)))
        return 0
    if a.list:
        print("\n".join(sorted(ALL)))
        return 0
    names = a.kernel or sorted(ALL)
    root = pathlib.Path(a.root)
    bad = 0
    for n in names:
        if n not in ALL:
            print(f"gen_asm: unknown kernel {n!r}; known: {', '.join(sorted(ALL))}", file=sys.stderr)
            return 2
    jobs = [outputs(n) for n in names] + ([] if a.kernel else [dispatch_output()])
    for out in jobs:
        for rel, text in out.items():
            path = root / rel
            if a.check:
                old = path.read_text() if path.exists() else None
                if old != text:
                    print(f"gen_asm: {rel} is stale or missing (run: python3 tools/gen_asm.py)", file=sys.stderr)
                    bad += 1
                else:
                    print(f"gen_asm: {rel} up to date")
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
                print(f"gen_asm: wrote {rel}")
    if a.check and not a.kernel:
        # generated files of kernels that no longer exist are stale too
        known = set(ALL)
        for pattern in ("asm/*.s", "include/zyfa/fp8/gfx950/*.inc"):
            for path in sorted(root.glob(pattern)):
                if path.name.rsplit(".", 1)[0] not in known and str(path.relative_to(root)) != dispatch.FILE:
                    print(f"gen_asm: {path.relative_to(root)} has no generator kernel (delete it)", file=sys.stderr)
                    bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
