"""Kernel modules of the generator. Each exposes ``build() -> KernelSpec``; ALL lists them for gen_asm.py."""
from . import qk_block_fp8

ALL = {"zyfa_fp8_qk_block_32x128": qk_block_fp8}
