"""Shared lexing helpers for gfx950 assembly in LLVM AMDGPU assembler syntax.

Both :mod:`gfx950emu.asm` (the emulator's parser) and :mod:`gfx950hazard.isa` (the hazard checker's parser)
split instruction text the same way; :mod:`gfx950asm.lex` holds that one copy. Standard library only.
"""
