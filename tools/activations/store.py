"""On-disk format of captured activations (shared with the C++ example reader; keep in sync with docs/activations.md).

A capture directory ``data/activations/<model-short-name>/`` holds, for each captured layer NN (two digits,
zero-based layer index in the model):

- ``layerNN_q.npy.gz``   : q   [1, seqlen, num_heads,   head_dim]   post-RoPE, as the attention kernel receives it
- ``layerNN_k.npy.gz``   : k   [1, seqlen, num_heads_k, head_dim]   post-RoPE (GQA kept: num_heads_k as in the model)
- ``layerNN_v.npy.gz``   : v   [1, seqlen, num_heads_k, head_dim_v]
- ``layerNN_out.npy.gz`` : out [1, seqlen, num_heads,   head_dim_v] the model's own attention output (before o_proj)

Each file is a gzip-compressed NumPy ``.npy`` (format 1.0) whose dtype is ``'<u2'`` holding **bfloat16 bit
patterns** (round to nearest even from the model's float32 values), C order, BSHD. ``meta.json`` beside them
records the model, package, licence, text source, shapes, softmax_scale, causal, RoPE details and checks.

Gzip is written with mtime 0 and no file name, so the same array gives the same bytes (reproducible commits).
"""
from __future__ import annotations

import gzip
import io
import json
import pathlib

import ml_dtypes
import numpy as np

#: Names of the four tensors saved per layer, in file-name order.
TENSORS = ("q", "k", "v", "out")

#: Version tag written into meta.json["format"].
FORMAT = "zyfa-activations-v1"


def to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """Round float32/float64 values to bfloat16 (round to nearest even, via ml_dtypes) and return the bit patterns.

    Args:
        x: any-shape float array.
    Returns:
        uint16 array (little-endian '<u2'), same shape, C-contiguous.
    """
    b = np.ascontiguousarray(np.asarray(x, dtype=np.float32)).astype(ml_dtypes.bfloat16)
    return b.view(np.uint16).astype("<u2", copy=False)


def from_bf16_bits(bits: np.ndarray, dtype=np.float32) -> np.ndarray:
    """Convert an array of bfloat16 bit patterns ('<u2') to float32 (exact) or float64 (exact).

    Raises:
        TypeError: if ``bits`` is not a 16-bit unsigned integer array.
    """
    bits = np.asarray(bits)
    if bits.dtype != np.dtype("<u2"):
        raise TypeError(f"bits: expected dtype '<u2' (bf16 bit patterns), got {bits.dtype}")
    return bits.view(ml_dtypes.bfloat16).astype(dtype)


def layer_file(directory: str | pathlib.Path, layer: int, tensor: str) -> pathlib.Path:
    """Path of ``layerNN_<tensor>.npy.gz`` in ``directory`` (``tensor`` in TENSORS; ``layer`` >= 0)."""
    if tensor not in TENSORS:
        raise ValueError(f"tensor: expected one of {TENSORS}, got {tensor!r}")
    if layer < 0 or layer > 99:
        raise ValueError(f"layer: expected 0..99, got {layer}")
    return pathlib.Path(directory) / f"layer{layer:02d}_{tensor}.npy.gz"


def save_bf16_npy_gz(path: str | pathlib.Path, x: np.ndarray) -> int:
    """Write ``x`` rounded to bf16 as a gzip-compressed .npy of '<u2' bit patterns. Returns the file size in bytes."""
    bits = to_bf16_bits(x)
    raw = io.BytesIO()
    np.save(raw, bits, allow_pickle=False)
    path = pathlib.Path(path)
    with open(path, "wb") as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, compresslevel=9, mtime=0) as gz:
            gz.write(raw.getvalue())
    return path.stat().st_size


def load_bf16_npy_gz(path: str | pathlib.Path, dtype=np.float32) -> np.ndarray:
    """Read a file written by :func:`save_bf16_npy_gz` and return its values as ``dtype`` (float32 or float64).

    Raises:
        FileNotFoundError: the file does not exist.
        TypeError: the stored array is not '<u2'.
    """
    with gzip.open(path, "rb") as gz:
        bits = np.load(io.BytesIO(gz.read()), allow_pickle=False)
    return from_bf16_bits(bits, dtype)


def load_meta(directory: str | pathlib.Path) -> dict:
    """Read ``meta.json`` of a capture directory."""
    with open(pathlib.Path(directory) / "meta.json", encoding="utf-8") as f:
        return json.load(f)


def load_layer(directory: str | pathlib.Path, layer: int, dtype=np.float32) -> dict:
    """Load q, k, v, out of one layer as a dict of arrays [1, seqlen, heads, head_dim] in ``dtype``."""
    return {t: load_bf16_npy_gz(layer_file(directory, layer, t), dtype) for t in TENSORS}
