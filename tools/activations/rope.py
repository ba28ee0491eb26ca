"""Rotary position embedding (RoPE) in the NeoX / rotate-half form used by the captured models.

For a vector x of even length d at position p and base theta, with freq_i = theta^(-2i/d) (i = 0..d/2-1):

    y[i]       = x[i] cos(p freq_i) - x[i + d/2] sin(p freq_i)
    y[i + d/2] = x[i + d/2] cos(p freq_i) + x[i] sin(p freq_i)

Source: Su et al., "RoFormer" (arXiv:2104.09864), in the channel pairing of GPT-NeoX / Hugging Face ``rotate_half``.
Angles are computed in float64. Positions are 0..seqlen-1 along axis -3 of a [..., seqlen, heads, d] array.
"""
from __future__ import annotations

import numpy as np


def _cos_sin(seqlen: int, d: int, theta: float):
    if d % 2:
        raise ValueError(f"head_dim: RoPE needs an even size, got {d}")
    inv = float(theta) ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    ang = np.arange(seqlen, dtype=np.float64)[:, None] * inv[None, :]
    return np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]  # [seqlen, 1, d/2]


def apply_rope(x: np.ndarray, theta: float, inverse: bool = False) -> np.ndarray:
    """Rotate x [..., seqlen, heads, d] by +angle (or -angle when ``inverse``); returns x's dtype."""
    cos, sin = _cos_sin(x.shape[-3], x.shape[-1], theta)
    if inverse:
        sin = -sin
    d = x.shape[-1]
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    if x.dtype == np.float32:
        cos, sin = cos.astype(np.float32), sin.astype(np.float32)
    y = np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
    return y.astype(x.dtype, copy=False)


def unpermute_llama_qk(w: np.ndarray, heads: int) -> np.ndarray:
    """Undo llama.cpp's GGUF permutation of Llama q/k projection rows (``convert_hf_to_gguf.py``, ``permute``).

    The converter reorders the rows of W [heads * d, in] within each head from the Hugging Face order
    (half, i) -> (i, half), so that GGUF uses the interleaved RoPE pairing (2i, 2i+1). This restores the
    Hugging Face order, in which rotate-half RoPE (:func:`apply_rope`) pairs (i, i + d/2).
    """
    d = w.shape[0] // heads
    return np.ascontiguousarray(w.reshape(heads, d // 2, 2, -1).transpose(0, 2, 1, 3).reshape(w.shape))
