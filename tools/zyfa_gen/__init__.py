"""zyfa_gen: the gfx950 assembly generator's foundation (instruction IR -> .s -> code object -> .inc).

Modules: :mod:`ir` (registers, instructions, checked MFMA helper), :mod:`kernel` (KernelSpec, kernel
arguments), :mod:`emit` (assembly text with .amdhsa_kernel descriptor, code object v5 metadata, hazard padding
by gfx950hazard), :mod:`build` (llvm-mc-22 + ld.lld-22), :mod:`inc` (C++ byte-array header), :mod:`kernels`
(kernel modules). Entry point: tools/gen_asm.py. Documentation: docs/generator.md.
"""
from . import build, emit, inc, ir, kernel

__all__ = ["build", "emit", "inc", "ir", "kernel", "generate"]


def generate(name: str):
    """(KernelSpec, asm text, code object bytes, inc text) for kernel `name` of zyfa_gen.kernels.ALL."""
    from .kernels import ALL
    if name not in ALL:
        raise KeyError(f"unknown kernel {name!r}; known: {sorted(ALL)}")
    mod, cfg = ALL[name]
    source = "tools/zyfa_gen/kernels/" + mod.__name__.rsplit(".", 1)[-1] + ".py"
    spec = mod.build(cfg)
    asm = emit.emit_kernel(spec, source)
    co = build.assemble_and_link(asm)
    return spec, asm, co, inc.render_inc(spec, asm, co, source)
