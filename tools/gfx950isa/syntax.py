"""The one parser of gfx950 assembly in LLVM syntax (what ``clang++-22 -S --offload-arch=gfx950`` and
``llvm-objdump -d --mcpu=gfx950`` print, and what the generator writes for ``llvm-mc``).

The emulator (:mod:`gfx950emu`), the hazard checker (:mod:`gfx950hazard`) and the generator (:mod:`zyfa_gen`)
all read assembly through this module. It turns text into :class:`Instr` records (mnemonic, typed
:class:`Operand` list, modifiers), labels and the ``.amdhsa_kernel`` directives of each kernel. What an
instruction *is* (unit, operand roles, MFMA shape, timing) comes from :mod:`gfx950isa.table` and
:mod:`gfx950isa.roles`; what it *computes* lives in the emulator. Register names follow the LLVM AMDGPU
assembler (AMDGPUUsage, "Assembler" section): ``s5``, ``s[4:7]``, ``v3``, ``v[0:15]``, ``a[0:15]``, ``vcc``,
``vcc_lo``, ``exec``, ``m0``, ...

The parser accepts everything the assembler prints; consumers reject what they do not model (the emulator:
trap temporaries, ``src_*`` special sources, misaligned tuples).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .lex import split_commas, split_words


class AsmError(ValueError):
    """Malformed or unsupported assembly; the message names the line or the token."""


# gfx9 scalar operand encodings of the special registers (also their index in the wave's SGPR file).
SPECIAL_SGPRS = {
    "flat_scratch_lo": (102, 1), "flat_scratch_hi": (103, 1), "flat_scratch": (102, 2),
    "xnack_mask_lo": (104, 1), "xnack_mask_hi": (105, 1), "xnack_mask": (104, 2),
    "vcc_lo": (106, 1), "vcc_hi": (107, 1), "vcc": (106, 2),
    "m0": (124, 1),
    "exec_lo": (126, 1), "exec_hi": (127, 1), "exec": (126, 2),
}
VCC = 106
M0 = 124
EXEC = 126
SPECIAL_SOURCES = ("src_scc", "src_execz", "src_vccz", "src_lds_direct", "src_shared_base", "src_shared_limit",
                   "src_private_base", "src_private_limit", "src_pops_exiting_wave_id")

_REG_RE = re.compile(r"^(s|v|a|ttmp)(?:(\d+)|\[(\d+):(\d+)\])$")
_INT_RE = re.compile(r"^-?(0x[0-9a-fA-F]+|\d+)$")
_FLOAT_RE = re.compile(r"^-?(\d+\.\d*(e[-+]?\d+)?|\d+e[-+]?\d+|inf|nan)$", re.IGNORECASE)
_LABEL_RE = re.compile(r"^[A-Za-z_.$][\w.$@+\-]*$")


@dataclass
class Operand:
    """One instruction operand.

    kind: ``"s"`` SGPR range (including vcc/exec/m0 by their gfx9 encodings), ``"v"`` VGPR range,
    ``"a"`` AGPR range, ``"ttmp"`` trap temporaries, ``"const"`` an integer or float constant (``value`` is a
    Python int or float), ``"off"`` the literal word ``off``, ``"label"`` a branch target or symbol (``name``),
    ``"hwreg"`` a ``hwreg(...)``/``sendmsg(...)`` operand (``name`` = its text), ``"special"`` a ``src_*``
    source, ``"scc"``.
    ``index``/``count``: first register and number of 32-bit registers.
    ``neg``/``abs``/``sext``: source modifiers (``-x``, ``|x|`` or ``abs(x)``, ``sext(x)``).
    """

    kind: str
    index: int = 0
    count: int = 1
    value: int | float = 0
    name: str = ""
    neg: bool = False
    abs: bool = False
    sext: bool = False
    text: str = ""


    @property
    def aligned(self) -> bool:
        """Register tuple alignment as the assembler requires it (VGPR/AGPR pairs and wider start even; SGPR
        pairs even, SGPR quads and wider at a multiple of 4)."""
        k, lo, n = self.kind, self.index, self.count
        return not ((k in ("v", "a") and n >= 2 and lo % 2) or (k == "s" and n == 2 and lo % 2) or
                    (k == "s" and n >= 4 and lo % 4))


@dataclass
class Instr:
    """One parsed instruction: ``mnemonic`` (lower case, encoding suffix such as ``_e32`` kept),
    ``operands`` in assembler order, ``mods`` (modifier name -> value: int, list of ints, str, or True),
    ``line`` (1-based) and ``text`` (the instruction without its comment) for messages.

    The remaining fields are the instruction's facts, filled in by :func:`gfx950isa.roles.analyze` (the hazard
    checker and the cycle model use them): ``kind`` (issue class: ``mfma``, ``valu``, ``trans``, ``vmem``,
    ``ds``, ``smem``, ``salu``, ``nop``, ``branch``, ``end``), ``defs``/``uses`` (register units, see
    :func:`gfx950isa.roles.units`), the MFMA operand roles and pass count, the branch ``target`` and
    ``index`` (position among the parsed instructions)."""

    mnemonic: str
    operands: list[Operand]
    mods: dict
    line: int
    text: str
    index: int = -1
    kind: str = ""
    defs: set = field(default_factory=set)
    uses: set = field(default_factory=set)
    passes: int = 0
    mfma_d: set = field(default_factory=set)
    mfma_a: set = field(default_factory=set)
    mfma_b: set = field(default_factory=set)
    mfma_c: set = field(default_factory=set)
    mfma_scale: set = field(default_factory=set)
    target: str | None = None

    @property
    def base(self) -> str:
        """Mnemonic without the _e32/_e64/_sdwa/_dpp encoding suffix."""
        return re.sub(r"_(e32|e64|sdwa|dpp)$", "", self.mnemonic)

    def wait_states(self) -> int:
        """Wait states this instruction provides: s_nop N gives N+1, every other instruction 1
        (LLVM SIInstrInfo::getNumWaitStates)."""
        if self.mnemonic == "s_nop":
            return int(self.operands[0].value) + 1 if self.operands else 1
        return 1


@dataclass
class KernelInfo:
    """A kernel's entry label and its ``.amdhsa_kernel`` directives (name without ``.amdhsa_`` -> int)."""

    name: str
    directives: dict = field(default_factory=dict)
    entry: int = -1

    def d(self, key: str, default: int = 0) -> int:
        """Value of directive ``.amdhsa_<key>`` (``default`` when absent). AsmError when it is a symbolic
        expression (clang writes those for kernels that make calls), which the emulator does not evaluate."""
        v = self.directives.get(key, default)
        if isinstance(v, str):
            raise AsmError(f"kernel {self.name}: .amdhsa_{key} is the expression {v!r}, which the emulator "
                           "does not evaluate")
        return int(v)


def parse_int(t: str) -> int:
    t = t.strip()
    neg = t.startswith("-")
    if neg:
        t = t[1:]
    v = int(t, 16) if t.lower().startswith("0x") else int(t)
    return -v if neg else v


def parse_operand(t: str) -> Operand:
    """Parses one operand token (with its source modifiers)."""
    text = t
    neg = abs_ = sext = False
    t = t.strip()
    if t.startswith("neg(") and t.endswith(")"):
        neg, t = True, t[4:-1]
    if t.startswith("-") and not _INT_RE.match(t) and not _FLOAT_RE.match(t):
        neg, t = True, t[1:]
    if t.startswith("|") and t.endswith("|"):
        abs_, t = True, t[1:-1]
    elif t.startswith("abs(") and t.endswith(")"):
        abs_, t = True, t[4:-1]
    if t.startswith("sext(") and t.endswith(")"):
        sext, t = True, t[5:-1]
    t = t.strip()
    low = t.lower()
    m = _REG_RE.match(low)
    if m:
        kind = m.group(1)
        if m.group(2) is not None:
            lo = hi = int(m.group(2))
        else:
            lo, hi = int(m.group(3)), int(m.group(4))
        if hi < lo:
            raise AsmError(f"bad register range {text!r}")
        return Operand(kind, lo, hi - lo + 1, neg=neg, abs=abs_, sext=sext, text=text)
    if low in SPECIAL_SGPRS:
        idx, cnt = SPECIAL_SGPRS[low]
        return Operand("s", idx, cnt, neg=neg, abs=abs_, text=text)
    if low == "scc":
        return Operand("scc", text=text)
    if low == "off":
        return Operand("off", text=text)
    if _INT_RE.match(low):
        v = parse_int(low)
        return Operand("const", value=-v if neg else v, text=text)
    if _FLOAT_RE.match(low):
        v = float(low)
        return Operand("const", value=-v if neg else v, text=text)
    if low.startswith("hwreg(") or low.startswith("sendmsg("):
        return Operand("hwreg", name=t, text=text)
    if low in SPECIAL_SOURCES:
        return Operand("special", name=low, text=text)
    if _LABEL_RE.match(t):
        return Operand("label", name=t, neg=neg, text=text)
    raise AsmError(f"cannot parse operand {text!r}")


def _parse_mod(tok: str):
    if ":" not in tok:
        return tok.lower(), True
    k, v = tok.split(":", 1)
    k = k.lower()
    v = v.strip()
    if v.startswith("[") and v.endswith("]"):
        return k, [parse_int(x) for x in v[1:-1].split(",")]
    if _INT_RE.match(v):
        return k, parse_int(v)
    return k, v


# Modifier words that stand alone (no ':').
_FLAG_MODS = {"off", "offen", "idxen", "lds", "glc", "slc", "nt", "sc0", "sc1", "clamp", "gds", "tfe", "lwe",
              "addr64", "row_mirror", "row_half_mirror", "d16"}


def parse_instruction(body: str, line: int) -> Instr:
    """Parses the text of one instruction (comments already removed)."""
    body = body.strip()
    parts = body.split(None, 1)
    mnem = parts[0].lower()
    rest = parts[1] if len(parts) > 1 else ""
    mods: dict = {}
    operands: list[Operand] = []
    if mnem in ("s_waitcnt",):
        # s_waitcnt vmcnt(0) lgkmcnt(0) | s_waitcnt 0x...
        r = rest.replace("&", " ").split()
        for tok in r:
            mm = re.match(r"(vmcnt|expcnt|lgkmcnt)\((\d+)\)", tok)
            if mm:
                mods[mm.group(1)] = int(mm.group(2))
            elif _INT_RE.match(tok):
                v = parse_int(tok)
                mods["vmcnt"] = (v & 0xF) | ((v >> 14) & 3) << 4
                mods["expcnt"] = (v >> 4) & 7
                mods["lgkmcnt"] = (v >> 8) & 0xF
            else:
                raise AsmError(f"line {line}: bad s_waitcnt operand {tok!r}")
        return Instr(mnem, [], mods, line, body)
    toks = split_commas(rest) if rest else []
    if toks:
        # The last comma-separated field may carry space-separated modifiers ("v1 offset:16 sc0").
        last = toks[-1]
        words = split_words(last, quotes=True) or [""]
        toks[-1] = words[0]
        for w in words[1:]:
            k, v = _parse_mod(w)
            mods[k] = v
        # A field may itself be a modifier (e.g. "offset:16" directly after a comma is not LLVM style, but
        # "off" operand is).
        new = []
        for t in toks:
            if t == "":
                continue
            if ":" in t and not t.startswith(("s[", "v[", "a[", "ttmp[")) and "[" not in t.split(":")[0]:
                k, v = _parse_mod(t)
                mods[k] = v
            else:
                new.append(t)
        toks = new
    for t in toks:
        operands.append(parse_operand(t))
    return Instr(mnem, operands, mods, line, body)


def _strip_comment(line: str) -> str:
    q = False
    for i, ch in enumerate(line):
        if ch == '"':
            q = not q
        elif not q and (ch == ";" or line.startswith("//", i)):
            return line[:i]
    return line


def _scan(text: str):
    """Yields ("label", name, in_text), ("instr", Instr, in_text) and ("kernel", KernelInfo, None) in text
    order; skips comments, directives and the bodies of .amdgpu_metadata blocks."""
    in_text = True
    in_kd: KernelInfo | None = None
    in_meta = False
    seen: dict[str, KernelInfo] = {}
    for ln, raw in enumerate(text.splitlines(), 1):
        if in_meta:
            if raw.strip().startswith(".end_amdgpu_metadata"):
                in_meta = False
            continue
        line = _strip_comment(raw).strip()
        if not line:
            continue
        if in_kd is not None:
            if line.startswith(".end_amdhsa_kernel"):
                in_kd = None
                continue
            w = line.split(None, 1)
            key = w[0][len(".amdhsa_"):] if w[0].startswith(".amdhsa_") else w[0]
            try:
                in_kd.directives[key] = parse_int(w[1]) if len(w) > 1 else 1
            except ValueError:
                in_kd.directives[key] = w[1] if len(w) > 1 else ""
            continue
        # labels (possibly several on a line, followed by an instruction)
        while True:
            m = re.match(r"^([A-Za-z_.$][\w.$]*):(.*)$", line)
            if not m:
                break
            yield "label", m.group(1), in_text
            line = m.group(2).strip()
        if not line:
            continue
        if line.startswith("."):
            w = line.split(None, 1)
            d = w[0]
            if d == ".amdgpu_metadata":
                in_meta = True
            elif d == ".amdhsa_kernel":
                name = w[1].strip()
                if name in seen:
                    in_kd = seen[name]
                else:
                    in_kd = seen[name] = KernelInfo(name)
                    yield "kernel", in_kd, None
            elif d == ".text":
                in_text = True
            elif d in (".section",):
                sec = w[1].split(",")[0].strip().strip('"') if len(w) > 1 else ""
                in_text = sec.startswith(".text")
            elif d in (".data", ".bss", ".rodata"):
                in_text = False
            continue
        yield "instr", parse_instruction(line, ln), in_text


def parse_asm(text: str):
    """Parses assembly text. Returns (instrs, labels, kernels): the instructions of the code sections in program
    order (``Instr.index`` set), label -> index of the next instruction, and kernel name -> :class:`KernelInfo`."""
    instrs: list[Instr] = []
    labels: dict[str, int] = {}
    kernels: dict[str, KernelInfo] = {}
    for what, x, in_text in _scan(text):
        if what == "kernel":
            kernels[x.name] = x
        elif what == "label":
            if in_text:
                labels[x] = len(instrs)
        elif in_text:
            x.index = len(instrs)
            instrs.append(x)
    for name, k in kernels.items():
        if name not in labels:
            raise AsmError(f"kernel {name!r} has a descriptor but no code label")
        k.entry = labels[name]
    return instrs, labels, kernels


def parse_items(text: str) -> list:
    """Instructions and labels of `text` in order: :class:`Instr` records (``index`` = position among the
    instructions) and ``("label", name)`` tuples. Directives, comments, descriptor and metadata blocks are
    skipped. This is the form the hazard checker walks (it builds the control-flow graph from it)."""
    out = []
    idx = 0
    for what, x, _ in _scan(text):
        if what == "label":
            out.append(("label", x))
        elif what == "instr":
            x.index = idx
            idx += 1
            out.append(x)
    return out
