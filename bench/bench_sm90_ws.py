"""BF16 forward attention on the H200: zyfa's sm_90a pipeline and its mma.sync kernel vs PyTorch SDPA (flash,
cuDNN) and FlashAttention-3 (the `fa3-fwd==0.0.3` wheel, when importable), one process, the same torch tensors.

zyfa is called through bench/zyfa_capi.cu (a shared library loaded with ctypes; built by bench/build_sm90_ws.sh), so
no torch extension is compiled on the GPU machine. Method as bench/bench_h200.py: 16K tokens in total
(batch = 16384 // seqlen), num_heads = 2048 // head_dim_v (16 for 192/128), N(0,1) bf16 BSHD inputs (SDPA gets the
BHSD views), causal with seqlen_q == seqlen_k; 3 warm-up calls, median of N CUDA-event timings of single calls
(device time: a spin kernel queued before each call hides the host's launch path; --host-timing counts it;
--interleave times the implementations of a shape round-robin, one call each per round, so that none is favoured by
its place in the order);
TFLOP/s = 4 * b * h * sq * sk * d / t, halved for causal, d = (head_dim_qk + head_dim_v) / 2.
    python3 bench/bench_sm90_ws.py --lib build-ws/libzyfa_capi.so --out DIR [--dims 128,128 ...] [--seqlens ...]
        [--baseline OTHER_BUILD.so] [--variant NAME=BUILD.so ...]
Writes DIR/results.csv (bench/results.csv columns; impl zyfa_sm90a, zyfa_mma, sdpa_flash, sdpa_cudnn, fa3, and
zyfa_sm90a_base for the baseline build, NAME for each --variant build).
"""
import argparse
import csv
import ctypes
import datetime
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_h200 import time_ms_interleaved  # noqa: E402  (one timing method for every benchmark)

COLUMNS = ["date", "device", "impl", "dtype", "head_dim_qk", "head_dim_v", "causal", "batch", "num_heads",
           "num_heads_k", "seqlen_q", "seqlen_k", "median_ms", "tflops"]




class Zyfa:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.zyfa_capi_fwd.restype = ctypes.c_int
        self.err = ctypes.create_string_buffer(512)

    @staticmethod
    def _arr(vals):
        return (ctypes.c_int64 * 4)(*vals)

    def __call__(self, impl, q, k, v, out, lse, causal):
        args = []
        for t in (q, k, v, out):
            args += [ctypes.c_void_p(t.data_ptr()), self._arr(t.shape), self._arr(t.stride())]
        lse_p = ctypes.c_void_p(lse.data_ptr()) if lse is not None else ctypes.c_void_p(0)
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        rc = self.lib.zyfa_capi_fwd(ctypes.c_int(impl), *args, lse_p, ctypes.c_int(int(causal)), stream, self.err,
                                    ctypes.c_int(512))
        if rc != 0:
            raise RuntimeError(self.err.value.decode())

    def ordered(self, impl, section_bytes, ascending, *args):
        """impl 2-5 with the work order (section_bytes, keys ascending) of bf16::sm90ws::WsOrder."""
        self.lib.zyfa_capi_set_ws_order(ctypes.c_longlong(section_bytes), ctypes.c_int(int(ascending)))
        return self(impl, *args)

    def unpaired(self, impl, *args):
        """impl 2-7 with the single-tile causal order (WsOrder::causal_pairs = false)."""
        self.lib.zyfa_capi_set_ws_pairs(ctypes.c_int(0))
        try:
            return self(impl, *args)
        finally:
            self.lib.zyfa_capi_set_ws_pairs(ctypes.c_int(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--dims", nargs="*", default=["128,128"])
    ap.add_argument("--seqlens", nargs="*", type=int, default=[2048, 4096, 8192, 16384])
    ap.add_argument("--no-mma", action="store_true", help="skip zyfa's mma.sync kernel")
    ap.add_argument("--interleave", action="store_true",
                    help="time the implementations of a shape round-robin, one call each per round "
                         "(bench_h200.time_ms_interleaved), instead of one after another")
    ap.add_argument("--host-timing", action="store_true",
                    help="time each call with the host's launch path included (no spin kernel before it)")
    ap.add_argument("--schedules", action="store_true",
                    help="causal shapes: also the sm_90a kernel's snake order, one-CTA-per-tile grid and "
                         "single-tile order (no m-block pairs)")
    ap.add_argument("--baseline", help="a second build of bench/zyfa_capi.cu (e.g. of an earlier commit), timed in "
                                       "the same pass as impl zyfa_sm90a_base")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=LIB",
                    help="another build of bench/zyfa_capi.cu (an experiment), timed in the same pass as impl NAME; "
                         "repeatable")
    ap.add_argument("--wide", action="store_true",
                    help="also the sm_90a kernel with wider key tiles (hd128: 176 keys, hd64: 192; impl zyfa_n176 / zyfa_n192)")
    ap.add_argument("--orders", action="store_true",
                    help="also the sm_90a kernel's work orders (L2 sections, keys ascending) and 3 stages")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    zy = Zyfa(args.lib)
    if args.baseline:  # the baseline is the first variant, under its own impl name
        args.variant.insert(0, f"zyfa_sm90a_base={args.baseline}")
    variants = {n: Zyfa(p) for n, p in (v.split("=", 1) for v in args.variant)}
    try:
        import fa3_fwd_interface as fa3
        fa3_fn = fa3.flash_attn_func
    except Exception as e:  # noqa: BLE001
        print("FA3 not importable:", str(e).splitlines()[0][:200])
        fa3_fn = None
    dev = torch.cuda.get_device_name(0)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    rows = []
    for dd in args.dims:
        dqk, dv = (int(x) for x in dd.split(","))
        heads = 16 if dqk != dv else 2048 // dv
        for causal in (True, False):
            for s in args.seqlens:
                b = max(1, 16384 // s)
                torch.manual_seed(s + dqk)
                q = torch.randn(b, s, heads, dqk, device="cuda", dtype=torch.bfloat16)
                k = torch.randn(b, s, heads, dqk, device="cuda", dtype=torch.bfloat16)
                v = torch.randn(b, s, heads, dv, device="cuda", dtype=torch.bfloat16)
                out = torch.empty(b, s, heads, dv, device="cuda", dtype=torch.bfloat16)
                out_mma = torch.empty_like(out)
                lse = torch.empty(b, heads, s, device="cuda", dtype=torch.float32)
                flop = 4.0 * b * heads * s * s * (dqk + dv) / 2 / (2 if causal else 1)
                qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
                impls = {"zyfa_sm90a": lambda: zy(0, q, k, v, out, lse, causal)}
                for vname, vlib in variants.items():
                    impls[vname] = lambda vlib=vlib: vlib(0, q, k, v, out_mma, lse, causal)
                if not args.no_mma:
                    impls["zyfa_mma"] = lambda: zy(1, q, k, v, out_mma, lse, causal)
                if args.schedules and causal:
                    impls["zyfa_sm90a_snake"] = lambda: zy(2, q, k, v, out_mma, lse, causal)
                    impls["zyfa_sm90a_tilegrid"] = lambda: zy(3, q, k, v, out_mma, lse, causal)
                    impls["zyfa_sm90a_singles"] = lambda: zy.unpaired(4, q, k, v, out_mma, lse, causal)
                if args.wide and (dqk, dv) in ((128, 128), (64, 64)):  # impl 5: FA3's wider non-causal key tiles
                    impls["zyfa_n176" if dqk == 128 else "zyfa_n192"] = lambda: zy.ordered(5, 0, 0, q, k, v, out_mma,
                                                                                             lse, causal)
                if args.orders:
                    t_args = (q, k, v, out_mma, lse, causal)
                    impls["zyfa_asc"] = lambda: zy.ordered(4, 0, 1, *t_args)
                    if causal:
                        impls["zyfa_snake_asc"] = lambda: zy.ordered(2, 0, 1, *t_args)
                        impls["zyfa_l2_32m"] = lambda: zy.ordered(4, 32 << 20, 0, *t_args)
                        impls["zyfa_l2_32m_asc"] = lambda: zy.ordered(4, 32 << 20, 1, *t_args)
                        impls["zyfa_tilegrid_l2_32m"] = lambda: zy.ordered(3, 32 << 20, 0, *t_args)
                        impls["zyfa_tilegrid"] = lambda: zy.ordered(3, 0, 0, *t_args)
                    if (dqk, dv) == (128, 128):
                        impls["zyfa_stages3"] = lambda: zy.ordered(6, 0, 0, *t_args)
                        if causal:
                            impls["zyfa_stages3_tilegrid_l2_32m"] = lambda: zy.ordered(7, 32 << 20, 0, *t_args)
                for name, backend in (("sdpa_flash", SDPBackend.FLASH_ATTENTION),
                                      ("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION)):
                    def run(backend=backend):
                        with sdpa_kernel(backend):
                            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
                    impls[name] = run
                if fa3_fn is not None:
                    impls["fa3"] = lambda: fa3_fn(q, k, v, causal=causal)
                res = {}
                ref = None
                if args.interleave:
                    timed, failed = time_ms_interleaved(impls, args.reps, hide_host=not args.host_timing)
                else:  # one after another (each as time_ms would time it)
                    timed, failed = {}, {}
                    for name, fn in impls.items():
                        t, f = time_ms_interleaved({name: fn}, args.reps, hide_host=not args.host_timing)
                        timed.update(t)
                        failed.update(f)
                for name, msg in failed.items():  # a backend without this shape
                    print(f"  {name} d=({dqk},{dv}) s={s} causal={causal}: unsupported ({msg})", flush=True)
                for name, fn in impls.items():
                    if name not in timed:
                        continue
                    ms = timed[name]
                    if name.startswith("sdpa") and ref is None:
                        ref = fn().transpose(1, 2)
                    res[name] = flop / ms / 1e9
                    rows.append(dict(date=date, device=dev, impl=name, dtype="bf16", head_dim_qk=dqk, head_dim_v=dv,
                                     causal=int(causal), batch=b, num_heads=heads, num_heads_k=heads, seqlen_q=s,
                                     seqlen_k=s, median_ms=f"{ms:.4f}", tflops=f"{flop / ms / 1e9:.1f}"))
                zy(0, q, k, v, out, lse, causal)
                torch.cuda.synchronize()
                diff = (out.float() - ref.float()).abs().max().item() if ref is not None else float("nan")
                line = " ".join(f"{n}={t:.1f}" for n, t in res.items())
                print(f"d=({dqk},{dv}) causal={int(causal)} s={s:5d} b={b:2d} h={heads}: {line}  "
                      f"max|zyfa_sm90a-sdpa|={diff:.3g}", flush=True)
                del q, k, v, out, out_mma, lse, qt, kt, vt
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    sys.exit(main())
