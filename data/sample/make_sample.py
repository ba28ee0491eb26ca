#!/usr/bin/env python3
"""Writes zyfa's bundled SYNTHETIC sample: q/k/v for examples/prefill when no real activations are present.

NOT real model activations. Seeded Gaussian data (numpy PCG64, seed 20261129) shaped like one attention layer
of a small GQA model, with a few outlier channels as real LLM keys/queries have (a handful of head_dim channels
with much larger magnitude, e.g. those massive-activation / RoPE low-frequency channels), so FP8 per-tensor
quantization is stressed as on real data:
  q [1, 256, 4, 128], k [1, 256, 2, 128], v [1, 256, 2, 128]  (batch, seqlen, heads, head_dim; GQA 2:1)
  q, k ~ N(0, 1), then channels OUTLIER_CHANNELS of q and k multiplied by OUTLIER_GAIN; v ~ N(0, 1).
Stored as gzip-compressed .npy, dtype '<u2' holding bfloat16 bit patterns (round to nearest even from float32),
C order -- the format of data/activations/ (docs/file-format.md). gzip mtime is 0, so the bytes are reproducible:

    python3 data/sample/make_sample.py [OUTDIR]      # default: the directory of this script
"""
import gzip
import io
import pathlib
import sys

import numpy as np

SEED = 20261129
SEQLEN, NUM_HEADS, NUM_HEADS_K, HEAD_DIM = 256, 4, 2, 128
OUTLIER_CHANNELS = (3, 70, 127)
OUTLIER_GAIN = 8.0


def float_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns ('<u2'), round to nearest even (inputs here are finite)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")


def make() -> dict[str, np.ndarray]:
    rng = np.random.Generator(np.random.PCG64(SEED))
    q = rng.standard_normal((1, SEQLEN, NUM_HEADS, HEAD_DIM), dtype=np.float32)
    k = rng.standard_normal((1, SEQLEN, NUM_HEADS_K, HEAD_DIM), dtype=np.float32)
    v = rng.standard_normal((1, SEQLEN, NUM_HEADS_K, HEAD_DIM), dtype=np.float32)
    for c in OUTLIER_CHANNELS:
        q[..., c] *= OUTLIER_GAIN
        k[..., c] *= OUTLIER_GAIN
    return {"q": float_to_bf16_bits(q), "k": float_to_bf16_bits(k), "v": float_to_bf16_bits(v)}


def npy_gz_bytes(a: np.ndarray) -> bytes:
    raw = io.BytesIO()
    np.save(raw, a, allow_pickle=False)
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9, mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def main() -> None:
    outdir = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent
    outdir.mkdir(parents=True, exist_ok=True)
    for name, a in make().items():
        (outdir / f"{name}.npy.gz").write_bytes(npy_gz_bytes(a))
        print(f"{outdir / (name + '.npy.gz')}: {a.shape} <u2 (bf16 bits)")


if __name__ == "__main__":
    main()
