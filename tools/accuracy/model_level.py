"""Model-level FP8 accuracy: the packaged models run end to end on the CPU (tools/activations/gguf_model.py, float32
numpy) with EVERY attention layer computed by one recipe; next-token KL against the model with fp64 attention, and
perplexity.

Attention recipes (per layer, causal or Gemma 3's 512-key sliding window):
  fp64      float64 attention on the float32 q/k/v (the reference model);
  fp32      the float32 numpy attention of gguf_model.py (the model as captured);
  bf16      q/k/v rounded to bf16, float32 attention, output rounded to bf16 (zyfa's BF16 kernels' numerics);
  fp8_inputs  q/k/v quantized to e4m3fn as below, then fp64 attention on the dequantized values, output rounded
            to bf16: the part of every FP8 recipe's error that the input quantization alone causes;
  any Fp8Recipe name (zyfa, zyfa_exact, aiter_ck, aiter_asm_hd256, fa3, ...): q/k/v quantized per layer and per
            tensor to e4m3fn (descale amax/448), the C++ host specification (tools/accuracy/spec.py), output
            rounded to bf16;
  aiter     what AITER's FP8 dispatch runs for each layer (docs/fp8-peers.md): its asm kernel for head_dim 128 or
            256 with a power-of-two GQA ratio and no sliding window (aiter_asm_hd128 / aiter_asm_hd256), CK
            (aiter_ck) otherwise -- for Gemma 3: asm on the 3 global layers, CK on the 15 sliding-window ones.
Text: the capture text (docs/activations.md), tokenized by the model's GGUF tokenizer; --chunks sequences of
--seqlen tokens (chunk c = tokens [c*seqlen, (c+1)*seqlen) of the text, Gemma's BOS first in every chunk).
"""
from __future__ import annotations

import math
import time

import numpy as np

from . import spec

F32 = np.float32


def routed_aiter(cfg, layer: int) -> str:
    """The FP8 kernel AITER's dispatch picks for ``layer`` (aiter/ops/mha.py, can_impl_fmha_v3_fwd)."""
    g = cfg.n_heads // cfg.n_heads_kv
    pow2 = g & (g - 1) == 0
    if cfg.is_global(layer) and pow2 and cfg.head_dim == cfg.head_dim_v and cfg.head_dim in (128, 256):
        return f"aiter_asm_hd{cfg.head_dim}"
    return "aiter_ck"


def attention(recipe: str, cfg, layer: int, q, k, v, window):
    """One layer's attention [S, H, DV] float32 under ``recipe`` (see the module docstring)."""
    w = window or 0
    if recipe == "fp64":
        return spec.attention_ref(q, k, v, cfg.softmax_scale, w)[0].astype(F32)
    if recipe == "fp32":
        return spec.attention_ref(q, k, v, cfg.softmax_scale, w, dtype=F32)[0]
    if recipe == "bf16":
        o = spec.attention_ref(spec.bf16(q), spec.bf16(k), spec.bf16(v), cfg.softmax_scale, w, dtype=F32)[0]
        return spec.bf16(o)
    if recipe == "fp8_inputs":  # q/k/v quantized as for every FP8 recipe, then exact (fp64) attention
        deq = [a.astype(F32) * d for a, d in (spec.quantize(q), spec.quantize(k), spec.quantize(v))]
        return spec.bf16(spec.attention_ref(*deq, cfg.softmax_scale, w)[0])
    if recipe == "aiter":
        recipe = routed_aiter(cfg, layer)
    (q8, qd), (k8, kd), (v8, vd) = spec.quantize(q), spec.quantize(k), spec.quantize(v)
    o, _ = spec.fp8_attention(recipe, q8, k8, v8, qd, kd, vd, cfg.softmax_scale, window=w)
    return spec.bf16(o)


def final_hidden(model, ids, recipe: str) -> np.ndarray:
    """The float32 forward pass of gguf_model.GGUFModel.forward (same formulas) with every attention layer
    computed by ``recipe``; returns the normalised final hidden states [S, hidden]."""
    from activations.rope import apply_rope

    c, w = model.config, model.w
    s = len(ids)
    ids = np.asarray(ids)
    x = w["token_embd.weight"][ids].astype(F32)
    if c.arch == "gemma3":
        x = x * F32(math.sqrt(c.hidden))
    for i in range(c.n_layers):
        p = f"blk.{i}."
        h = model._rms(x, w[p + "attn_norm.weight"], c.eps)
        q = (h @ w[p + "attn_q.weight"].T).reshape(s, c.n_heads, c.head_dim)
        k = (h @ w[p + "attn_k.weight"].T).reshape(s, c.n_heads_kv, c.head_dim)
        v = (h @ w[p + "attn_v.weight"].T).reshape(s, c.n_heads_kv, c.head_dim_v)
        if c.arch == "gemma3":
            q = model._rms(q, w[p + "attn_q_norm.weight"], c.eps)
            k = model._rms(k, w[p + "attn_k_norm.weight"], c.eps)
        theta = c.rope_theta_of(i)
        q, k = apply_rope(q, theta), apply_rope(k, theta)
        a = attention(recipe, c, i, q, k, v, None if c.is_global(i) else c.sliding_window)
        o = a.reshape(s, -1) @ w[p + "attn_output.weight"].T
        if c.arch == "gemma3":
            x = x + model._rms(o, w[p + "post_attention_norm.weight"], c.eps)
            h = model._rms(x, w[p + "ffn_norm.weight"], c.eps)
            gate = h @ w[p + "ffn_gate.weight"].T
            gate = 0.5 * gate * (1.0 + np.tanh(F32(math.sqrt(2.0 / math.pi)) * (gate + F32(0.044715) * gate ** 3)))
            f = (gate * (h @ w[p + "ffn_up.weight"].T)) @ w[p + "ffn_down.weight"].T
            x = x + model._rms(f, w[p + "post_ffw_norm.weight"], c.eps)
        else:
            x = x + o
            h = model._rms(x, w[p + "ffn_norm.weight"], c.eps)
            gate = h @ w[p + "ffn_gate.weight"].T
            gate = gate / (1.0 + np.exp(-gate))
            x = x + (gate * (h @ w[p + "ffn_up.weight"].T)) @ w[p + "ffn_down.weight"].T
    return model._rms(x, w["output_norm.weight"], c.eps)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax in float64."""
    z = np.asarray(logits, np.float64)
    m = z.max(axis=1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=1, keepdims=True))


def kl_and_nll(x_ref, x, wout, ids, chunk: int = 256):
    """Per position t < S-1: KL(p_ref || p) of the next-token distributions (nats) and -log p(ids[t+1]).
    x_ref, x: final hidden states [S, hidden]; wout [vocab, hidden]."""
    s = len(ids)
    kl = np.empty(s - 1)
    nll = np.empty(s - 1)
    for r0 in range(0, s - 1, chunk):
        r1 = min(s - 1, r0 + chunk)
        lp_ref = log_softmax(x_ref[r0:r1] @ wout.T)
        lp = log_softmax(x[r0:r1] @ wout.T)
        kl[r0:r1] = (np.exp(lp_ref) * (lp_ref - lp)).sum(axis=1)
        nll[r0:r1] = -lp[np.arange(r1 - r0), np.asarray(ids[r0 + 1:r1 + 1])]
    return kl, nll


def run(model, ids_chunks, recipes, log=print):
    """Runs every recipe over every chunk; returns {recipe: dict(mean_kl, max_kl, p99_kl, ppl, loss, seconds)}."""
    wout = model.w.get("output.weight", model.w["token_embd.weight"])
    refs = [final_hidden(model, ids, "fp64") for ids in ids_chunks]
    res = {}
    for r in recipes:
        t0 = time.time()
        kls, nlls = [], []
        for ids, xr in zip(ids_chunks, refs):
            x = xr if r == "fp64" else final_hidden(model, ids, r)
            kl, nll = kl_and_nll(xr, x, wout, ids)
            kls.append(kl)
            nlls.append(nll)
        kl, nll = np.concatenate(kls), np.concatenate(nlls)
        res[r] = dict(mean_kl=float(kl.mean()), p99_kl=float(np.quantile(kl, 0.99)), max_kl=float(kl.max()),
                      loss=float(nll.mean()), ppl=float(math.exp(nll.mean())), tokens=int(kl.size),
                      seconds=round(time.time() - t0, 1))
        log(f"  {r}: {res[r]}")
    return res
