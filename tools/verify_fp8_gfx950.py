#!/usr/bin/env python3
"""Fuller emulator verification of the generated gfx950 FP8 attention kernels (asm/zyfa_fp8_fwd_d128_m32.s, head
dims (128, 128), and asm/zyfa_fp8_fwd_d192_dv128_m32.s, MLA (192, 128)) against the C++ FP8 specification; prints
a Markdown table per kernel (the ones in docs/fp8-gfx950.md). The CI subset is
tests/python/test_gen_fp8_attention.py; the comparison rules are in tests/python/fp8_attention_case.py.

    .venv/bin/python tools/verify_fp8_gfx950.py                  # every case of both kernels (a few minutes)
    .venv/bin/python tools/verify_fp8_gfx950.py --quick          # without the 512x512 and 32,768-key cases
    .venv/bin/python tools/verify_fp8_gfx950.py --head-dims 192,128   # one kernel
"""
import argparse
import pathlib
import sys
import time
import zlib

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))

import fp8_attention_case as fc  # noqa: E402

TAILS = [1, 17, 63, 65, 127, 129, 200]


def cases(quick: bool):
    out = []
    for s in TAILS:  # seqlen_q == seqlen_k, causal and not
        for causal in (True, False):
            out.append((f"tail {s}x{s} {'causal' if causal else 'full'}", 1, s, s, 1, 1, causal, 0, "fp32_seq"))
    for sq, sk in ((17, 129), (129, 17), (65, 300), (300, 65), (1, 129), (129, 1)):  # seqlen_q != seqlen_k
        for causal in (True, False):
            out.append((f"{sq}x{sk} {'causal' if causal else 'full'}", 1, sq, sk, 2, 1, causal, 0, "fp32_seq"))
    for h, hk in ((2, 2), (4, 2), (8, 1), (6, 3), (3, 1)):  # GQA 1/2/8, MQA, odd group
        out.append((f"heads {h}/{hk}", 2, 70, 90, h, hk, True, 0, "fp32_seq"))
    out.append(("strided q/k/v/out (pad 16, NaN padding)", 2, 100, 130, 2, 1, True, 16, "fp32_seq"))
    out.append(("strided, non-causal", 1, 33, 257, 4, 2, False, 32, "fp32_seq"))
    for order in ("fp64", "fp32_block"):
        out.append((f"MFMA order {order}", 1, 129, 257, 2, 1, True, 0, order))
        out.append((f"MFMA order {order}, full", 1, 64, 320, 1, 1, False, 0, order))
    if not quick:
        out.append(("causal 512x512", 1, 512, 512, 1, 1, True, 0, "fp32_seq"))
    return out


def work_items(quick: bool, dqk: int, dv: int):
    """(name, Case, MFMA order, shape text) of every case for head dims (dqk, dv)."""
    def seed(n):  # hd128 keeps its historical seeds
        return zlib.crc32(n.encode()) if dqk == 128 else zlib.crc32(f"{n} d{dqk}".encode())
    work = [(n, fc.random_case(n, np.random.default_rng(seed(n)), b, sq, sk, h, hk, causal, pad=pad, dqk=dqk,
                               dv=dv), order, f"{b}, {sq}, {sk}, {h}/{hk}, {pad}")
            for n, b, sq, sk, h, hk, causal, pad, order in cases(quick)]
    sys.path.insert(0, str(ROOT / "tests" / "python"))
    import test_gen_fp8_attention as t  # the special-value case of the CI test
    sc = t.special_case(dqk=dqk)
    work.append(("special codes: +-448, subnormal, NaN q/k/v, NaN poison at masked keys", sc, "fp32_seq",
                 "1, 96, 100, 1/1, 0"))
    sf = t.special_case(causal=False, dqk=dqk)
    work.append(("special codes, non-causal (full blocks: NaN logits take the per-element path)", sf, "fp32_seq",
                 "1, 96, 100, 1/1, 0"))
    wide = fc.random_case("wide", np.random.default_rng(seed("wide")), 1, 100, 300, 2, 1, True, dqk=dqk, dv=dv)
    wide.scale = 1.0
    work.append(("wide logits (softmax_scale 1: many codes clamped to 0)", wide, "fp32_seq", "1, 100, 300, 2/1, 0"))
    for causal in (True, False):  # Lean P's forms (fp8_spec.hpp STEP 2): fused near code boundaries, two-step rows
        cm = "causal" if causal else "full"
        for what, a_max, t_top in (("fused form, keys near code boundaries (logits ~2^15)", 1.75, 2.0 ** 15),
                                   ("rows beyond 2^16 (two-step) beside fused rows in each wave", 3.5, 2.0 ** 15),
                                   ("every row beyond 2^16 (two-step)", 1.75, 2.0 ** 17)):
            c = fc.form_boundary_case(f"forms {what} {cm}", np.random.default_rng(seed(f"forms {what} {cm}")), 64, 192,
                                      causal, dqk=dqk, a_max=a_max, t_top=t_top)
            work.append((f"Lean P {what}, {cm}", c, "fp32_seq", "1, 64, 192, 1/1, 0"))
    if not quick:
        long = fc.random_case("v1_32768", np.random.default_rng(9 if dqk == 128 else 19), 1, 32, 32768, 1, 1,
                              False, q_gain=3.0, dqk=dqk, dv=dv)
        long.v[:] = 0x38
        long.vd = 1.0
        work.append(("V == 1 over 32,768 keys (out must be exactly 1.0)", long, "fp32_seq", "1, 32, 32768, 1/1, 0"))
        longc = fc.random_case("causal_q32_k32768", np.random.default_rng(10 if dqk == 128 else 20), 1, 32, 32768,
                               1, 1, True, dqk=dqk, dv=dv)
        work.append(("causal, 32 rows x 32,768 keys", longc, "fp32_seq", "1, 32, 32768, 1/1, 0"))
    return work


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--head-dims", choices=["128,128", "192,128", "all"], default="all",
                    help="which kernel: hd128, MLA (192, 128) or both")
    a = ap.parse_args(argv)
    dims = [(128, 128), (192, 128)] if a.head_dims == "all" else [tuple(map(int, a.head_dims.split(",")))]
    rows, failed = [], 0
    for dqk, dv in dims:
        print(f"\n{fc.KERNELS[(dqk, dv)]}, head dims ({dqk}, {dv}):\n")
        print("| case | b, sq, sk, h/hk, pad | MFMA order | elements | NaN | result | LSE max err | wave instr. | "
              "time |")
        print("|---|---|---|---|---|---|---|---|---|")
        r, f = run_items(work_items(a.quick, dqk, dv))
        rows += r
        failed += f
    print(f"\n{len(rows) - failed} of {len(rows)} cases passed")
    return 1 if failed else 0


def run_items(work):
    rows, failed = [], 0
    for name, c, order, shape in work:
        t0 = time.time()
        try:
            st = fc.check(c, order=order)
            if name.startswith("V == 1"):
                got, _, _ = fc.run_kernel(c)
                assert (got == 0x3F80).all(), "V == 1: an output is not exactly 1.0"
            res = "bit-exact" if st.get("bit_exact") else f"max err/row max {st['max_rel_row_err']:.2e}"
            ok = True
        except AssertionError as e:
            st, res, ok = {}, f"FAIL: {e}", False
            failed += 1
        row = (f"| {name} | {shape} | {order} | {st.get('elements', '')} | {st.get('nan', '')} | {res} | "
               f"{st.get('lse_max_err', float('nan')):.2g} | {st.get('wave_instructions', '')} | "
               f"{time.time() - t0:.1f} s |")
        print(row, flush=True)
        rows.append((name, ok))
    return rows, failed


if __name__ == "__main__":
    sys.exit(main())
