"""Byte-addressed global memory and LDS for the emulator, with vectorised per-lane gathers and scatters."""
from __future__ import annotations

import numpy as np

from .errors import EmuError

GLOBAL_BASE = 0x1_0000_0000  # above 4 GiB, so that 32-bit address truncation bugs fault


class GlobalMemory:
    """Global memory: one growing byte array at virtual address ``GLOBAL_BASE``. ``alloc`` hands out
    256-byte-aligned blocks separated by unallocated gaps (at least ``REDZONE`` bytes); every access must lie
    inside one allocated block, else :class:`EmuError` (the hardware might silently read a neighbour)."""

    REDZONE = 256

    def __init__(self):
        self.buf = np.zeros(1 << 20, np.uint8)
        self.top = 0  # bytes in use
        self.blocks: list[tuple[int, int]] = []  # (offset, size), increasing offsets
        self._starts = np.zeros(0, np.int64)
        self._ends = np.zeros(0, np.int64)

    def alloc(self, nbytes: int, align: int = 256) -> int:
        """Reserves ``nbytes`` (zero-filled) and returns its device address."""
        if nbytes < 0:
            raise ValueError("alloc: nbytes must be >= 0")
        off = (self.top + (self.REDZONE if self.blocks else 0) + align - 1) // align * align
        end = off + max(nbytes, 1)
        if end > self.buf.size:
            n = self.buf.size
            while n < end:
                n *= 2
            nb = np.zeros(n, np.uint8)
            nb[: self.top] = self.buf[: self.top]
            self.buf = nb
        self.top = end
        self.blocks.append((off, nbytes))
        self._starts = np.array([b[0] for b in self.blocks], np.int64)
        self._ends = np.array([b[0] + b[1] for b in self.blocks], np.int64)
        return GLOBAL_BASE + off

    def _offsets(self, addr, nbytes: int, what: str) -> np.ndarray:
        off = np.asarray(addr, np.uint64).astype(np.int64) - GLOBAL_BASE
        if off.size:
            flat = off.ravel()
            blk = np.searchsorted(self._starts, flat, side="right") - 1
            bad = (blk < 0) | (flat + nbytes > self._ends[np.maximum(blk, 0)]) if self.blocks else \
                np.ones(flat.shape, bool)
            if bad.any():
                a = int(flat[bad][0]) + GLOBAL_BASE
                raise EmuError(f"{what}: global address 0x{a:x} (+{nbytes} bytes) is outside every allocation")
        return off

    def write(self, addr: int, data) -> None:
        """Copies bytes (bytes, bytearray or any numpy array, taken as its raw bytes) to ``addr``."""
        b = np.frombuffer(bytes(data), np.uint8) if isinstance(data, (bytes, bytearray)) else \
            np.ascontiguousarray(data).view(np.uint8).ravel()
        off = int(self._offsets(addr, b.size, "write"))
        self.buf[off: off + b.size] = b

    def read(self, addr: int, nbytes: int) -> bytes:
        off = int(self._offsets(addr, nbytes, "read"))
        return self.buf[off: off + nbytes].tobytes()

    def gather(self, addr: np.ndarray, nbytes: int, what: str) -> np.ndarray:
        """Per-lane loads: addr (n,) -> (n, nbytes) uint8."""
        off = self._offsets(addr, nbytes, what)
        return self.buf[off[:, None] + np.arange(nbytes)]

    def scatter(self, addr: np.ndarray, data: np.ndarray, what: str) -> None:
        """Per-lane stores: addr (n,), data (n, nbytes) uint8; lanes in order (a later lane wins)."""
        nbytes = data.shape[1]
        off = self._offsets(addr, nbytes, what)
        self.buf[off[:, None] + np.arange(nbytes)] = data


class LocalMemory:
    """LDS of one workgroup: ``size`` bytes (gfx950: 160 KiB per workgroup at most). Accesses past the
    workgroup's allocation (``limit``) raise :class:`EmuError` (the hardware would return 0 / drop).

    Race check (``race_check``, default on): waves run one at a time between barriers, which hides races.
    Each byte remembers the last wave that wrote it and the barrier epoch, and which waves read it in the
    current epoch; a wave reading or writing a byte another wave wrote in the same epoch, or writing a byte
    another wave read in the same epoch, is an error. Epochs advance when a barrier releases the waves; LDS
    stores a wave has not yet retired with ``s_waitcnt lgkmcnt`` at that point count as written in the new
    epoch too (s_barrier does not wait for memory on gfx950, gfx950-facts §3)."""

    def __init__(self, size: int):
        self.buf = np.zeros(size, np.uint8)
        self.limit = size
        self.pend = np.zeros(size, np.uint16)  # per byte: LDS-DMA writes not yet retired by s_waitcnt vmcnt
        self.npend = 0
        self.race_check = True
        self.epoch = 0
        self.w_wave = np.full(size, -1, np.int16)
        self.w_epoch = np.full(size, -1, np.int32)
        self.r_mask = np.zeros(size, np.uint32)
        self.r_epoch = np.full(size, -1, np.int32)

    def _race(self, idx: np.ndarray, wave: int, write: bool, what: str):
        if not self.race_check or wave < 0:
            return
        e = self.epoch
        ww = self.w_wave[idx]
        bad = (self.w_epoch[idx] == e) & (ww != wave) & (ww >= 0)
        if bad.any():
            j = int(np.argmax(bad))
            raise EmuError(f"{what}: LDS race: wave {wave} {'writes' if write else 'reads'} byte {int(idx[j])}, "
                           f"which wave {int(ww[j])} wrote with no s_barrier (after its s_waitcnt) in between")
        bit = np.uint32(1 << (wave % 32))
        if write:
            others = (self.r_epoch[idx] == e) & ((self.r_mask[idx] & ~bit) != 0)
            if others.any():
                j = int(np.argmax(others))
                rm = int(self.r_mask[idx[j]] & ~bit)
                raise EmuError(f"{what}: LDS race: wave {wave} writes byte {int(idx[j])}, which wave "
                               f"{(rm & -rm).bit_length() - 1} read with no s_barrier in between")
            self.w_wave[idx] = wave
            self.w_epoch[idx] = e
        else:
            cur = self.r_epoch[idx] == e
            self.r_mask[idx] = np.where(cur, self.r_mask[idx] | bit, bit)
            self.r_epoch[idx] = e

    def barrier(self, unretired_stores) -> None:
        """A barrier released the waves: new epoch; ``unretired_stores`` (byte index arrays) stay racy."""
        self.epoch += 1
        for idx in unretired_stores:
            self.w_epoch[idx] = self.epoch

    def dma_scatter(self, off: np.ndarray, data: np.ndarray, what: str, wave: int = -1) -> np.ndarray:
        """An LDS-DMA write: stores like scatter and marks the bytes pending until ``release``."""
        off = np.asarray(off, np.int64)
        self._check(off, data.shape[1], what)
        idx = (off[:, None] + np.arange(data.shape[1])).ravel()
        self._race(idx, wave, True, what)  # (VMEM returns in order, so DMA-after-DMA to the same bytes is fine)
        self.buf[idx] = data.ravel()
        np.add.at(self.pend, idx, 1)
        self.npend += 1
        return idx

    def release(self, idx: np.ndarray) -> None:
        np.subtract.at(self.pend, idx, 1)
        self.npend -= 1

    def _check_pending(self, idx: np.ndarray, what: str):
        if self.npend and self.pend[idx].any():
            bad = idx[self.pend[idx] > 0].min()
            raise EmuError(f"{what}: LDS byte {int(bad)} is written by an LDS-DMA load (buffer_/global_load ... lds) "
                           "that no s_waitcnt vmcnt has retired yet")

    def _check(self, off: np.ndarray, nbytes: int, what: str):
        if off.size and (off.min() < 0 or off.max() + nbytes > self.limit):
            bad = off[(off < 0) | (off + nbytes > self.limit)][0]
            raise EmuError(f"{what}: LDS address {int(bad)} (+{nbytes} bytes) is outside the workgroup's "
                           f"{self.limit}-byte LDS allocation")

    def gather(self, off: np.ndarray, nbytes: int, what: str, wave: int = -1) -> np.ndarray:
        off = np.asarray(off, np.int64)
        self._check(off, nbytes, what)
        idx = off[:, None] + np.arange(nbytes)
        if self.npend:
            self._check_pending(idx.ravel(), what)
        self._race(idx.ravel(), wave, False, what)
        return self.buf[idx]

    def scatter(self, off: np.ndarray, data: np.ndarray, what: str, wave: int = -1) -> np.ndarray:
        """Stores data (n, nbytes) at byte offsets off; returns the byte indices written."""
        off = np.asarray(off, np.int64)
        self._check(off, data.shape[1], what)
        idx = off[:, None] + np.arange(data.shape[1])
        if self.npend:
            self._check_pending(idx.ravel(), what)
        self._race(idx.ravel(), wave, True, what)
        self.buf[idx] = data
        return idx.ravel()
