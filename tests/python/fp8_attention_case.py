"""Runs the generated FP8 attention kernels (asm/zyfa_fp8_fwd_d128_m32.s for head dims (128, 128),
asm/zyfa_fp8_fwd_d192_dv128_m32.s for MLA (192, 128); the kernel is chosen by the case's head dims) in the gfx950
emulator and the C++ FP8 host specification (include/zyfa/host/fp8_spec.hpp, zyfa recipe, through
tools/dump_codes/dump_spec.cpp) on the same e4m3fn codes, and compares them. Used by
tests/python/test_gen_fp8_attention.py (CI subset) and tools/verify_fp8_gfx950.py (the fuller set whose results are
in docs/fp8-gfx950.md).

Comparison rules (docs/fp8-gfx950.md, "Verification"):
* every output element and every LSE is checked; output and LSE are poisoned with NaN before the run; NaN
  must appear exactly where the specification has it, -inf LSE exactly where it has it;
* under the emulator's ``fp32_seq`` MFMA order (the specification's summation order) the bf16 output is bit
  for bit the specification's (RNE of its fp32 output); the LSE within 8 fp32 ulps of |m| + |log2 l2|
  (v_exp_f32 / v_log_f32 against the C library's exp2f / log2f);
* under ``fp64`` / ``fp32_block`` (other MFMA summation orders, as the hardware's is not documented) S moves in
  its last bits, so a Lean P code may move by one step: output within ``OTHER_ORDER_TOL`` (relative to the row's
  max |out|, plus one bf16 ulp), LSE within 1e-3 nats.
"""
from __future__ import annotations

import dataclasses
import os
import pathlib
import shutil
import struct
import subprocess
import sys
import tempfile

import ml_dtypes
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from gfx950emu import Machine, Program as EmuProgram, Semantics  # noqa: E402

FN = ml_dtypes.float8_e4m3fn
BF16 = ml_dtypes.bfloat16
F32 = np.float32
LOG2E = F32(1.44269504088896340736)
#: generated kernel of each (head_dim_qk, head_dim_v)
KERNELS = {(128, 128): "zyfa_fp8_fwd_d128_m32", (192, 128): "zyfa_fp8_fwd_d192_dv128_m32"}
KERNEL = KERNELS[(128, 128)]
D = 128
#: other MFMA orders: a code may move one step (<= 1/8 of its value); bound on |out - spec| / max |out| of the row
OTHER_ORDER_TOL = 2.0 ** -4

#: query rows of one workgroup of the generated kernels (grid x = ceil(seqlen_q / TILE_ROWS)): 8 waves of WAVE_ROWS
TILE_ROWS = 256
WAVE_ROWS = 32

_EXE = None
_PROGRAMS = {}


def spec_exe() -> pathlib.Path:
    """Builds tools/dump_codes/dump_spec.cpp once per process (g++ -O2 -ffp-contract=off, strict IEEE)."""
    global _EXE
    if _EXE is None:
        cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
        out = pathlib.Path(tempfile.mkdtemp(prefix="zyfa_dump_spec_")) / "dump_spec"
        subprocess.run([cxx, "-std=c++17", "-O2", "-ffp-contract=off", f"-I{ROOT / 'include'}",
                        str(ROOT / "tools" / "dump_codes" / "dump_spec.cpp"), "-o", str(out)], check=True)
        _EXE = out
    return _EXE


def program(order: str, kernel: str = KERNEL) -> EmuProgram:
    if (order, kernel) not in _PROGRAMS:
        text = (ROOT / "asm" / f"{kernel}.s").read_text()
        _PROGRAMS[(order, kernel)] = EmuProgram.from_asm_text(text, Semantics(mfma_accumulate=order))
    return _PROGRAMS[(order, kernel)]


@dataclasses.dataclass
class Case:
    """One problem: dense e4m3fn codes q [b, sq, h, dqk], k [b, sk, hk, dqk], v [b, sk, hk, dv] plus the layout
    the kernel reads them from (``pad``: extra elements per row/head/batch of q, k, v and out, filled with NaN
    codes). ``scale`` None: 1 / sqrt(dqk), the library's default."""
    name: str
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    causal: bool
    qd: float = 1.0
    kd: float = 1.0
    vd: float = 1.0
    scale: float = None
    pad: int = 0

    def __post_init__(self):
        if self.scale is None:
            self.scale = 1.0 / np.sqrt(self.dqk)

    @property
    def shape(self):
        b, sq, h, _ = self.q.shape
        return b, sq, self.k.shape[1], h, self.k.shape[2]

    @property
    def dqk(self) -> int:
        return self.q.shape[-1]

    @property
    def dv(self) -> int:
        return self.v.shape[-1]

    @property
    def kernel(self) -> str:
        return KERNELS[(self.dqk, self.dv)]


def random_case(name, rng, b, sq, sk, h, hk, causal, pad=0, q_gain=1.0, dqk=D, dv=D):
    """Gaussian inputs quantized per tensor (amax -> 448), as quantize_e4m3fn does; head dims (dqk, dv)."""
    def quant(x):
        amax = F32(np.abs(x).max())
        d = F32(amax / F32(448)) if amax > 0 else F32(1)
        return np.clip(x / d, -448, 448).astype(FN).view(np.uint8), float(d)
    q, qd = quant(rng.standard_normal((b, sq, h, dqk)).astype(F32) * F32(q_gain))
    k, kd = quant(rng.standard_normal((b, sk, hk, dqk)).astype(F32))
    v, vd = quant(rng.standard_normal((b, sk, hk, dv)).astype(F32))
    return Case(name, q, k, v, causal, qd, kd, vd, pad=pad)


def run_spec(c: Case):
    """(out fp32 [b, sq, h, dv], lse [b, h, sq]) of the C++ specification (zyfa)."""
    b, sq, sk, h, hk = c.shape
    dv = c.dv
    hdr = np.array([b, sq, sk, h, hk, c.dqk, dv, int(c.causal)], np.int64).tobytes()
    hdr += np.array([c.scale, c.qd, c.kd, c.vd], F32).tobytes()
    with tempfile.TemporaryDirectory() as tmp:
        fin, fout = pathlib.Path(tmp) / "in.bin", pathlib.Path(tmp) / "out.bin"
        fin.write_bytes(hdr + c.q.tobytes() + c.k.tobytes() + c.v.tobytes())
        subprocess.run([str(spec_exe()), "zyfa", str(fin), str(fout)], check=True)
        raw = fout.read_bytes()
    n_out, n_lse = b * sq * h * dv, b * h * sq
    out = np.frombuffer(raw[:4 * n_out], F32).reshape(b, sq, h, dv)
    lse = np.frombuffer(raw[4 * n_out:4 * (n_out + n_lse)], F32).reshape(b, h, sq)
    return out, lse


def _place(mach, x: np.ndarray, pad: int, fill: int, elem: int):
    """Uploads dense [b, s, h, d] `x` into a padded BSHD buffer; returns (address, (batch, row, head) strides in
    elements). Padding: head stride d + pad, row stride h (d + pad) + pad, batch stride s row + pad (strides kept
    multiples of 16 elements)."""
    b, s, h, d = x.shape
    hs = d + pad
    rs = h * hs + pad
    bs = s * rs + pad
    buf = np.full(b * bs + 16, fill, x.dtype)
    for bi in range(b):
        for si in range(s):
            for hi in range(h):
                o = bi * bs + si * rs + hi * hs
                buf[o:o + d] = x[bi, si, hi]
    return mach.upload(buf), (bs, rs, hs), buf


def run_kernel(c: Case, order: str = "fp32_seq", lse: bool = True):
    """(out bf16 bits [b, sq, h, dv] uint16, lse [b, h, sq] or None, wave instructions) from the emulator (the
    kernel of the case's head dims)."""
    b, sq, sk, h, hk = c.shape
    dv = c.dv
    group = h // hk
    mach = Machine(program(order, c.kernel), race_check=True)  # LDS races between the waves are errors
    pad = c.pad
    aq, sq_str, _ = _place(mach, c.q, pad, 0x7F, 1)
    ak, sk_str, _ = _place(mach, c.k, pad, 0x7F, 1)
    av, sv_str, _ = _place(mach, c.v, pad, 0xFF, 1)
    out0 = np.zeros((b, sq, h, dv), np.uint16)
    ao, so_str, obuf = _place(mach, out0 | 0x7FC0, pad, 0x7FC0, 2)
    al = mach.upload(np.full(b * h * sq, np.nan, F32)) if lse else 0
    c_log2 = F32(F32(F32(F32(c.qd) * F32(c.kd)) * F32(c.scale)) * LOG2E)
    magic = 0 if group == 1 else (1 << 32) // group + 1
    kernarg = struct.pack("<5Q", aq, ak, av, ao, al)
    kernarg += struct.pack("<12I", *sq_str, *sk_str, *sv_str, *so_str)
    kernarg += struct.pack("<5I2f4x", sq, sk, h, magic, int(c.causal), c_log2, F32(c.vd))
    tiles = (sq + TILE_ROWS - 1) // TILE_ROWS
    mach.launch(c.kernel, grid=(tiles, h, b), block=(64 * TILE_ROWS // WAVE_ROWS, 1, 1), kernarg=kernarg)
    full = mach.download(ao, np.uint16, obuf.shape)
    bs, rs, hs = so_str
    out = np.empty((b, sq, h, dv), np.uint16)
    padmask = np.ones(full.shape, bool)
    for bi in range(b):
        for si in range(sq):
            for hi in range(h):
                o = bi * bs + si * rs + hi * hs
                out[bi, si, hi] = full[o:o + dv]
                padmask[o:o + dv] = False
    assert (full[padmask] == 0x7FC0).all(), "the kernel wrote outside the output rows"
    lse_out = mach.download(al, F32, (b, h, sq)) if lse else None
    return out, lse_out, mach.instructions_executed


def compare(c: Case, got_out, got_lse, want_out, want_lse, order: str = "fp32_seq") -> dict:
    """Asserts the comparison rules of the module docstring; returns statistics."""
    want_bits = want_out.astype(BF16).view(np.uint16)
    got_f = got_out.view(BF16).astype(np.float64)
    want_f = want_bits.view(BF16).astype(np.float64)
    nan_w, nan_g = np.isnan(want_f), np.isnan(got_f)
    assert np.array_equal(nan_w, nan_g), f"{c.name}: NaN output positions differ ({nan_w.sum()} vs {nan_g.sum()})"
    fin = ~nan_w
    stats = {"elements": int(want_f.size), "nan": int(nan_w.sum())}
    if order == "fp32_seq":
        bad = (got_out != want_bits) & fin
        assert not bad.any(), (f"{c.name}: {bad.sum()} of {fin.sum()} output elements differ in bits, first at "
                               f"{np.argwhere(bad)[0]}: {got_f[bad][0]} vs {want_f[bad][0]}")
        stats["bit_exact"] = True
    else:
        rowmax = np.nanmax(np.where(fin, np.abs(want_f), 0), axis=-1, keepdims=True)
        err = np.abs(np.where(fin, got_f - want_f, 0))
        ok = err <= OTHER_ORDER_TOL * rowmax + 2.0 ** -8 * np.abs(want_f) + 1e-30
        assert ok.all(), f"{c.name}: {(~ok).sum()} outputs beyond the {order} bound (max err {err.max()})"
        stats["max_rel_row_err"] = float((err / np.maximum(rowmax, 1e-30)).max())
        stats["bits_equal"] = float(((got_out == want_bits) | nan_w).mean())
    if got_lse is not None:
        wl, gl = want_lse.astype(np.float64), got_lse.astype(np.float64)
        assert np.array_equal(np.isnan(wl), np.isnan(gl)), f"{c.name}: NaN LSE positions differ"
        assert np.array_equal(np.isneginf(wl), np.isneginf(gl)), f"{c.name}: -inf LSE positions differ"
        assert not np.isposinf(gl).any()
        f = np.isfinite(wl)
        assert np.array_equal(f, np.isfinite(gl))
        err = np.abs(gl[f] - wl[f])
        if order == "fp32_seq":
            tol = 8 * 2.0 ** -23 * (np.abs(wl[f]) / LOG2E.item() + 1.0) + 1e-7
        else:
            tol = np.full(err.shape, 1e-3)
        assert (err <= tol).all(), f"{c.name}: LSE error {err.max():.3g} above the tolerance"
        stats["lse_max_err"] = float(err.max()) if err.size else 0.0
        stats["lse_neginf"] = int(np.isneginf(wl).sum())
    return stats


def check(c: Case, order: str = "fp32_seq", lse: bool = True) -> dict:
    want_out, want_lse = run_spec(c)
    got_out, got_lse, n = run_kernel(c, order, lse)
    st = compare(c, got_out, got_lse, want_out, want_lse, order)
    st["wave_instructions"] = n
    return st




def run_kernel_far(c: Case, batch_idx: int, head_idx: int, tile0: int, seqlen_q: int, num_heads: int, strides: dict,
                   group: int = 1, order: str = "fp32_seq"):
    """Runs non-causal `c` (b = 1, h = hk = 1, sq a multiple of TILE_ROWS) as rows tile0 * TILE_ROWS.. of
    (batch batch_idx, query head head_idx) of a problem with `seqlen_q` rows, `num_heads` heads and the given
    element strides ({"q": (batch, row, head), "k": ..., "v": ..., "out": ...}), whose byte offsets pass 2^32.

    The emulator's memory is flat (GLOBAL_BASE plus the allocations), so only the rows the launched workgroups touch
    are allocated: each pointer argument is the buffer's address minus the (batch, head[, first row]) byte offset,
    modulo 2^64, so that the kernel's 64-bit pointer + offset lands in the buffer (a 32-bit offset or a lost carry
    lands outside every allocation: EmuError). Non-causal rows are independent of the other rows, so the result
    must equal the specification's for `c` alone. Returns (out bf16 bits [1, sq, 1, dv], lse [1, 1, sq], wave
    instructions)."""
    _, sq, sk, h, hk = c.shape
    assert not c.causal and h == hk == 1 and sq % TILE_ROWS == 0
    dqk, dv = c.dqk, c.dv
    mach = Machine(program(order, c.kernel), race_check=True)  # LDS races between the waves are errors
    row0 = tile0 * TILE_ROWS
    hk_idx = head_idx // group
    m64 = (1 << 64) - 1

    def place(x, t, hidx, rows_from, elem, fill):
        bs, rs, hs = strides[t]
        s, d = x.shape[1], x.shape[3]
        buf = np.full(s * rs, fill, x.dtype)
        for si in range(s):
            buf[si * rs:si * rs + d] = x[0, si, 0]
        addr = mach.upload(buf)
        off = (batch_idx * bs + rows_from * rs + hidx * hs) * elem
        return addr, (addr - off) & m64, buf

    aq, pq, _ = place(c.q, "q", head_idx, row0, 1, 0x7F)
    ak, pk, _ = place(c.k, "k", hk_idx, 0, 1, 0x7F)
    av, pv, _ = place(c.v, "v", hk_idx, 0, 1, 0xFF)
    ao, po, obuf = place(np.full((1, sq, 1, dv), 0x7FC0, np.uint16), "out", head_idx, row0, 2, 0x7FC0)
    al = mach.upload(np.full(sq, np.nan, F32))
    pl = (al - ((batch_idx * num_heads + head_idx) * seqlen_q + row0) * 4) & m64
    c_log2 = F32(F32(F32(F32(c.qd) * F32(c.kd)) * F32(c.scale)) * LOG2E)
    magic = 0 if group == 1 else (1 << 32) // group + 1
    kernarg = struct.pack("<5Q", pq, pk, pv, po, pl)
    kernarg += struct.pack("<12I", *strides["q"], *strides["k"], *strides["v"], *strides["out"])
    kernarg += struct.pack("<5I2f4x", seqlen_q, sk, num_heads, magic, 0, c_log2, F32(c.vd))
    tiles = (seqlen_q + TILE_ROWS - 1) // TILE_ROWS
    wgs = [(tile0 + t, head_idx, batch_idx) for t in range(sq // TILE_ROWS)]
    mach.launch(c.kernel, grid=(tiles, num_heads, batch_idx + 1), block=(64 * TILE_ROWS // WAVE_ROWS, 1, 1),
                kernarg=kernarg, workgroups=wgs)
    rs = strides["out"][1]
    full = mach.download(ao, np.uint16, obuf.shape)
    out = np.stack([full[si * rs:si * rs + dv] for si in range(sq)]).reshape(1, sq, 1, dv)
    pad = np.ones(full.shape, bool)
    for si in range(sq):
        pad[si * rs:si * rs + dv] = False
    assert (full[pad] == 0x7FC0).all(), "the kernel wrote outside the output rows"
    lse = mach.download(al, F32, (1, 1, sq))
    return out, lse, mach.instructions_executed


# ----------------------------------------------------------------------------- Lean P: fused and two-step forms
def scores(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """S [sq, sk] of e4m3fn codes q [sq, d], k [sk, d] as the specification sums it (fp32, increasing d from +0)."""
    qf, kf = q.view(FN).astype(F32), k.view(FN).astype(F32)
    s = np.zeros((q.shape[0], k.shape[0]), F32)
    with np.errstate(invalid="ignore"):
        for d in range(q.shape[1]):
            s = (s + qf[:, d, None] * kf[None, :, d]).astype(F32)
    return s


def fma32(a, b, c):
    """fp32 fma(a, b, c), one rounding: the product is exact in fp64, so the fp64 sum can only mislead where it lands
    on a midpoint of two fp32 numbers (double rounding); those elements are redone exactly (fractions)."""
    from fractions import Fraction
    a, b, c = np.broadcast_arrays(np.asarray(a, F32), np.asarray(b, F32), np.asarray(c, F32))
    with np.errstate(invalid="ignore", over="ignore"):
        r64 = a.astype(np.float64) * b + c
        out = r64.astype(F32)
    tie = np.isfinite(r64) & ((r64.view(np.uint64) & np.uint64((1 << 29) - 1)) == np.uint64(1 << 28))
    for ix in zip(*np.nonzero(tie)):
        exact = Fraction(float(a[ix])) * Fraction(float(b[ix])) + Fraction(float(c[ix]))
        lo = F32(float(exact))
        if Fraction(float(lo)) > exact:
            lo = np.nextafter(lo, F32(-np.inf))
        hi = np.nextafter(lo, F32(np.inf))
        dl, dh = exact - Fraction(float(lo)), Fraction(float(hi)) - exact
        out[ix] = lo if dl < dh or (dl == dh and not int(lo.view(np.uint32)) & 1) else hi
    return out


def lean_p_y(s, c, m_new, kb, form: str):
    """Lean P's y (fp8_spec.hpp, STEP 2) of scores `s` for a row with running max m_new and block offset kb:
    form "fused" (fmaf(S, 8c, b)), "two_step" ((t - m_new) 8 + 8 kb + 121) or "spec" (fused where |m_new| < 2^16
    and c >= 2^-122). Broadcasts."""
    c, m_new = F32(c), np.asarray(m_new, F32)
    C = (8 * np.asarray(kb, np.int64) + 121).astype(F32)
    with np.errstate(invalid="ignore", over="ignore"):
        t = (np.asarray(s, F32) * c).astype(F32)
        two = (((t - m_new).astype(F32) * F32(8)).astype(F32) + C).astype(F32)
        b = (C - F32(8) * m_new).astype(F32)
        fused = fma32(s, F32(8) * c, b)
    if form == "fused":
        return fused
    if form == "two_step":
        return two
    return np.where((np.abs(m_new) < F32(65536)) & (c >= F32(2.0 ** -122)), fused, two)


def lean_p_codes(y):
    with np.errstate(invalid="ignore"):
        cd = np.rint(np.clip(y, F32(0), F32(121)))
    return np.where(np.isnan(y), 0x7F, np.nan_to_num(cd)).astype(np.uint8)


def c_log2(c: Case) -> np.float32:
    """The kernel argument scale_log2: ((q_descale k_descale) softmax_scale) log2 e in fp32."""
    return F32(F32(F32(F32(c.qd) * F32(c.kd)) * F32(c.scale)) * LOG2E)


def lean_p_form_codes(c: Case, forms=("spec", "two_step")) -> dict:
    """{form: codes [b, h, sq, sk]} of every visible key (masked keys 0) under the specification's online softmax,
    with Lean P's y formed as `form` (lean_p_y); also "fused_row" [b, h, sq]: rows whose every block is of the fused
    form. Only the codes: enough to show a case tells the forms apart."""
    b_, sq, sk, h, hk = c.shape
    cc = c_log2(c)
    out = {f: np.zeros((b_, h, sq, sk), np.uint8) for f in forms}
    fused_row = np.ones((b_, h, sq), bool)
    base = sk - sq + 1 if c.causal else sk
    for bi in range(b_):
        for hi in range(h):
            s = scores(c.q[bi, :, hi], c.k[bi, :, hi // (h // hk)])
            for i in range(sq):
                n = int(min(max(base + i, 0), sk))
                m = F32(-np.inf)
                for j0 in range(0, n, 64):
                    sv = s[i, j0:min(j0 + 64, n)]
                    with np.errstate(invalid="ignore", over="ignore"):
                        t = (sv * cc).astype(F32)
                    tv = t[~np.isnan(t)]
                    m_blk = F32(tv.max()) if tv.size else F32(-np.inf)
                    m_new = F32(max(m, m_blk))
                    with np.errstate(invalid="ignore"):
                        dm = F32(m_new - m_blk)
                    kb = 0 if np.isnan(dm) else int(min(dm, F32(255)))
                    fused_row[bi, hi, i] &= bool(abs(m_new) < 65536 and cc >= F32(2.0 ** -122))
                    for f in forms:
                        out[f][bi, hi, i, j0:j0 + sv.size] = lean_p_codes(lean_p_y(sv, cc, m_new, kb, f))
                    m = m_new
    out["fused_row"] = fused_row
    return out


def form_boundary_case(name: str, rng, sq: int, sk: int, causal: bool, dqk: int = D, a_max: float = 1.75,
                       t_top: float = 2.0 ** 15, candidates: int = 96) -> Case:
    """A case whose Lean P codes tell the fused form from the two-step one (fp8_spec.hpp, STEP 2): with logits near
    2^15 the two forms' y differ by up to ~1/16 of a code, so a code differs where y lies that close to a .5.

    Row i's q codes are one e4m3 value a_i in [0.5, a_max] in every dim; k is 448 in dims 0..d-3 and small values
    (<= 0) in the last two dims, so S_ij = a_i (448 (d - 2) + delta_j) (fp32) and t of a = 1 is about t_top. Each
    block's first key has the block's largest S (delta = 0; -4 in block 1, so its kb > 0); every other key's two
    last dims are chosen (greedily, from `candidates` random pairs) so that the forms' codes differ in as many
    rows as possible. Rows with a_i t_top >= 2^16 take the two-step form in the specification."""
    vals = np.arange(256, dtype=np.uint8)
    fv = vals.view(FN).astype(np.float64)
    a_codes = vals[(fv >= 0.5) & (fv <= a_max)]
    q = np.repeat(rng.choice(a_codes, sq)[:, None], dqk, axis=1)
    k = np.full((sk, dqk), 0x7E, np.uint8)
    small = vals[(fv >= -2) & (fv <= 0)], vals[(fv >= -32) & (fv <= 0)]
    four = np.array([-4.0], F32).astype(FN).view(np.uint8)[0]
    cc = F32(t_top / (448.0 * (dqk - 2)))
    scale = float(F32(cc / LOG2E))
    cc = F32(F32(F32(F32(1.0) * F32(1.0)) * F32(scale)) * LOG2E)
    m = np.full(sq, -np.inf, F32)
    for j0 in range(0, sk, 64):
        k[j0, dqk - 2:] = (0, four if j0 == 64 else 0)
        s_max = scores(q, k[j0:j0 + 1])[:, 0]
        m_blk = (s_max * cc).astype(F32)
        m_new = np.maximum(m, m_blk)
        kb = np.minimum(m_new - m_blk, F32(255)).astype(np.int64)
        for j in range(j0 + 1, min(j0 + 64, sk)):
            kk = np.repeat(k[j:j + 1], candidates, axis=0)
            kk[:, dqk - 2] = rng.choice(small[0], candidates)
            kk[:, dqk - 1] = rng.choice(small[1], candidates)
            if j0 == 64:
                kk[:, dqk - 1] = np.minimum(kk[:, dqk - 1].view(FN).astype(F32), F32(-4)).astype(FN).view(np.uint8)
            s = scores(q, kk)
            diff = lean_p_codes(lean_p_y(s, cc, m_new[:, None], kb[:, None], "spec")) != \
                lean_p_codes(lean_p_y(s, cc, m_new[:, None], kb[:, None], "two_step"))
            k[j] = kk[int(diff.sum(axis=0).argmax())]
        m = m_new
    v = (rng.standard_normal((1, sk, 1, D)).astype(F32) * F32(64)).astype(FN).view(np.uint8)
    return Case(name, q[None, :, None, :].copy(), k[None, :, None, :].copy(), v, causal, 1.0, 1.0, 1.0 / 64,
                scale=scale)
