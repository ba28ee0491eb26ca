"""Program (parsed + compiled gfx950 code) and Machine (memory, LDS, waves, launch)."""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .asm import EXEC, KernelInfo, parse_asm
from .errors import EmuError
from .memory import GlobalMemory, LocalMemory
from .ops import BARRIER, M32, Compiler, int_to_mask
from .semantics import Semantics

LLVM_OBJDUMP = "/usr/lib/llvm-22/bin/llvm-objdump"


@dataclass
class KernelArg:
    """One kernel argument from the code object metadata: byte offset, size and value_kind."""

    offset: int
    size: int
    value_kind: str
    name: str = ""


def _parse_metadata(text: str) -> dict:
    """Minimal reader of the ``.amdgpu_metadata`` YAML (code object v5): kernel name -> list of
    :class:`KernelArg`. Uses indentation: the keys of one kernel entry share the indentation of its first
    key; ``.args`` entries are indented deeper."""
    m = re.search(r"\.amdgpu_metadata(.*?)\.end_amdgpu_metadata", text, re.S)
    if not m:
        return {}
    out: dict = {}
    kernels: list = []
    cur: dict | None = None
    args_indent = None
    arg: dict | None = None
    for line in m.group(1).splitlines():
        if not line.strip():
            continue
        body = line.lstrip()
        ind = len(line) - len(body)
        item = body.startswith("- ")
        if item:
            body = body[2:]
            ind += 2
        kv = re.match(r"\.?([\w.]+):\s*(.*)$", body)
        if args_indent is not None and ind > args_indent:
            if item:
                arg = {}
                cur["args"].append(arg)
            if kv and arg is not None:
                arg[kv.group(1)] = kv.group(2).strip()
            continue
        args_indent = None
        if not kv:
            continue
        k, v = kv.groups()
        if k == "amdhsa.kernels":
            continue
        if item and cur is None or (item and ind == cur["indent"]):
            cur = {"indent": ind, "args": [], "name": None}
            kernels.append(cur)
        if cur is None:
            continue
        if k == "args":
            args_indent = ind
            arg = None
        elif k == "name" and ind == cur["indent"]:
            cur["name"] = v.strip()
    for kd in kernels:
        if kd["name"]:
            out[kd["name"]] = [KernelArg(int(a.get("offset", 0), 0), int(a.get("size", 0), 0),
                                         a.get("value_kind", ""), a.get("name", "")) for a in kd["args"]]
    return out


class Program:
    """Parsed and compiled gfx950 code: one or more kernels with their ``.amdhsa_kernel`` descriptors.

    Build with :meth:`from_asm_text` (LLVM assembler syntax, e.g. ``clang++-22 -S`` output or a generator's
    ``.s``) or :meth:`from_asm_file`. Every instruction is compiled when the program is built, so an
    instruction the emulator does not know raises :class:`EmuError` naming it (nothing is skipped).
    """

    def __init__(self, text: str, semantics: Semantics | None = None):
        self.semantics = semantics or Semantics()
        self.instrs, self.labels, self.kernels = parse_asm(text)
        self.args = _parse_metadata(text)
        comp = Compiler(self.labels, self.semantics)
        self.code = []
        for ins in self.instrs:
            try:
                self.code.append(comp.compile(ins))
            except EmuError as e:
                raise EmuError(f"line {ins.line}: {ins.text}: {e}") from None

    @classmethod
    def from_asm_text(cls, text: str, semantics: Semantics | None = None) -> "Program":
        return cls(text, semantics)

    @classmethod
    def from_asm_file(cls, path, semantics: Semantics | None = None) -> "Program":
        with open(path) as f:
            return cls(f.read(), semantics)

    @classmethod
    def from_code_object(cls, path, semantics: Semantics | None = None) -> "Program":
        """Disassembles a gfx950 code object (ELF) with llvm-objdump-22 and reads its kernel descriptors
        (``<name>.kd`` symbols, 64 bytes each) back into ``.amdhsa_*`` directives."""
        from .codeobj import code_object_to_asm
        return cls(code_object_to_asm(path), semantics)

    def kernel(self, name: str) -> KernelInfo:
        """The kernel's descriptor directives and entry; EmuError naming the known kernels if absent."""
        if name not in self.kernels:
            raise EmuError(f"no kernel named {name!r}; kernels: {sorted(self.kernels)}")
        return self.kernels[name]

    def check_registers(self, name: str) -> dict:
        """Checks that the kernel's code (its entry up to the next kernel's entry) uses only the registers its
        descriptor allocates: VGPRs below ``.amdhsa_accum_offset`` (AGPRs start there in the unified file)
        and below ``.amdhsa_next_free_vgpr``, ``accum_offset + AGPRs <= next_free_vgpr``, SGPRs below
        ``.amdhsa_next_free_sgpr`` (VCC, M0, EXEC not counted). Returns the highest indices used; raises
        EmuError naming the first violation. Skipped (returns {}) when the descriptor lacks the directives."""
        k = self.kernel(name)
        if any(not isinstance(k.directives.get(x), int) for x in ("next_free_vgpr", "accum_offset")):
            return {}
        starts = sorted(x.entry for x in self.kernels.values() if x.entry > k.entry)
        end = starts[0] if starts else len(self.instrs)
        vmax = amax = smax = -1
        for ins in self.instrs[k.entry:end]:
            for op in ins.operands:
                top = op.index + op.count - 1
                if op.kind == "v":
                    vmax = max(vmax, top)
                elif op.kind == "a":
                    amax = max(amax, top)
                elif op.kind == "s" and op.index < 102:
                    smax = max(smax, top)
        nfv, acc = k.d("next_free_vgpr"), k.d("accum_offset")
        nfs = k.directives.get("next_free_sgpr", 0)
        nfs = nfs if isinstance(nfs, int) else 0
        if vmax >= acc or vmax >= nfv:
            raise EmuError(f"kernel {name}: uses v{vmax} but .amdhsa_accum_offset is {acc} and "
                           f".amdhsa_next_free_vgpr is {nfv}")
        if amax >= 0 and acc + amax + 1 > nfv:
            raise EmuError(f"kernel {name}: uses a{amax} (unified register {acc + amax}) but "
                           f".amdhsa_next_free_vgpr is {nfv}")
        if nfs and smax >= nfs:
            raise EmuError(f"kernel {name}: uses s{smax} but .amdhsa_next_free_sgpr is {nfs}")
        return {"vgpr": vmax, "agpr": amax, "sgpr": smax}


class Wave:
    """State of one wave64: ``s`` (128 SGPR ints incl. VCC/M0/EXEC), ``v`` (512 x 64 uint32: v0-v255, a0-a255),
    ``scc``, ``pc`` (instruction index), outstanding-load queues for s_waitcnt checking."""

    __slots__ = ("s", "v", "vf", "scc", "pc", "done", "machine", "lds", "vmq", "lgkmq", "pend", "_em", "_emv",
                 "scratch",
                 "clock", "wave_id", "executed")

    def __init__(self, machine, lds, wave_id):
        self.s = [0] * 128
        self.v = np.zeros((512, 64), np.uint32)
        self.scc = 0
        self.pc = 0
        self.done = False
        self.machine = machine
        self.lds = lds
        self.vmq = []
        self.lgkmq = []
        self.pend: dict = {}
        self._em = None
        self._emv = None
        self.clock = 0
        self.wave_id = wave_id
        self.executed = 0
        self.scratch = np.zeros((64, 0), np.uint8)  # per-lane private memory (architected flat scratch)

    def mask(self) -> np.ndarray:
        e = self.s[EXEC] | (self.s[EXEC + 1] << 32)
        if e != self._em:
            self._em = e
            self._emv = int_to_mask(e)
        return self._emv

    def _release(self, dsts):
        for k in dsts:
            c = self.pend[k] - 1
            if c:
                self.pend[k] = c
            else:
                del self.pend[k]

    def retire(self, vm: int, lgkm: int):
        """Retires what ``s_waitcnt vmcnt(vm) lgkmcnt(lgkm)`` guarantees complete. VMEM returns in order.
        LDS ops return in order among themselves but scalar loads may return out of order (gfx950-facts §3),
        so with S scalar loads among T outstanding lgkm ops, waiting for <= lgkm leaves only the first
        T - lgkm - S LDS ops guaranteed, and scalar loads only when lgkm = 0."""
        q = self.vmq
        while len(q) > vm:
            e = q.pop(0)
            self._release(e[1])
            if e[2] is not None:
                self.lds.release(e[2])
        q = self.lgkmq
        k = len(q) - lgkm
        if k <= 0:
            return
        nsmem = sum(1 for e in q if e[0] == "smem")
        lds_done = max(0, k - nsmem)
        keep = []
        for e in q:
            if e[0] == "smem":
                if lgkm == 0:
                    self._release(e[1])
                else:
                    keep.append(e)
            elif lds_done > 0:
                lds_done -= 1
                self._release(e[1])
            else:
                keep.append(e)
        self.lgkmq = keep

    def lgkm_push(self, lds_idx) -> None:
        """Queues an LDS store on lgkmcnt (its byte indices matter to the race check at barriers)."""
        self.lgkmq.append(("lgkm", (), lds_idx))

    def vm_push(self, lds_idx) -> None:
        """Queues an LDS-DMA load on vmcnt; its LDS bytes stay pending until retired."""
        self.vmq.append(("vm", (), lds_idx))


def _regname(k: int) -> str:
    if k >= 1256:
        return f"a{k - 1256}"
    if k >= 1000:
        return f"v{k - 1000}"
    return {106: "vcc_lo", 107: "vcc_hi", 124: "m0", 126: "exec_lo", 127: "exec_hi"}.get(k, f"s{k}")


class Machine:
    """A gfx950 compute unit's worth of state for running one program: global memory shared by all launches,
    LDS of ``lds_bytes`` (160 KiB on gfx950) per workgroup, and the launch logic.

    Memory API: ``alloc(nbytes) -> address``, ``write(address, data)``, ``read(address, nbytes) -> bytes``,
    ``upload(array) -> address``, ``download(address, dtype, shape) -> ndarray``.
    """

    def __init__(self, program: Program, lds_bytes: int = 160 * 1024, max_instructions: int = 50_000_000,
                 lds_fill: int = 0xFF, reg_fill: int = 0xFFFFFFFF, race_check: bool = True):
        """lds_fill: byte each workgroup's LDS starts with; reg_fill: 32-bit value of every SGPR, VGPR and
        AGPR the launch does not initialise (both are undefined on hardware; the defaults read as NaN in
        f32/bf16/fp8 and as huge integers, so reads before writes show up); race_check: report LDS accesses
        by different waves to the same bytes with no barrier between them (memory.LocalMemory)."""
        self.race_check = race_check
        #: optional callable(wave, instr) called before every instruction (tracing, instruction counts);
        #: ``wave.wave_id``, ``wave.s``, ``wave.v`` and ``instr.mnemonic`` / ``instr.line`` / ``instr.text``.
        self.trace = None
        self.program = program
        self.lds_bytes = lds_bytes
        self.lds_fill = lds_fill
        self.reg_fill = reg_fill
        self.mem = GlobalMemory()
        self.max_instructions = max_instructions
        self.instructions_executed = 0
        self._checked: set = set()

    # ---------------------------------------------------------------- memory
    def alloc(self, nbytes: int) -> int:
        """Reserves ``nbytes`` bytes of zero-filled global memory (256-byte aligned, separated from other
        allocations); returns its 64-bit device address."""
        return self.mem.alloc(nbytes)

    def write(self, addr: int, data) -> None:
        """Copies ``data`` (bytes or a numpy array's raw bytes) to device address ``addr``; the range must lie
        inside one allocation (EmuError otherwise)."""
        self.mem.write(addr, data)

    def read(self, addr: int, nbytes: int) -> bytes:
        """Returns ``nbytes`` bytes at device address ``addr`` (inside one allocation)."""
        return self.mem.read(addr, nbytes)

    def upload(self, arr: np.ndarray) -> int:
        """Allocates and copies a numpy array (its raw bytes, C order); returns the address."""
        a = np.ascontiguousarray(arr)
        addr = self.alloc(a.nbytes)
        self.write(addr, a)
        return addr

    def download(self, addr: int, dtype, shape) -> np.ndarray:
        """Reads an array of ``shape`` elements of ``dtype`` (C order) from device address ``addr``."""
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        return np.frombuffer(self.read(addr, n), dtype).reshape(shape).copy()

    # ---------------------------------------------------------------- launch
    def launch(self, kernel_name: str, grid=(1, 1, 1), block=(64, 1, 1), kernarg: bytes = b"",
               dynamic_lds: int = 0, workgroups=None) -> None:
        """Runs ``kernel_name`` on a grid of ``grid`` workgroups (x, y, z) of ``block`` work-items each.

        kernarg: the explicit kernel arguments (bytes laid out as the metadata offsets); it is copied into a
        kernarg segment of ``.amdhsa_kernarg_size`` bytes whose hidden arguments (code object v5:
        hidden_block_count_*, hidden_group_size_*, hidden_remainder_*, hidden_grid_dims) are filled from the
        metadata. Workgroups run one after another; inside a workgroup, each wave runs until ``s_barrier`` or
        ``s_endpgm``, then the next wave; a barrier releases when every live wave has reached it.
        workgroups: optional iterable of (x, y, z) ids to run instead of the whole grid (for sampling).
        """
        prog = self.program
        k = prog.kernel(kernel_name)
        if kernel_name not in self._checked:
            prog.check_registers(kernel_name)
            self._checked.add(kernel_name)
        grid = tuple(grid) + (1,) * (3 - len(grid))
        block = tuple(block) + (1,) * (3 - len(block))
        nthreads = block[0] * block[1] * block[2]
        if nthreads < 1 or nthreads > 1024:
            raise EmuError(f"launch: block {block} must have 1..1024 work-items")
        if k.d("uses_dynamic_stack"):
            raise EmuError(f"kernel {kernel_name}: a dynamically sized stack is not supported by the emulator")
        lds_need = k.d("group_segment_fixed_size") + dynamic_lds
        if lds_need > self.lds_bytes:
            raise EmuError(f"kernel {kernel_name}: needs {lds_need} bytes of LDS, the machine has {self.lds_bytes}")
        ks = max(k.d("kernarg_size"), len(kernarg))
        seg = bytearray(ks + 64)
        seg[: len(kernarg)] = kernarg
        for a in prog.args.get(kernel_name, []):
            vk = a.value_kind
            vals = {"hidden_block_count_x": grid[0], "hidden_block_count_y": grid[1],
                    "hidden_block_count_z": grid[2], "hidden_group_size_x": block[0],
                    "hidden_group_size_y": block[1], "hidden_group_size_z": block[2],
                    "hidden_remainder_x": 0, "hidden_remainder_y": 0, "hidden_remainder_z": 0,
                    "hidden_grid_dims": sum(1 for g, b in zip(grid, block) if g * b > 1) or 1}
            if vk in vals and a.offset + a.size <= len(seg):
                seg[a.offset: a.offset + a.size] = int(vals[vk]).to_bytes(a.size, "little")
        kaddr = self.alloc(len(seg))
        self.write(kaddr, bytes(seg))
        # dispatch packet (hsa_kernel_dispatch_packet_t) for kernels that read the dispatch pointer
        pkt = bytearray(64)
        pkt[4:6] = block[0].to_bytes(2, "little")
        pkt[6:8] = block[1].to_bytes(2, "little")
        pkt[8:10] = block[2].to_bytes(2, "little")
        for j in range(3):
            pkt[12 + 4 * j: 16 + 4 * j] = (grid[j] * block[j]).to_bytes(4, "little")
        pkt[28:32] = lds_need.to_bytes(4, "little")
        pkt[40:48] = kaddr.to_bytes(8, "little")
        daddr = self.alloc(64)
        self.write(daddr, bytes(pkt))
        wgs = workgroups if workgroups is not None else [
            (x, y, z) for z in range(grid[2]) for y in range(grid[1]) for x in range(grid[0])]
        with np.errstate(all="ignore"):
            for wg in wgs:
                self._run_workgroup(k, wg, block, kaddr, daddr, lds_need)

    def _initial_sgprs(self, k: KernelInfo, wg, kaddr: int, daddr: int) -> list[int]:
        s = []
        if k.d("user_sgpr_private_segment_buffer"):
            s += [0, 0, 0, 0]
        if k.d("user_sgpr_dispatch_ptr"):
            s += [daddr & M32, daddr >> 32]
        if k.d("user_sgpr_queue_ptr"):
            s += [0, 0]
        if k.d("user_sgpr_kernarg_segment_ptr"):
            s += [kaddr & M32, kaddr >> 32]
        if k.d("user_sgpr_dispatch_id"):
            s += [0, 0]
        if k.d("user_sgpr_flat_scratch_init"):
            s += [0, 0]
        if k.d("user_sgpr_private_segment_size"):
            s += [0]
        npre = k.d("user_sgpr_kernarg_preload_length")
        if npre:
            off = k.d("user_sgpr_kernarg_preload_offset")
            raw = self.read(kaddr + 4 * off, 4 * npre)
            s += [int.from_bytes(raw[4 * j: 4 * j + 4], "little") for j in range(npre)]
        cnt = k.d("user_sgpr_count", len(s))
        if cnt < len(s):
            raise EmuError(f"kernel {k.name}: .amdhsa_user_sgpr_count {cnt} < {len(s)} enabled user SGPRs")
        s += [0] * (cnt - len(s))
        if k.d("system_sgpr_workgroup_id_x", 1):
            s.append(wg[0])
        if k.d("system_sgpr_workgroup_id_y"):
            s.append(wg[1])
        if k.d("system_sgpr_workgroup_id_z"):
            s.append(wg[2])
        if k.d("system_sgpr_workgroup_info"):
            s.append(0)
        if k.d("enable_private_segment"):
            s.append(0)  # private segment wave offset (unused with gfx950's architected flat scratch)
        return s

    def _run_workgroup(self, k: KernelInfo, wg, block, kaddr, daddr, lds_need):
        lds = LocalMemory(self.lds_bytes)
        lds.buf[:] = self.lds_fill
        lds.race_check = self.race_check
        lds.limit = lds_need
        nthreads = block[0] * block[1] * block[2]
        nwaves = (nthreads + 63) // 64
        sg = self._initial_sgprs(k, wg, kaddr, daddr)
        waves = []
        tid = np.arange(nthreads)
        tx = tid % block[0]
        ty = (tid // block[0]) % block[1]
        tz = tid // (block[0] * block[1])
        packed = (tx | (ty << 10) | (tz << 20)).astype(np.uint32)
        vgpr_mode = k.d("system_vgpr_workitem_id")
        for wi in range(nwaves):
            w = Wave(self, lds, wi)
            w.s[:] = [self.reg_fill & M32] * 128
            w.v[:] = np.uint32(self.reg_fill & M32)
            w.scc = 0
            w.s[: len(sg)] = sg
            lanes = min(64, nthreads - 64 * wi)
            ex = (1 << lanes) - 1
            w.s[EXEC] = ex & M32
            w.s[EXEC + 1] = ex >> 32
            p = packed[64 * wi: 64 * wi + lanes]
            if vgpr_mode == 0 and (block[1] > 1 or block[2] > 1):
                raise EmuError(f"kernel {k.name}: .amdhsa_system_vgpr_workitem_id 0 but block {block} is not 1-D")
            w.v[0, :] = 0
            w.v[0, :lanes] = p
            priv = k.d("private_segment_fixed_size")
            if priv:
                w.scratch = np.full((64, priv), self.lds_fill, np.uint8)
            w.pc = k.entry
            waves.append(w)
        prog = self.program
        while True:
            for w in waves:
                if not w.done:
                    self._run_wave(w, prog, k)
            live = [w for w in waves if not w.done]
            if not live:
                break
            # every live wave is now at a barrier: release them
            lds.barrier([e[2] for w in live for e in w.lgkmq if e[2] is not None])
            for w in live:
                w.pc += 1

    def _run_wave(self, w: Wave, prog: Program, k: KernelInfo):
        code = prog.code
        check = prog.semantics.waitcnt_check
        hook = self.trace
        n = 0
        pc = w.pc
        try:
            while True:
                fn, touched, q, dsts = code[pc]
                if hook is not None:
                    hook(w, prog.instrs[pc])
                if check and w.pend and not touched.isdisjoint(w.pend):
                    regs = sorted(touched & set(w.pend))
                    raise EmuError("uses " + ", ".join(_regname(r) for r in regs) +
                                   " before the s_waitcnt that retires the load writing it")
                r = fn(w)
                n += 1
                if q is not None:
                    (w.vmq if q == "vm" else w.lgkmq).append((q, dsts, None))
                    for d in dsts:
                        w.pend[d] = w.pend.get(d, 0) + 1
                if r is None:
                    pc += 1
                elif r >= 0:
                    pc = r
                    if n > self.max_instructions:
                        raise EmuError(f"more than {self.max_instructions} instructions: infinite loop?")
                elif r == BARRIER:
                    w.pc = pc
                    return
                else:
                    w.done = True
                    w.pc = pc
                    return
                if pc >= len(code):
                    raise EmuError("ran past the end of the code without s_endpgm")
        except EmuError as e:
            ins = prog.instrs[pc] if pc < len(prog.instrs) else None
            where = f"{k.name} wave {w.wave_id}, line {ins.line}: {ins.text}" if ins else k.name
            raise EmuError(f"{where}: {e}") from None
        except Exception as e:  # numpy or Python failures inside an instruction
            ins = prog.instrs[pc]
            raise EmuError(f"{k.name} wave {w.wave_id}, line {ins.line}: {ins.text}: "
                           f"{type(e).__name__}: {e}") from e
        finally:
            self.instructions_executed += n
            w.executed += n
