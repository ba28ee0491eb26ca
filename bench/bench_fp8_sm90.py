"""FP8 (e4m3fn) forward attention on the H200: zyfa's sm_90a kernel with Lean P and its exp2 twin against
FlashAttention-3's FP8 kernel (the `fa3-fwd==0.0.3` wheel) and cuDNN's FP8 forward (cudnn-frontend's sdpa_fp8, FP8
output on Hopper: speed only), with zyfa BF16, FA3 BF16 and cuDNN BF16 for reference;
one process, the same inputs. Also the accuracy on the real activations (zyfa FP8 vs FA3 FP8 on the same quantized
inputs) and the SM clock and board power during each timed configuration.

Method (as bench/bench_sm90_ws.py): 16K tokens (batch = 16384 // seqlen), 16 heads, N(0,1) inputs quantized per
tensor to e4m3fn (descale = amax / 448), causal with seqlen_q == seqlen_k; 3 warm-up calls, median of N CUDA-event
timings; TFLOP/s = 4 * b * h * sq * sk * (head_dim_qk + head_dim_v) / 2 / t, halved for causal. Clock and power:
`nvidia-smi --query-gpu=clocks.sm,power.draw -lms 20` sampled during each configuration's timed calls; TFLOP/J =
TFLOP/s / mean W.
    python3 bench/bench_fp8_sm90.py --lib build-fp8/libzyfa_capi.so --out DIR [--dims 128,128 192,128] [--seqlens ...]
Writes DIR/results.csv (bench/results.csv columns), DIR/power.csv, DIR/accuracy.csv.
"""
import argparse
import csv
import ctypes
import datetime
import gzip
import io
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_h200 import time_ms  # noqa: E402
from bench_sm90_ws import COLUMNS, Zyfa  # noqa: E402

FP8_MAX = 448.0


class ZyfaFp8(Zyfa):
    def __init__(self, path):
        super().__init__(path)
        self.lib.zyfa_capi_fp8_fwd.restype = ctypes.c_int

    def fp8(self, mode, q, k, v, out, lse, causal, descales, softmax_scale=0.0):
        args = []
        for t in (q, k, v, out):
            args += [ctypes.c_void_p(t.data_ptr()), self._arr(t.shape), self._arr(t.stride())]
        lse_p = ctypes.c_void_p(lse.data_ptr()) if lse is not None else ctypes.c_void_p(0)
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        rc = self.lib.zyfa_capi_fp8_fwd(ctypes.c_int(mode), *args, *(ctypes.c_float(d) for d in descales),
                                        ctypes.c_float(softmax_scale), lse_p, ctypes.c_int(int(causal)), stream,
                                        self.err, ctypes.c_int(512))
        if rc != 0:
            raise RuntimeError(self.err.value.decode())


def cudnn_fp8(q8, k8, v8, descales, causal):
    """cuDNN's FP8 attention forward (cudnn-frontend's graph.sdpa_fp8) on BSHD e4m3fn q/k/v: returns a function that
    runs it. Hopper's cuDNN FP8 forward writes FP8 (e4m3fn) output only (scale_o = 1 here; the output's precision is
    e4m3's, so only its speed is compared). Raises when cudnn-frontend or the cuDNN engine is not available."""
    import cudnn  # nvidia-cudnn-frontend==1.32.0 (a wheel carried in .offline/cudnn_fe: docs/fp8-sm90.md)
    b, s, h, d = q8.shape
    dv = v8.shape[3]
    e4m3, fp32 = cudnn.data_type.FP8_E4M3, cudnn.data_type.FLOAT
    handle = cudnn.create_handle()
    cudnn.set_stream(handle=handle, stream=torch.cuda.current_stream().cuda_stream)
    graph = cudnn.pygraph(io_data_type=e4m3, intermediate_data_type=fp32, compute_data_type=fp32, handle=handle)

    def bhsd(t):  # the BSHD tensor as cuDNN's [b, h, s, d] dims with BSHD strides
        return [t.shape[0], t.shape[2], t.shape[1], t.shape[3]], [t.stride(0), t.stride(2), t.stride(1), t.stride(3)]
    tq, tk, tv = (graph.tensor(name=n, dim=bhsd(t)[0], stride=bhsd(t)[1], data_type=e4m3)
                  for n, t in (("q", q8), ("k", k8), ("v", v8)))
    one = dict(dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=fp32)
    dq, dk, dvv, ds, ss, so = (graph.tensor(name=n, **one) for n in ("dq", "dk", "dv", "ds", "ss", "so"))
    o, _, amax_s, amax_o = graph.sdpa_fp8(q=tq, k=tk, v=tv, descale_q=dq, descale_k=dk, descale_v=dvv, descale_s=ds,
                                         scale_s=ss, scale_o=so, is_inference=True,
                                         attn_scale=1.0 / float(d) ** 0.5, use_causal_mask=causal, name="sdpa_fp8")
    out = torch.empty(b, s, h, dv, device="cuda", dtype=torch.float8_e4m3fn)
    o.set_output(True).set_dim(bhsd(out)[0]).set_stride(bhsd(out)[1]).set_data_type(e4m3)
    amax = [torch.empty(1, 1, 1, 1, device="cuda", dtype=torch.float32) for _ in range(2)]
    amax_s.set_output(True).set_dim([1, 1, 1, 1]).set_stride([1, 1, 1, 1]).set_data_type(fp32)
    amax_o.set_output(True).set_dim([1, 1, 1, 1]).set_stride([1, 1, 1, 1]).set_data_type(fp32)
    graph.validate()
    graph.build_operation_graph()
    graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    graph.check_support()
    graph.build_plans()
    ws = torch.empty(max(1, graph.get_workspace_size()), device="cuda", dtype=torch.uint8)
    sc = {n: torch.full((1, 1, 1, 1), x, device="cuda", dtype=torch.float32)
          for n, x in (("dq", descales[0]), ("dk", descales[1]), ("dv", descales[2]), ("ds", 1.0), ("ss", 1.0),
                       ("so", 1.0))}
    pack = {tq: q8, tk: k8, tv: v8, dq: sc["dq"], dk: sc["dk"], dvv: sc["dv"], ds: sc["ds"], ss: sc["ss"],
            so: sc["so"], o: out, amax_s: amax[0], amax_o: amax[1]}
    return lambda: graph.execute(pack, ws, handle=handle)


def quantize(x):
    """Per-tensor e4m3fn quantization: (codes, descale) with x ~ codes * descale."""
    d = max(x.abs().max().item() / FP8_MAX, 1e-12)
    return (x.float() / d).to(torch.float8_e4m3fn), d


class Sampler:
    """nvidia-smi sampling of SM clock (MHz) and board power (W) every 20 ms, in the background."""

    def __init__(self, path):
        self.f = open(path, "w")
        try:
            self.p = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                                       "-lms", "20", "-i", "0"], stdout=subprocess.PIPE, text=True)
        except OSError:
            self.p = None
        self.samples = []
        import threading
        self.t = threading.Thread(target=self._read, daemon=True)
        if self.p:
            self.t.start()

    def _read(self):
        for line in self.p.stdout:
            try:
                clk, pw = (float(x) for x in line.split(","))
            except ValueError:
                continue
            self.samples.append((time.time(), clk, pw))

    def window(self, t0, t1):
        s = [(c, p) for (t, c, p) in self.samples if t0 <= t <= t1]
        if not s:
            return float("nan"), float("nan"), 0
        return sum(c for c, _ in s) / len(s), sum(p for _, p in s) / len(s), len(s)

    def close(self):
        if self.p:
            self.p.terminate()


def timed(fn, reps, sampler):
    """time_ms plus the clock/power window: the timed calls are repeated until at least 0.3 s have run."""
    ms = time_ms(fn, reps)
    n = max(1, int(0.3 / (ms / 1e3)))
    torch.cuda.synchronize()
    t0 = time.time()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    t1 = time.time()
    time.sleep(0.05)
    clk, pw, ns = sampler.window(t0, t1)
    return ms, clk, pw, ns


def speed(args, zy, fa3_fn, sampler, dev, date):
    rows, power = [], []
    for dd in args.dims:
        dqk, dv = (int(x) for x in dd.split(","))
        heads = 16
        for causal in (True, False):
            for s in args.seqlens:
                b = max(1, 16384 // s)
                torch.manual_seed(s + dqk)
                q = torch.randn(b, s, heads, dqk, device="cuda", dtype=torch.bfloat16)
                k = torch.randn(b, s, heads, dqk, device="cuda", dtype=torch.bfloat16)
                v = torch.randn(b, s, heads, dv, device="cuda", dtype=torch.bfloat16)
                (q8, qd), (k8, kd), (v8, vd) = quantize(q), quantize(k), quantize(v)
                out = torch.empty(b, s, heads, dv, device="cuda", dtype=torch.bfloat16)
                out2 = torch.empty_like(out)
                lse = torch.empty(b, heads, s, device="cuda", dtype=torch.float32)
                flop = 4.0 * b * heads * s * s * (dqk + dv) / 2 / (2 if causal else 1)
                desc = torch.tensor([[qd]], device="cuda").expand(b, heads).contiguous(), \
                    torch.tensor([[kd]], device="cuda").expand(b, heads).contiguous(), \
                    torch.tensor([[vd]], device="cuda").expand(b, heads).contiguous()
                impls = {
                    ("zyfa", "e4m3fn"): lambda: zy.fp8(0, q8, k8, v8, out, lse, causal, (qd, kd, vd)),
                    ("zyfa_exp2", "e4m3fn"): lambda: zy.fp8(1, q8, k8, v8, out2, lse, causal, (qd, kd, vd)),
                }
                if args.base is not None:
                    impls[("zyfa_base", "e4m3fn")] = lambda: args.base.fp8(0, q8, k8, v8, out2, lse, causal,
                                                                           (qd, kd, vd))
                if causal:  # the single-tile causal order, against the balanced m-block pairs of mode 0
                    impls[("zyfa_singles", "e4m3fn")] = lambda: zy.fp8(2, q8, k8, v8, out2, lse, causal, (qd, kd, vd))
                if fa3_fn is not None:
                    impls[("fa3", "e4m3fn")] = lambda: fa3_fn(q8, k8, v8, causal=causal, q_descale=desc[0],
                                                              k_descale=desc[1], v_descale=desc[2])
                try:
                    impls[("cudnn", "e4m3fn")] = cudnn_fp8(q8, k8, v8, (qd, kd, vd), causal)
                except Exception as e:  # noqa: BLE001  (no cudnn-frontend, or no engine for this shape)
                    print(f"  cudnn e4m3fn d=({dqk},{dv}) s={s}: not available ({str(e).splitlines()[0][:160]})",
                          flush=True)
                if not args.no_bf16:
                    impls[("zyfa", "bf16")] = lambda: zy(0, q, k, v, out2, lse, causal)
                if fa3_fn is not None and not args.no_bf16:
                    impls[("fa3", "bf16")] = lambda: fa3_fn(q, k, v, causal=causal)
                qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

                def cudnn():
                    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                        return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
                if not args.no_bf16:
                    impls[("sdpa_cudnn", "bf16")] = cudnn
                res = {}
                for (name, dt), fn in impls.items():
                    try:
                        ms, clk, pw, ns = timed(fn, args.reps, sampler)
                    except Exception as e:  # noqa: BLE001
                        print(f"  {name} {dt} d=({dqk},{dv}) s={s}: unsupported ({str(e).splitlines()[0][:160]})",
                              flush=True)
                        continue
                    tf = flop / ms / 1e9
                    res[f"{name}/{dt}"] = tf
                    rows.append(dict(date=date, device=dev, impl=name, dtype=dt, head_dim_qk=dqk, head_dim_v=dv,
                                     causal=int(causal), batch=b, num_heads=heads, num_heads_k=heads, seqlen_q=s,
                                     seqlen_k=s, median_ms=f"{ms:.4f}", tflops=f"{tf:.1f}"))
                    power.append(dict(impl=name, dtype=dt, head_dim_qk=dqk, head_dim_v=dv, causal=int(causal), seqlen=s,
                                      tflops=f"{tf:.1f}", sm_clock_mhz=f"{clk:.0f}", power_w=f"{pw:.0f}",
                                      tflop_per_j=f"{tf / pw:.2f}" if pw == pw and pw > 0 else "nan", samples=ns))
                zl, ze = res.get("zyfa/e4m3fn"), res.get("zyfa_exp2/e4m3fn")
                fa = res.get("fa3/e4m3fn")
                extra = ""
                if zl and ze:
                    extra += f" lean/exp2={zl / ze:.3f}"
                if zl and fa:
                    extra += f" zyfa/fa3_fp8={zl / fa:.3f}"
                line = " ".join(f"{n}={t:.1f}" for n, t in res.items())
                print(f"d=({dqk},{dv}) causal={int(causal)} s={s:5d} b={b:2d}: {line}{extra}", flush=True)
                del q, k, v, q8, k8, v8, out, out2, lse, qt, kt, vt
    return rows, power


def load_layer(path):
    with gzip.open(path, "rb") as f:
        a = np.load(io.BytesIO(f.read()))
    return torch.from_numpy(a.astype(np.int16).view(np.int16)).view(torch.bfloat16).cuda()


def reference(q, k, v, scale, causal):
    """fp64 attention on [b, s, h, d] (GQA by repeating K/V heads): out [b, s, h, dv], lse [b, h, s]."""
    g = q.shape[2] // k.shape[2]
    qh = q.double().transpose(1, 2)
    kh = k.double().transpose(1, 2).repeat_interleave(g, dim=1)
    vh = v.double().transpose(1, 2).repeat_interleave(g, dim=1)
    s = (qh @ kh.transpose(-1, -2)) * scale
    if causal:
        sq, sk = s.shape[-2], s.shape[-1]
        i = torch.arange(sq, device=s.device)[:, None]
        j = torch.arange(sk, device=s.device)[None, :]
        s = s.masked_fill(j > i + (sk - sq), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    return (torch.softmax(s, dim=-1) @ vh).transpose(1, 2), lse


def accuracy(zy, fa3_fn, root):
    """The real activations mapped to head dim 128: SmolLM2's 64 by zero padding (exact: the logits and the first 64
    output columns are unchanged); Gemma 3's 256 cut into two 128-column halves as separate heads (its real q, k, v
    values, not the model's attention). Per-tensor e4m3fn quantization; errors against fp64 attention on the
    dequantized inputs: relative Frobenius, max |err| relative to max |ref|, max LSE error (nats)."""
    rows = []
    for model in sorted(os.listdir(root)):
        meta = json.load(open(os.path.join(root, model, "meta.json")))
        for f in sorted(os.listdir(os.path.join(root, model))):
            if not f.endswith("_q.npy.gz"):
                continue
            layer = f[:-len("_q.npy.gz")]
            q, k, v = (load_layer(os.path.join(root, model, f"{layer}_{t}.npy.gz")) for t in "qkv")
            d = q.shape[-1]
            if d < 128:
                pad = lambda x: torch.nn.functional.pad(x, (0, 128 - d))  # noqa: E731
                q, k, v = pad(q), pad(k), pad(v)
                how = f"hd{d} zero-padded to 128"
            elif d > 128:
                cut = lambda x: torch.cat([x[..., :128], x[..., 128:]], dim=2).contiguous()  # noqa: E731
                q, k, v = cut(q), cut(k), cut(v)
                how = f"hd{d} cut into {d // 128} heads of 128"
            else:
                how = "hd128"
            scale = float(meta["softmax_scale"])
            (q8, qd), (k8, kd), (v8, vd) = quantize(q), quantize(k), quantize(v)
            deq = [x.float() * dd for x, dd in ((q8, qd), (k8, kd), (v8, vd))]
            ref, ref_lse = reference(*deq, scale, True)
            cols = min(d, 128)
            b, s, h, _ = q.shape
            results = {}
            out = torch.empty(b, s, h, 128, device="cuda", dtype=torch.bfloat16)
            lse = torch.empty(b, h, s, device="cuda", dtype=torch.float32)
            zy.fp8(0, q8, k8, v8, out, lse, True, (qd, kd, vd), scale)
            results["zyfa_fp8"] = (out.clone(), lse.clone())
            zy.fp8(1, q8, k8, v8, out, lse, True, (qd, kd, vd), scale)
            results["zyfa_exp2_fp8"] = (out.clone(), lse.clone())
            if fa3_fn is not None:
                hk = k.shape[2]
                dsc = [torch.full((b, hk), x, device="cuda", dtype=torch.float32) for x in (qd, kd, vd)]
                o, l_ = fa3_fn(q8, k8, v8, softmax_scale=scale, causal=True, q_descale=dsc[0], k_descale=dsc[1],
                               v_descale=dsc[2], return_attn_probs=True)
                results["fa3_fp8"] = (o, l_)
            torch.cuda.synchronize()
            for name, (o, l_) in results.items():
                e = (o[..., :cols].double() - ref[..., :cols])
                rel = (e.norm() / ref[..., :cols].norm()).item()
                mx = (e.abs().max() / ref[..., :cols].abs().max()).item()
                lse_err = (l_.double() - ref_lse).abs().max().item()
                rows.append(dict(model=model, layer=layer, mapping=how, impl=name, rel_frobenius=f"{rel:.5f}",
                                 max_rel=f"{mx:.5f}", lse_max_err=f"{lse_err:.5f}"))
                print(f"accuracy {model} {layer} ({how}) {name}: rel.Frobenius {rel:.5f} max {mx:.5f} "
                      f"lse {lse_err:.5f}", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--dims", nargs="*", default=["128,128", "192,128"])
    ap.add_argument("--seqlens", nargs="*", type=int, default=[2048, 4096, 8192, 16384])
    ap.add_argument("--activations", default="data/activations")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--no-bf16", action="store_true", help="FP8 implementations only")
    ap.add_argument("--baseline", help="a second build of bench/zyfa_capi.cu (e.g. of an earlier commit), timed in "
                                       "the same pass as impl zyfa_base")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    zy = ZyfaFp8(args.lib)
    args.base = ZyfaFp8(args.baseline) if args.baseline else None
    try:
        import fa3_fwd_interface as fa3
        fa3_fn = fa3.flash_attn_func
    except Exception as e:  # noqa: BLE001
        print("FA3 not importable:", str(e).splitlines()[0][:200])
        fa3_fn = None
    dev = torch.cuda.get_device_name(0)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    if os.path.isdir(args.activations):
        acc = accuracy(zy, fa3_fn, args.activations)
        with open(os.path.join(args.out, "accuracy.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(acc[0].keys()))
            w.writeheader()
            w.writerows(acc)
    if args.skip_speed:
        return 0
    sampler = Sampler(os.path.join(args.out, "smi.csv"))
    try:
        rows, power = speed(args, zy, fa3_fn, sampler, dev, date)
    finally:
        sampler.close()
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(args.out, "power.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(power[0].keys()))
        w.writeheader()
        w.writerows(power)
    return 0


if __name__ == "__main__":
    sys.exit(main())
