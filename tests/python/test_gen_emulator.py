"""The generated FP8 kernel zyfa_fp8_qk_block_32x128 (asm/*.s, as checked in) run in the gfx950 CPU emulator
(tools/gfx950emu) against numpy: exact for integer-valued inputs, fp32-accumulation tolerance for full-range e4m3fn
values with per-row/per-block E8M0 scales != 127. The emulator runs the same text that llvm-mc assembles into
the embedded code object."""
import pathlib
import struct

import ml_dtypes
import numpy as np
import pytest

from gfx950emu import Machine, Program, Semantics

ROOT = pathlib.Path(__file__).resolve().parents[2]
NAME = "zyfa_fp8_qk_block_32x128"
E4M3 = ml_dtypes.float8_e4m3fn


# The MFMA's internal summation order is undocumented (gfx950-facts.md §7.8): every test runs under each of the
# emulator's orders. Where the spec defines the bits (integer-valued inputs: every partial sum exact in fp32) the
# result is bit-exact under all of them; elsewhere the error is bounded by n * 2^-24 * sum|terms|, n = the most
# roundings one term passes through (recursive summation bound, Higham, "Accuracy and Stability of Numerical
# Algorithms", 2nd ed., §4.2): fp64 2 (one per MFMA of the 2-step chain), fp32_block 36 (31 in a 32-term block
# sum, + 1 per block added into the accumulator over 2 MFMAs x 2 blocks, + 1), fp32_seq 129 (128 products and C).
ACCUMULATE_BOUND_N = {"fp64": 2, "fp32_seq": 129, "fp32_block": 36}


@pytest.fixture(scope="module", params=sorted(ACCUMULATE_BOUND_N))
def program(request):
    prog = Program.from_asm_text((ROOT / "asm" / f"{NAME}.s").read_text(),
                                 Semantics(mfma_accumulate=request.param))
    prog.accumulate = request.param
    return prog


def _run(program, q8, k8, qs, ks, q_stride=128, k_stride=128, s_stride=128, canary=np.float32(-7.25)):
    """Run the kernel; q8/k8 are uint8 [rows, stride] buffers (only the first 128 columns are data)."""
    m = Machine(program)
    qa, ka = m.upload(np.ascontiguousarray(q8)), m.upload(np.ascontiguousarray(k8))
    qsa, ksa = m.upload(np.ascontiguousarray(qs)), m.upload(np.ascontiguousarray(ks))
    s_init = np.full((32, s_stride), canary, np.float32)
    sa = m.upload(s_init)
    kernarg = struct.pack("<QQQQQIII4x", qa, ka, qsa, ksa, sa, q_stride, k_stride, s_stride)
    assert len(kernarg) == 56
    m.launch(NAME, grid=(1, 1, 1), block=(64, 1, 1), kernarg=kernarg)
    return m.download(sa, np.float32, (32, s_stride))


def _reference(qv, kv, qs, ks):
    """float64 S[m, n] = sum_b 2^(qs[m,b] + ks[n,b] - 254) * sum_{d in block b} q[m,d] k[n,d]."""
    out = np.zeros((32, 128))
    for b in range(4):
        blk = qv[:, 32 * b:32 * b + 32].astype(np.float64) @ kv[:, 32 * b:32 * b + 32].astype(np.float64).T
        out += blk * np.exp2(qs[:, b:b + 1].astype(np.float64) + ks[:, b].astype(np.float64)[None, :] - 254)
    return out


def _fp8(x):
    return np.asarray(x, np.float32).astype(E4M3)


def test_integer_inputs_unit_scales_exact(program):
    rng = np.random.default_rng(1)
    qv = _fp8(rng.integers(-8, 9, (32, 128)))
    kv = _fp8(rng.integers(-8, 9, (128, 128)))
    qs = np.full((32, 4), 127, np.uint8)
    ks = np.full((128, 4), 127, np.uint8)
    s = _run(program, qv.view(np.uint8), kv.view(np.uint8), qs, ks)
    want = qv.astype(np.float32) @ kv.astype(np.float32).T
    np.testing.assert_array_equal(s, want)


def test_integer_inputs_per_row_block_scales_exact(program):
    rng = np.random.default_rng(2)
    qv = _fp8(rng.integers(-2, 3, (32, 128)))
    kv = _fp8(rng.integers(-2, 3, (128, 128)))
    qs = rng.integers(124, 131, (32, 4)).astype(np.uint8)
    ks = rng.integers(124, 131, (128, 4)).astype(np.uint8)
    s = _run(program, qv.view(np.uint8), kv.view(np.uint8), qs, ks)
    ref = _reference(qv.astype(np.float32), kv.astype(np.float32), qs, ks)
    np.testing.assert_array_equal(s.astype(np.float64), ref)  # every partial sum is exact in fp32
    # negative controls: the scale lane/block mapping matters (swapped blocks, transposed roles)
    assert not np.array_equal(ref, _reference(qv.astype(np.float32), kv.astype(np.float32), qs[:, ::-1], ks))
    assert not np.array_equal(ref, _reference(qv.astype(np.float32), kv.astype(np.float32), qs,
                                              np.roll(ks, 1, axis=0)))


def test_full_range_values_scales_strides(program):
    rng = np.random.default_rng(3)
    codes_q = rng.integers(0, 256, (32, 160)).astype(np.uint8)
    codes_k = rng.integers(0, 256, (128, 144)).astype(np.uint8)
    for c in (codes_q, codes_k):  # no NaN codes in the data columns (0x7f, 0xff)
        c[(c & 0x7F) == 0x7F] = 0x3C
    codes_q[:, 128:] = 0x7F  # NaN in the padding columns: must never be read
    codes_k[:, 128:] = 0xFF
    qs = rng.integers(120, 135, (32, 4)).astype(np.uint8)
    ks = rng.integers(120, 135, (128, 4)).astype(np.uint8)
    s = _run(program, codes_q, codes_k, qs, ks, q_stride=160, k_stride=144, s_stride=136)
    qv = codes_q[:, :128].view(E4M3).astype(np.float64)
    kv = codes_k[:, :128].view(E4M3).astype(np.float64)
    ref = _reference(qv, kv, qs, ks)
    mag = _reference(np.abs(qv), np.abs(kv), qs, ks)  # sum of |terms|: the fp32 accumulation error scale
    assert np.all(np.isfinite(s[:, :128]))
    bound = ACCUMULATE_BOUND_N[program.accumulate] * 2.0 ** -24
    assert np.all(np.abs(s[:, :128] - ref) <= bound * mag + 1e-30)
    assert np.all(s[:, 128:] == np.float32(-7.25))  # row padding of S untouched
    # the comparison can fail: a kernel that ignored the scales would be far off
    plain = qv @ kv.T
    assert np.max(np.abs(plain - ref) / (mag + 1e-30)) > 1e-2


def test_embedded_code_object_bytes_run_in_the_emulator(tmp_path):
    """The byte array shipped in include/zyfa/fp8/gfx950/*.inc (disassembled with its kernel descriptor and metadata by
    the emulator) computes the same S as the reference: the header, not only the .s, is checked."""
    import re
    inc = (ROOT / "include" / "zyfa" / "fp8" / "gfx950" / f"{NAME}.inc").read_text()
    body = inc[inc.index("_code_object["):]
    co = tmp_path / "k.co"
    co.write_bytes(bytes(int(x, 16) for x in re.findall(r"0x([0-9a-f]{2})", body)))
    prog = Program.from_code_object(str(co))
    rng = np.random.default_rng(4)
    qv = _fp8(rng.integers(-2, 3, (32, 128)))
    kv = _fp8(rng.integers(-2, 3, (128, 128)))
    qs = rng.integers(124, 131, (32, 4)).astype(np.uint8)
    ks = rng.integers(124, 131, (128, 4)).astype(np.uint8)
    s = _run(prog, qv.view(np.uint8), kv.view(np.uint8), qs, ks)
    np.testing.assert_array_equal(s.astype(np.float64),
                                  _reference(qv.astype(np.float32), kv.astype(np.float32), qs, ks))
