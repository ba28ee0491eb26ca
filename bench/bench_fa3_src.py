"""FlashAttention-3 built from source here (bench/build_fa3_src.sh) against the `fa3-fwd==0.0.3` wheel and zyfa, hd128
bf16, one process, the same torch tensors. It answers two questions about the gap between zyfa and FA3: is it FA3's
code generation (the wheel's compiler) or its source, and which of FA3's choices matter (the ablation builds).
    python3 bench/bench_fa3_src.py --fa3-src DIR --zyfa build-ws/libzyfa_capi.so --out OUT
DIR holds fa3_src*.so from build_fa3_src.sh. Method as bench/bench_sm90_ws.py (16K tokens, 16 heads, N(0,1) BSHD
inputs, device-time medians after warm-up, TFLOP/s counted the same way). Every build's output must be bitwise equal
to the wheel's (none of the ablations changes the arithmetic): a row is marked DIFF otherwise. Writes OUT/results.csv
(bench/results.csv columns; impl fa3 for the wheel, fa3_src*, zyfa_sm90a)."""
import argparse
import csv
import ctypes
import datetime
import glob
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_h200 import time_ms  # noqa: E402
from bench_sm90_ws import COLUMNS, Zyfa  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fa3-src", required=True, help="folder of fa3_src*.so (bench/build_fa3_src.sh)")
    ap.add_argument("--zyfa", help="zyfa's C entry point library (bench/build_sm90_ws.sh)")
    ap.add_argument("--seqlens", type=int, nargs="+", default=[2048, 4096, 8192, 16384])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    import fa3_fwd_interface as fa3  # the wheel

    libs = {}
    for path in sorted(glob.glob(os.path.join(args.fa3_src, "fa3_src*.so"))):
        lib = ctypes.CDLL(path)
        lib.fa3src_fwd.restype = ctypes.c_int
        libs[os.path.basename(path)[:-3]] = lib
    if not libs:
        sys.exit(f"no fa3_src*.so in {args.fa3_src}")
    zyfa = Zyfa(args.zyfa) if args.zyfa else None
    sem = torch.zeros(1, dtype=torch.int32, device="cuda")
    num_sm = torch.cuda.get_device_properties(0).multi_processor_count
    stream = torch.cuda.current_stream().cuda_stream
    dev = torch.cuda.get_device_name(0)
    date = datetime.date.today().isoformat()
    heads, d = 16, 128
    rows = []
    torch.manual_seed(0)
    for causal in (True, False):
        for s in args.seqlens:
            b = 16384 // s
            q, k, v = (torch.randn(b, s, heads, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            out = torch.empty_like(q)
            lse = torch.empty(b, heads, s, device="cuda")
            flops = 4 * b * heads * s * s * d / (2 if causal else 1)
            ref = fa3.flash_attn_func(q, k, v, causal=causal)
            ref = ref[0] if isinstance(ref, tuple) else ref
            calls = {"fa3": (lambda: fa3.flash_attn_func(q, k, v, causal=causal), None)}

            def src_call(lib):
                def run():
                    rc = lib.fa3src_fwd(*(ctypes.c_void_p(t.data_ptr()) for t in (q, k, v, out, lse)), b, s, s, heads,
                                        heads, int(causal), ctypes.c_void_p(sem.data_ptr()), num_sm,
                                        ctypes.c_void_p(stream))
                    if rc != 0:
                        raise RuntimeError(f"fa3src_fwd: CUDA error {rc}")
                return run

            for name, lib in libs.items():
                calls[name] = (src_call(lib), "fa3")
            if zyfa is not None:
                calls["zyfa_sm90a"] = (lambda: zyfa(0, q, k, v, out, lse, causal), "close")
            line = []
            for name, (fn, check) in calls.items():
                mark = ""
                if check is not None:
                    out.fill_(float("nan"))
                    fn()
                    torch.cuda.synchronize()
                    if check == "fa3" and not torch.equal(out, ref):
                        mark = "(DIFF)"
                    if check == "close" and not (out.float() - ref.float()).abs().max().item() < 0.02:
                        mark = "(WRONG)"
                ms = time_ms(fn, args.reps)
                tflops = flops / ms / 1e9
                line.append(f"{name}={tflops:.1f}{mark}")
                rows.append(dict(date=date, device=dev, impl=name, dtype="bf16", head_dim_qk=d, head_dim_v=d,
                                 causal=int(causal), batch=b, num_heads=heads, num_heads_k=heads, seqlen_q=s,
                                 seqlen_k=s, median_ms=f"{ms:.4f}", tflops=f"{tflops:.1f}"))
            print(f"causal={int(causal)} s={s:5d}: " + " ".join(line), flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
