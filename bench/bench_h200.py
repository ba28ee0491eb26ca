"""BF16 forward attention benchmark: zyfa vs PyTorch SDPA's flash and cuDNN backends, same process, same inputs.

Run by bench/run_h200.sh on the GPU machine (needs torch with CUDA and nvcc):
    python3 bench/bench_h200.py --out DIR
Shapes: 16K total tokens (batch = 16384 // seqlen), seqlen 512..16384, num_heads = 2048 // head_dim_v
(MLA 192/128: 16 heads), causal (seqlen_q == seqlen_k, where SDPA's top-left is_causal equals zyfa's
bottom-right) and not. Timing: CUDA events around each call, 3 warm-up calls, median of N timed calls.
TFLOP/s = 4 * b * h * sq * sk * d / t, halved for causal, d = (head_dim_qk + head_dim_v) / 2.
Writes DIR/results.csv (bench/results.csv columns), DIR/bench.png, and prints a table.
"""
import argparse
import csv
import datetime
import os
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.cpp_extension import load

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
from head_dims import builtin_head_dims  # noqa: E402
COLUMNS = ["date", "device", "impl", "dtype", "head_dim_qk", "head_dim_v", "causal", "batch", "num_heads",
           "num_heads_k", "seqlen_q", "seqlen_k", "median_ms", "tflops"]


def build_ext(build_dir, mma_sync=False):
    """Builds the extension; mma_sync=True compiles flash_attn_func without the sm_90a pipeline
    (-DZYFA_BF16_SM90_WS=0: the portable mma.sync kernel, as on sm_80/sm_89)."""
    os.makedirs(build_dir, exist_ok=True)
    return load(name="zyfa_torch_ext",
                sources=[os.path.join(ROOT, "bench", "zyfa_torch_ext.cpp"),
                         os.path.join(ROOT, "bench", "zyfa_torch_ext_kernel.cu"),
                         os.path.join(ROOT, "bench", "zyfa_torch_ext_variants.cu")],
                extra_include_paths=[os.path.join(ROOT, "include")],
                extra_cflags=["-O3", "-std=c++17"],
                extra_cuda_cflags=["-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a"] +
                (["-DZYFA_BF16_SM90_WS=0"] if mma_sync else []),
                build_directory=build_dir, verbose=False)


# Cycles of the spin kernel queued before each timed call (about 1 ms at the H200's 1,980 MHz): longer than any
# peer's host path (Python wrappers, argument checks, launch), so the GPU is still busy when the first event and the
# call are queued, and the events measure only the call's own device time.
HIDE_HOST_CYCLES = 2_000_000


def time_ms(fn, reps, hide_host=True):
    """Median device time of one call of fn (ms): 3 warm-up calls, then reps calls each between two CUDA events.
    hide_host queues torch.cuda._sleep before each call so that the host's launch path is not timed; without it the
    GPU idles between the first event and the kernel while the host issues the call, and a slow host path (FA3's
    and SDPA's Python layers at 2K) counts as device time."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    return statistics.median(_time_once(fn, hide_host) for _ in range(reps))


def _time_once(fn, hide_host):
    """Device time of one call of fn (ms) between two CUDA events (see time_ms)."""
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    if hide_host:
        torch.cuda._sleep(HIDE_HOST_CYCLES)
    a.record()
    fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b)


def time_ms_interleaved(fns, reps, hide_host=True):
    """Median device time (ms) of each of fns (name -> callable), timed round-robin: 3 warm-up calls each, then reps
    rounds in which every fn is timed once as in time_ms. Every implementation then sees the same GPU state (clocks,
    temperature, L2) on average, where timing them one after another biased the first of a shape (up to 7% at 2K in
    bench/RESULTS.md). A fn that raises in its warm-up is left out: returns {name: ms} of the others and
    {name: error message} of those."""
    ok, failed = {}, {}
    for name, fn in fns.items():
        try:
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            ok[name] = fn
        except Exception as e:  # noqa: BLE001  (a backend without this shape)
            failed[name] = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
    times = {name: [] for name in ok}
    for _ in range(reps):
        for name, fn in ok.items():
            times[name].append(_time_once(fn, hide_host))
    return {name: statistics.median(t) for name, t in times.items()}, failed


def sweep_variants(ext, stream, reps):
    """TFLOP/s of each tile variant on a few shapes (16K tokens), printed as a table."""
    print("variant sweep (TFLOP/s): dqk dv BlockM BlockN Warps Skip | causal 1K 2K 4K 8K 16K | non-causal 2K 8K")
    for i in range(ext.num_variants()):
        dqk, dv, bm, bn, w, skip = ext.variant_desc(i)
        heads = 16 if dqk != dv else 2048 // dv
        res = []
        for causal, s in ((True, 1024), (True, 2048), (True, 4096), (True, 8192), (True, 16384), (False, 2048),
                          (False, 8192)):
            b = 16384 // s
            q = torch.randn(b, s, heads, dqk, device="cuda", dtype=torch.bfloat16)
            k = torch.randn(b, s, heads, dqk, device="cuda", dtype=torch.bfloat16)
            v = torch.randn(b, s, heads, dv, device="cuda", dtype=torch.bfloat16)
            out = torch.empty(b, s, heads, dv, device="cuda", dtype=torch.bfloat16)
            flop = 4.0 * b * heads * s * s * (dqk + dv) / 2 / (2 if causal else 1)
            ms = time_ms(lambda: ext.forward_variant(i, q, k, v, out, None, causal, stream), reps)
            res.append(f"{flop / ms / 1e9:6.1f}")
        print(f"  {dqk:3d} {dv:3d} {bm:3d} {bn:3d} {w:2d} {skip} | " + " ".join(res), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--build-dir", default="/tmp/zyfa_ext_build")
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--mma-sync", action="store_true",
                    help="time the portable mma.sync kernel (build with -DZYFA_BF16_SM90_WS=0; use its own --build-dir)")
    ap.add_argument("--quick", action="store_true", help="fewer shapes and repetitions")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--variants", action="store_true", help="time the tile-size variants first")
    args = ap.parse_args()
    ext = build_ext(args.build_dir, args.mma_sync)
    zyfa_name = "zyfa_mma_sync" if args.mma_sync else "zyfa"  # the impl column of results.csv
    if args.build_only:
        return
    os.makedirs(args.out, exist_ok=True)
    dev = torch.cuda.get_device_name(0)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    total = 16384
    seqlens = [512, 1024, 2048, 4096, 8192, 16384]
    dims = builtin_head_dims()  # THE list, include/zyfa/head_dims.hpp
    if args.quick:
        seqlens = [2048, 8192]
        dims = [(128, 128)]
    rows = []
    stream = torch.cuda.current_stream().cuda_stream
    if args.variants:
        sweep_variants(ext, stream, args.reps)
    for dqk, dv in dims:
        heads = 16 if dqk != dv else 2048 // dv
        for causal in (True, False):
            for s in seqlens:
                b = max(1, total // s)
                torch.manual_seed(s + dqk)
                q = torch.randn(b, s, heads, dqk, device="cuda", dtype=torch.bfloat16)
                k = torch.randn(b, s, heads, dqk, device="cuda", dtype=torch.bfloat16)
                v = torch.randn(b, s, heads, dv, device="cuda", dtype=torch.bfloat16)
                out = torch.empty(b, s, heads, dv, device="cuda", dtype=torch.bfloat16)
                lse = torch.empty(b, heads, s, device="cuda", dtype=torch.float32)
                d = (dqk + dv) / 2
                flop = 4.0 * b * heads * s * s * d / (2 if causal else 1)
                qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
                impls = {zyfa_name: lambda: ext.forward(q, k, v, out, lse, causal, stream)}
                for name, backend in (("sdpa_flash", SDPBackend.FLASH_ATTENTION), ("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION)):
                    def run(backend=backend):
                        with sdpa_kernel(backend):
                            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
                    impls[name] = run
                ext.forward(q, k, v, out, lse, causal, stream)
                ref = None
                for name, fn in impls.items():
                    try:
                        ms = time_ms(fn, args.reps)
                    except Exception as e:  # a backend that does not support this shape
                        print(f"  {name} d=({dqk},{dv}) s={s} causal={causal}: unsupported ({str(e).splitlines()[0][:100]})")
                        continue
                    if name != zyfa_name and ref is None:
                        ref = fn().transpose(1, 2)
                    rows.append(dict(date=date, device=dev, impl=name, dtype="bf16", head_dim_qk=dqk, head_dim_v=dv,
                                     causal=int(causal), batch=b, num_heads=heads, num_heads_k=heads, seqlen_q=s,
                                     seqlen_k=s, median_ms=f"{ms:.4f}", tflops=f"{flop / ms / 1e9:.1f}"))
                ext.forward(q, k, v, out, lse, causal, stream)
                torch.cuda.synchronize()
                diff = (out.float() - ref.float()).abs().max().item() if ref is not None else float("nan")
                line = " ".join(f"{r['impl']}={r['tflops']}" for r in rows if r["head_dim_qk"] == dqk and
                                r["head_dim_v"] == dv and r["causal"] == int(causal) and r["seqlen_q"] == s)
                print(f"d=({dqk},{dv}) causal={int(causal)} s={s:5d} b={b:2d} h={heads}: {line}  "
                      f"max|zyfa-sdpa|={diff:.3g}", flush=True)
                del q, k, v, out, lse, qt, kt, vt
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(2, len(dims), figsize=(4.5 * len(dims), 7), squeeze=False)
        for j, (dqk, dv) in enumerate(dims):
            for i, causal in enumerate((1, 0)):
                ax = axes[i][j]
                for impl, color in ((zyfa_name, "C0"), ("sdpa_flash", "C1"), ("sdpa_cudnn", "C2")):
                    pts = [(r["seqlen_q"], float(r["tflops"])) for r in rows if r["impl"] == impl and
                           r["head_dim_qk"] == dqk and r["head_dim_v"] == dv and r["causal"] == causal]
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=impl, color=color)
                ax.set_xscale("log", base=2)
                ax.set_title(f"d=({dqk},{dv}) {'causal' if causal else 'non-causal'}")
                ax.set_xlabel("seqlen (16K tokens total)")
                ax.set_ylabel("TFLOP/s")
                ax.grid(True, alpha=0.3)
                ax.legend(fontsize=8)
        fig.suptitle(f"BF16 attention forward, {dev}, {date}")
        fig.tight_layout()
        fig.savefig(os.path.join(args.out, "bench.png"), dpi=90)
    except Exception as e:
        print("plot failed:", e)


if __name__ == "__main__":
    sys.exit(main())
