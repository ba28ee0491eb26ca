"""FP8 accuracy studies on zyfa's host specification (docs/fp8-accuracy.md): peers per real layer, the block-max
code, zyfa's LSE, split-K merging, and model-level KL/perplexity. ``python3 tools/accuracy/study.py --help``."""
