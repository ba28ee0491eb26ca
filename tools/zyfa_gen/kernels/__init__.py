"""Kernel modules of the generator. Each exposes ``CONFIGS`` (a list of configurations, each with a ``name``)
and ``build(cfg) -> KernelSpec``; ALL maps every generated kernel name to (module, config) for gen_asm.py and
the generated dispatch table."""
from . import attn_fwd_fp8, qk_block_fp8

ALL = {cfg.name: (mod, cfg) for mod in (qk_block_fp8, attn_fwd_fp8) for cfg in mod.CONFIGS}
