"""fp64 reference attention used to check captured activations.

out[b, i, h, :] = sum_j softmax_j(softmax_scale * q[b, i, h, :] . k[b, j, h // (num_heads / num_heads_k), :]) v[b, j, ...]

with the bottom-right causal mask of FlashAttention >= 2.1 (query i sees keys j <= i + seqlen_k - seqlen_q) and an
optional sliding window (query i sees keys with (i + seqlen_k - seqlen_q) - j < window). Softmax in natural log
domain. A row that sees no key gives zeros.
"""
from __future__ import annotations

import numpy as np


def attention_fp64(q: np.ndarray, k: np.ndarray, v: np.ndarray, softmax_scale: float, causal: bool = True,
                   rows: np.ndarray | None = None, heads: list[int] | None = None,
                   window: int | None = None) -> np.ndarray:
    """Exact attention in float64.

    Args:
        q: [b, seqlen_q, num_heads, head_dim_qk]; k: [b, seqlen_k, num_heads_k, head_dim_qk];
        v: [b, seqlen_k, num_heads_k, head_dim_v]; any float dtype (converted to float64).
        softmax_scale: multiplies q.k before the softmax (natural-log domain).
        causal: bottom-right causal mask.
        rows: optional query-row indices to compute (default: all rows).
        heads: optional query-head indices to compute (default: all heads).
        window: optional sliding-window length in keys (None = unlimited).
    Returns:
        [b, len(rows), len(heads), head_dim_v] float64.
    Raises:
        ValueError: on inconsistent shapes (message names the argument).
    """
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError("q, k, v: expected 4-D BSHD arrays")
    b, sq, hq, d = q.shape
    _, sk, hk, dk = k.shape
    if k.shape[0] != b or v.shape[0] != b:
        raise ValueError("k, v: batch differs from q")
    if dk != d:
        raise ValueError(f"k: head_dim {dk} differs from q's {d}")
    if v.shape[1] != sk or v.shape[2] != hk:
        raise ValueError("v: seqlen_k/num_heads_k differ from k's")
    if hk == 0 or hq % hk != 0:
        raise ValueError(f"num_heads ({hq}) must be a multiple of num_heads_k ({hk})")
    group = hq // hk
    rows = np.arange(sq) if rows is None else np.asarray(rows)
    heads = list(range(hq)) if heads is None else list(heads)
    out = np.zeros((b, len(rows), len(heads), v.shape[3]), dtype=np.float64)
    kpos = np.arange(sk)
    qpos = rows + (sk - sq)  # bottom-right alignment
    allowed = np.ones((len(rows), sk), dtype=bool)
    if causal:
        allowed &= kpos[None, :] <= qpos[:, None]
    if window is not None:
        allowed &= (qpos[:, None] - kpos[None, :]) < window
    for bi in range(b):
        for hi, h in enumerate(heads):
            qh = q[bi, rows, h, :].astype(np.float64)
            kh = k[bi, :, h // group, :].astype(np.float64)
            vh = v[bi, :, h // group, :].astype(np.float64)
            s = (qh @ kh.T) * float(softmax_scale)
            s = np.where(allowed, s, -np.inf)
            m = s.max(axis=1, keepdims=True)
            m = np.where(np.isfinite(m), m, 0.0)
            p = np.exp(s - m)  # exp(-inf) = 0 for masked keys
            l = p.sum(axis=1, keepdims=True)
            out[bi, :, hi, :] = np.where(l > 0, (p @ vh) / np.where(l > 0, l, 1.0), 0.0)
    return out


def rel_fro_error(x: np.ndarray, ref: np.ndarray) -> float:
    """Relative Frobenius error ||x - ref||_F / ||ref||_F (float64)."""
    x = np.asarray(x, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    return float(np.linalg.norm(x - ref) / np.linalg.norm(ref))
