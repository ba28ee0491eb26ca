"""Independent cross-check of the capture against llama.cpp (optional; not needed by the capture or the tests).

Runs the same GGUF with llama-cpp-python (an independent C++ implementation) and reports
1. whether llama.cpp's tokenizer gives the same token ids as tokenizer.py on the capture text, and
2. llama.cpp's next-token loss/perplexity on the first --seqlen of our token ids (the source of EXPECTED_PPL).

    python3 -m venv /tmp/llvenv && /tmp/llvenv/bin/pip install llama-cpp-python==0.3.36 numpy==2.1.3 \
        ml_dtypes==0.5.1 regex==2026.5.9 gguf==0.19.0      # builds llama.cpp from source (~10 min on 2 cores)
    PYTHONPATH=tools /tmp/llvenv/bin/python -m activations.crosscheck_llamacpp --seqlen 2048
"""
from __future__ import annotations

import argparse
import math
import pathlib

import numpy as np

from . import capture, packages


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="all")
    ap.add_argument("--seqlen", type=int, default=2048)
    ap.add_argument("--cache", default="data/cache")
    a = ap.parse_args()
    from llama_cpp import Llama  # noqa: import here so --help works without it

    from .gguf_model import GGUFModel

    models = sorted(packages.MODELS) if a.model == "all" else [a.model]
    text, _ = capture.load_text()
    for short in models:
        path = packages.locate_model(packages.MODELS[short], pathlib.Path(a.cache), install=False)
        ours = GGUFModel(str(path)).tokenizer
        ids = ours.encode(text)
        llm = Llama(model_path=str(path), n_ctx=a.seqlen, n_batch=512, n_ubatch=512, logits_all=True,
                    n_threads=2, verbose=False)
        theirs = llm.tokenize(text.encode("utf-8"), add_bos=ours.add_bos, special=False)
        n = min(len(ids), len(theirs))
        first_diff = next((i for i in range(n) if ids[i] != theirs[i]), None)
        print(f"[{short}] tokens: ours {len(ids)}, llama.cpp {len(theirs)}, identical: {ids == theirs}, "
              f"first difference at {first_diff}")
        seq = ids[: a.seqlen]
        llm.reset()
        llm.eval(seq)
        nll = np.empty(len(seq) - 1)
        for r0 in range(0, len(seq) - 1, 256):  # chunked: [n_ctx, n_vocab] in float64 would not fit in memory
            r1 = min(len(seq) - 1, r0 + 256)
            lg = np.asarray(llm.scores[r0:r1], dtype=np.float64)
            m = lg.max(axis=1, keepdims=True)
            lse = m[:, 0] + np.log(np.exp(lg - m).sum(axis=1))
            nll[r0:r1] = lse - lg[np.arange(r1 - r0), seq[r0 + 1:r1 + 1]]
        print(f"[{short}] llama.cpp on our {len(seq)} token ids: loss {nll.mean():.4f} nats, "
              f"perplexity {math.exp(nll.mean()):.3f}")


if __name__ == "__main__":
    main()
