"""gfx950emu: a CPU emulator of gfx950 (CDNA4, MI355X) wave64 code, written in Python with numpy.

    from gfx950emu import Program, Machine
    prog = Program.from_asm_text(open("k.s").read())       # clang++-22 -S output or generator text
    m = Machine(prog)                                       # 160 KiB LDS per workgroup
    a = m.upload(np.arange(256, dtype=np.float32))         # global memory
    m.launch("kernel", grid=(1, 1, 1), block=(256, 1, 1), kernarg=struct.pack("<Q", a))
    out = m.download(a, np.float32, (256,))

See docs/emulator.md for what is modelled, the switches for unverified semantics (:class:`Semantics`) and
the limits.
"""
from .errors import EmuError
from .machine import KernelArg, Machine, Program, Wave
from .semantics import Semantics

__all__ = ["EmuError", "KernelArg", "Machine", "Program", "Semantics", "Wave"]
