"""Kernel modules of the generator. Each exposes ``CONFIGS`` (a list of configurations, each with a ``name``)
and ``build(cfg) -> KernelSpec``; ALL maps every generated kernel name to (module, config) for gen_asm.py and
the generated dispatch table."""
from . import qk_block_fp8

ALL = {cfg.name: (qk_block_fp8, cfg) for cfg in qk_block_fp8.CONFIGS}
