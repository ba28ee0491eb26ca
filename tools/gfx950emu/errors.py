"""Errors raised by the emulator."""


class EmuError(Exception):
    """Any emulation failure: unknown instruction or operand, out-of-bounds memory access, a wave reading a
    register whose load it has not waited for, an instruction limit reached, ... The message names the kernel,
    the source line and the instruction text when known."""
