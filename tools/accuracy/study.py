"""FP8 accuracy studies on zyfa's C++ host specification; results are the numbers of docs/fp8-accuracy.md.

    .venv/bin/python tools/accuracy/study.py layers      # every recipe on the committed real layers (README table)
    .venv/bin/python tools/accuracy/study.py blockcode   # Lean P's block max code 120..124, real and synthetic rows
    .venv/bin/python tools/accuracy/study.py lse         # zyfa's LSE: mean_bias / corrected / exact rules
    .venv/bin/python tools/accuracy/study.py splitk      # split-K partials merged with each recipe's own LSE
    .venv/bin/python tools/accuracy/study.py model       # end-to-end KL / perplexity (needs the model packages)
Each prints Markdown and writes docs/accuracy/<study>.json (--out to change). --rows N keeps the first N tokens of
each layer (the CI subset in tests/python/test_accuracy_study.py uses this).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time

# One BLAS thread: the C++ specification runs its own threads, and OpenBLAS threads on a loaded 2-core machine
# made the numpy attention ~10x slower (measured).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from accuracy import spec  # noqa: E402
from activations import store  # noqa: E402

ROOT = spec.ROOT
LAYERS = {"smollm2-135m": "SmolLM2-135M layer 15 (hd 64, 9/3 heads)", "gemma3-270m": "Gemma 3 270M layer 11 (hd 256, 4/1 heads)"}
#: FlashAttention-3's FP8 kernel measured on an H200 on the same quantized layers (docs/design/DESIGN.md, "FP8
#: accuracy facts", 2026-11-30): relative Frobenius error vs fp64 on the dequantized inputs.
FA3_H200 = {"smollm2-135m": 1.24e-2, "gemma3-270m": 1.16e-2}
#: The kernel each peer runs for the committed layers (AITER's dispatch; FA3 has one FP8 kernel).
AITER_ROUTE = {"smollm2-135m": "aiter_ck", "gemma3-270m": "aiter_asm_hd256"}


def load(name: str, rows: int | None):
    d = ROOT / "data" / "activations" / name
    meta = store.load_meta(d)
    lay = store.load_layer(d, meta["layers"][0]["layer"])
    q, k, v = (lay[n][0] for n in "qkv")
    if rows:
        q, k, v = q[:rows], k[:rows], v[:rows]
    return q, k, v, float(meta["softmax_scale"])


def prepare(q, k, v, scale):
    (q8, qd), (k8, kd), (v8, vd) = spec.quantize(q), spec.quantize(k), spec.quantize(v)
    deq = [a.astype(np.float32) * np.float32(d) for a, d in ((q8, qd), (k8, kd), (v8, vd))]
    ref, lse_ref = spec.attention_ref(*deq, scale)
    return dict(q8=q8, k8=k8, v8=v8, qd=qd, kd=kd, vd=vd, scale=scale, ref=ref, lse_ref=lse_ref, deq=deq)


def errors(pb, recipe, **kw):
    out, lse = spec.fp8_attention(recipe, pb["q8"], pb["k8"], pb["v8"], pb["qd"], pb["kd"], pb["vd"], pb["scale"], **kw)
    dl = lse.astype(np.float64) - pb["lse_ref"]
    return dict(rel_fro=spec.rel_fro(spec.bf16(out), pb["ref"]), lse_mean=float(dl.mean()),
                lse_mean_abs=float(np.abs(dl).mean()), lse_max_abs=float(np.abs(dl).max())), out, lse


def synthetic(kind: str, seqlen: int, d: int = 128, h: int = 4, hk: int = 2, seed: int = 0):
    """Gaussian rows ("gaussian"), or with an attention sink on key 0 ("sink"), or peaky (q x3, "peaky")."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((seqlen, h, d)).astype(np.float32)
    k = rng.standard_normal((seqlen, hk, d)).astype(np.float32)
    v = rng.standard_normal((seqlen, hk, d)).astype(np.float32)
    if kind == "peaky":
        q *= 3
    if kind == "sink":
        u = np.where(np.arange(d) % 2 == 1, 1.0, -1.0).astype(np.float32)
        q += u
        k[0] += 0.7 * u
    return q, k, v, 1.0 / np.sqrt(d)


def study_layers(a):
    res = {}
    print("| layer | recipe | rel. Frobenius | LSE mean err (nats) | LSE max abs err |\n| --- | --- | --- | --- | --- |")
    for name in LAYERS:
        pb = prepare(*load(name, a.rows))
        res[name] = {}
        for r in spec.RECIPES:
            e, _, _ = errors(pb, r)
            res[name][r] = e
            print(f"| {name} | {r} | {e['rel_fro']:.3e} | {e['lse_mean']:+.2e} | {e['lse_max_abs']:.2e} |", flush=True)
        res[name]["fa3_h200_measured"] = FA3_H200[name] if not a.rows else None
        res[name]["aiter_route"] = AITER_ROUTE[name]
    print("\n| layer | recipe | rel. Frobenius | / AITER (its kernel) | / FA3 model | / FA3 on H200 | / scaled_p |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, r in res.items():
        ai, f3, sp, h2 = r[AITER_ROUTE[name]]["rel_fro"], r["fa3"]["rel_fro"], r["scaled_p"]["rel_fro"], r["fa3_h200_measured"]
        for rc in ("zyfa", "zyfa_v2", "zyfa_exact", AITER_ROUTE[name], "fa3"):
            e = r[rc]["rel_fro"]
            print(f"| {LAYERS[name]} | {rc} | {e:.2e} | {e / ai:.2f} | {e / f3:.2f} | {f'{e / h2:.2f}' if h2 else '-'} | "
                  f"{e / sp:.2f} |")
        if h2:
            print(f"| {LAYERS[name]} | FA3 FP8 kernel on an H200 (measured) | {h2:.2e} | {h2 / ai:.2f} | {h2 / f3:.2f} | 1.00 | "
                  f"{h2 / sp:.2f} |")
    return res


def study_blockcode(a):
    codes = [120, 121, 122, 123, 124]
    cases = [(n, lambda n=n: load(n, a.rows)) for n in LAYERS]
    sl = a.rows or 1024
    cases += [(f"synthetic {k} (seqlen {sl}, hd 128)", lambda k=k: synthetic(k, sl)) for k in ("gaussian", "peaky", "sink")]
    res = {}
    print("| input | " + " | ".join(f"code {c}" for c in codes) + " | best |\n|" + " --- |" * (len(codes) + 2))
    for name, get in cases:
        pb = prepare(*get())
        for rc, base in (("zyfa", 1), ("zyfa_v2", 0)):
            errs = [errors(pb, rc, block_max_code=c)[0]["rel_fro"] for c in codes]
            res[f"{name}/{rc}"] = dict(zip(map(str, codes), errs))
            print(f"| {name}, {rc} | " + " | ".join(f"{e:.3e} ({e / errs[base]:.2f}x)" for e in errs)
                  + f" | {codes[int(np.argmin(errs))]} |", flush=True)
    return res


def study_lse(a):
    sl = a.rows or 1024
    cases = [(n, lambda n=n: load(n, a.rows)) for n in LAYERS]
    cases += [(f"synthetic {k} (seqlen {sl}, hd 128)", lambda k=k: synthetic(k, sl)) for k in ("gaussian", "peaky", "sink")]
    res = {}
    print("| input | rule | mean err (nats) | mean abs err | max abs err |\n| --- | --- | --- | --- | --- |")
    for name, get in cases:
        pb = prepare(*get())
        res[name] = {}
        for mode in ("mean_bias", "corrected", "exact"):
            e = errors(pb, "zyfa", lse_mode=mode)[0]
            res[name][f"zyfa/{mode}"] = e
            print(f"| {name} | zyfa, {mode} | {e['lse_mean']:+.2e} | {e['lse_mean_abs']:.2e} | {e['lse_max_abs']:.2e} |", flush=True)
        for r, mode in (("zyfa_v2", "corrected"), ("zyfa_v2", "exact"), ("zyfa_exact", "corrected"), ("fa3", "corrected")):
            e = errors(pb, r, lse_mode=mode)[0]
            r = r if r != "zyfa_v2" else f"zyfa_v2, {'plain' if mode == 'corrected' else 'exact'}"
            res[name][r] = e
            print(f"| {name} | {r} | {e['lse_mean']:+.2e} | {e['lse_mean_abs']:.2e} | {e['lse_max_abs']:.2e} |", flush=True)
    return res


def study_splitk(a):
    res = {}
    print("| layer | recipe, LSE rule | splits | merged rel. Frobenius | single pass | merged LSE max abs err |\n| --- | --- | --- | --- | --- | --- |")
    for name in LAYERS:
        pb = prepare(*load(name, a.rows))
        S = pb["q8"].shape[0]
        res[name] = {}
        for recipe, mode in (("zyfa", "mean_bias"), ("zyfa", "corrected"), ("zyfa", "exact"), ("zyfa_v2", "corrected"),
                             ("zyfa_v2", "exact"), ("fa3", "corrected")):
            single = errors(pb, recipe, lse_mode=mode)[0]["rel_fro"]
            for n in (2, 4):
                cuts = [round(c * S / n / 256) * 256 for c in range(n)] + [S]  # split boundaries on 256 keys
                outs, lses = [], []
                for c in range(n):
                    o, l = spec.fp8_attention(recipe, pb["q8"], pb["k8"], pb["v8"], pb["qd"], pb["kd"], pb["vd"],
                                              pb["scale"], key_lo=cuts[c], key_hi=cuts[c + 1], lse_mode=mode)
                    outs.append(o.astype(np.float32))
                    lses.append(l.astype(np.float32))
                # the combine step of split-K kernels, in fp32: weights exp(lse_c - logsumexp_c lse_c)
                L = np.stack(lses)  # [n, H, S]
                m = L.max(axis=0)
                w = np.exp(L - m)
                tot = m + np.log(w.sum(axis=0))
                wt = np.exp(L - tot)  # [n, H, S]; 0 for empty partials (lse -inf)
                merged = sum(wt[c].T[:, :, None] * outs[c] for c in range(n)).astype(np.float32)
                e = spec.rel_fro(spec.bf16(merged), pb["ref"])
                le = float(np.abs(tot - pb["lse_ref"]).max())
                res[name][f"{recipe}/{mode}/{n}"] = dict(merged=e, single=single, lse_max_abs=le)
                print(f"| {name} | {recipe}, {mode} | {n} | {e:.3e} | {single:.3e} | {le:.2e} |", flush=True)
    return res


def study_model(a):
    sys.path.insert(0, str(ROOT / "tools"))
    from accuracy import model_level
    from activations import capture, packages
    from activations.gguf_model import GGUFModel

    text, _ = capture.load_text()
    res = {}
    for short in a.models.split(","):
        path = packages.locate_model(packages.MODELS[short], ROOT / "data" / "cache", install=False)
        model = GGUFModel(str(path))
        ids = model.tokenizer.encode(text)
        bos = ids[:1] if model.tokenizer.add_bos else []
        body = ids[len(bos):]
        L = a.seqlen - len(bos)
        chunks = [bos + body[c * L:(c + 1) * L] for c in range(a.chunks)]
        recipes = a.recipes.split(",")
        print(f"[{short}] {a.chunks} x {a.seqlen} tokens, recipes {recipes}", flush=True)
        res[short] = model_level.run(model, chunks, recipes)
    print("\n| model | attention | mean KL vs fp64 (nats) | p99 KL | perplexity | loss (nats) |\n| --- | --- | --- | --- | --- | --- |")
    for short, rr in res.items():
        for r, e in rr.items():
            print(f"| {short} | {r} | {e['mean_kl']:.3e} | {e['p99_kl']:.2e} | {e['ppl']:.4f} | {e['loss']:.5f} |")
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("study", choices=["layers", "blockcode", "lse", "splitk", "model"])
    ap.add_argument("--rows", type=int, default=None, help="keep the first N tokens of each layer (CI subset)")
    ap.add_argument("--out", default=None, help="JSON output (default docs/accuracy/<study>.json; '-' for none)")
    ap.add_argument("--models", default="smollm2-135m,gemma3-270m")
    ap.add_argument("--seqlen", type=int, default=1024)
    ap.add_argument("--chunks", type=int, default=2)
    ap.add_argument("--recipes", default="fp64,bf16,fp8_inputs,zyfa,zyfa_v2,zyfa_exact,aiter,fa3")
    a = ap.parse_args(argv)
    t0 = time.time()
    res = globals()[f"study_{a.study}"](a)
    res["_command"] = "python3 tools/accuracy/study.py " + " ".join(argv if argv is not None else sys.argv[1:])
    res["_seconds"] = round(time.time() - t0, 1)
    out = a.out or str(ROOT / "docs" / "accuracy" / f"{a.study}.json")
    if out != "-":
        pathlib.Path(out).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(out).write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
