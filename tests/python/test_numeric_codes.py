"""zyfa's numeric conversions (include/zyfa/numeric/) against ml_dtypes, an independent implementation.

A small C++ program (tools/dump_codes/dump_codes.cpp) is compiled with the host compiler and prints zyfa's
results; these tests compare them with ml_dtypes on all 256 FP8 codes (decode), all 65,536 bf16 patterns
(decode) and on encode inputs chosen to hit every rounding tie, the saturation boundary, subnormals,
zeros, infinities and NaN, plus random fp32 values across the whole exponent range.
"""
import os
import pathlib
import shutil
import subprocess

import ml_dtypes
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FN = ml_dtypes.float8_e4m3fn
FNUZ = ml_dtypes.float8_e4m3fnuz
BF16 = ml_dtypes.bfloat16


@pytest.fixture(scope="module")
def dump_codes(tmp_path_factory):
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    assert cxx, "a C++ compiler (g++) is needed to build tools/dump_codes"
    exe = tmp_path_factory.mktemp("dump_codes") / "dump_codes"
    subprocess.run([cxx, "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'include'}",
                    str(ROOT / "tools" / "dump_codes" / "dump_codes.cpp"), "-o", str(exe)], check=True)
    return exe


def run(exe, mode, stdin=None):
    out = subprocess.run([str(exe), mode], input=stdin, capture_output=True, text=True, check=True).stdout
    return [line.split() for line in out.splitlines()]


def bits_to_f32(hexes):
    return np.array([int(h, 16) for h in hexes], dtype=np.uint32).view(np.float32)


def same_float(a, b):
    """Element-wise: equal bit patterns, or both NaN."""
    return (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))


def test_decode_all_256_codes(dump_codes):
    rows = run(dump_codes, "decode")
    assert [int(r[0], 16) for r in rows] == list(range(256))
    codes = np.arange(256, dtype=np.uint8)
    for col, fmt in ((1, FN), (2, FNUZ)):
        ours = bits_to_f32([r[col] for r in rows])
        ref = codes.view(fmt).astype(np.float32)
        bad = np.nonzero(~same_float(ours, ref))[0]
        assert bad.size == 0, f"{fmt.__name__}: codes {bad[:8]} decode to {ours[bad[:8]]}, ml_dtypes {ref[bad[:8]]}"
    # spot facts from the format tables, so a shared mistake with ml_dtypes cannot hide
    fn = bits_to_f32([r[1] for r in rows])
    fnuz = bits_to_f32([r[2] for r in rows])
    assert fn[0x7E] == 448 and fn[0x01] == 2.0**-9 and fn[0x38] == 1.0 and np.isnan(fn[0x7F]) and np.isnan(fn[0xFF])
    assert fn[0x80] == 0 and np.signbit(fn[0x80])
    assert fnuz[0x7F] == 240 and fnuz[0x01] == 2.0**-10 and fnuz[0x40] == 1.0 and np.isnan(fnuz[0x80])


def test_decode_all_bf16_patterns(dump_codes):
    rows = run(dump_codes, "bf16dec")
    assert len(rows) == 65536
    ours = bits_to_f32([r[1] for r in rows])
    ref = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(BF16).astype(np.float32)
    assert np.all(same_float(ours, ref))


def encode_inputs():
    """fp32 inputs: every representable e4m3 value of both formats, every midpoint (tie) and its two fp32
    neighbours, saturation boundaries, specials, bf16 ties, and random values over the exponent range."""
    vals = []
    for fmt in (FN, FNUZ):
        v = np.arange(256, dtype=np.uint8).view(fmt).astype(np.float32)
        v = np.sort(np.unique(v[np.isfinite(v) & (v >= 0)]))
        mids = ((v[:-1].astype(np.float64) + v[1:]) / 2).astype(np.float32)  # exact: few significant bits
        top = np.float32(v[-1] + (v[-1] - v[-2]) / 2)  # the tie above the largest finite value (464, 248)
        for arr in (v, mids, np.array([top], np.float32)):
            vals += [arr, np.nextafter(arr, np.float32(np.inf)), np.nextafter(arr, np.float32(0))]
    vals.append(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e30, -1e30, 3.4e38, 1e-40, -1e-40,
                          2.0**-10, 2.0**-11, 2.0**-12, 3 * 2.0**-11, 500, 479.9, 480, 1e6, 65504], np.float32))
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 2**32, size=20000, dtype=np.uint64).astype(np.uint32)
    vals.append(bits.view(np.float32))                                   # whole fp32 range incl. NaN
    vals.append((rng.standard_normal(20000) * 2.0 ** rng.integers(-14, 10, 20000)).astype(np.float32))
    ties = (rng.integers(0, 2**16, 4000, dtype=np.uint64).astype(np.uint32) << 16) | 0x8000  # bf16 ties
    vals.append(ties.view(np.float32))
    near_max = np.array([3.3895314e38, 3.3961776e38, 3.4028235e38], np.float32)  # bf16 max, tie above, fp32 max
    vals.append(near_max)
    x = np.concatenate([np.asarray(a, np.float32).ravel() for a in vals])
    return np.concatenate([x, -x])


def test_encode_matches_ml_dtypes(dump_codes):
    x = encode_inputs()
    rows = run(dump_codes, "encode", "\n".join(f"{b:08x}" for b in x.view(np.uint32)) + "\n")
    assert len(rows) == x.size
    got = np.array([[int(c, 16) for c in r] for r in rows], dtype=np.uint32)
    with np.errstate(invalid="ignore", over="ignore"):
        expected = {
            # ml_dtypes' cast is the non-saturating OCP mode; saturation = clip first (NaN passes through clip).
            0: np.clip(x, -448, 448).astype(FN).view(np.uint8),
            1: x.astype(FN).view(np.uint8),
            2: np.clip(x, -240, 240).astype(FNUZ).view(np.uint8),
            3: x.astype(FNUZ).view(np.uint8),
            4: x.astype(BF16).view(np.uint16),
        }
    names = ["e4m3fn saturate", "e4m3fn to_nan", "e4m3fnuz saturate", "e4m3fnuz to_nan", "bf16"]
    for col, ref in expected.items():
        ref = ref.astype(np.uint32)
        ok = got[:, col] == ref
        if col in (0, 1):  # e4m3fn has two NaNs (0x7F, 0xFF); only NaN-ness is specified for NaN inputs
            ok |= np.isnan(x) & ((got[:, col] & 0x7F) == 0x7F) & ((ref & 0x7F) == 0x7F)
        if col == 4:
            ok |= np.isnan(x) & ((got[:, col] & 0x7FFF) > 0x7F80) & ((ref & 0x7FFF) > 0x7F80)
        bad = np.nonzero(~ok)[0]
        assert bad.size == 0, (f"{names[col]}: {bad.size} mismatches, e.g. x={x[bad[:5]]} "
                               f"zyfa={[hex(v) for v in got[bad[:5], col]]} ml_dtypes={[hex(v) for v in ref[bad[:5]]]}")


def test_encode_documented_cases(dump_codes):
    """Facts stated in e4m3.hpp / bf16.hpp, written out by hand (independent of ml_dtypes)."""
    cases = {  # x: (fn sat, fn to_nan, fnuz sat, fnuz to_nan)
        448.0: (0x7E, 0x7E, 0x7F, 0x80), 464.0: (0x7E, 0x7E, 0x7F, 0x80), 465.0: (0x7E, 0x7F, 0x7F, 0x80),
        np.inf: (0x7E, 0x7F, 0x7F, 0x80), -np.inf: (0xFE, 0xFF, 0xFF, 0x80), 240.0: (0x77, 0x77, 0x7F, 0x7F),
        1.0625: (0x38, 0x38, 0x40, 0x40),  # tie between 1 and 1.125 -> even (1.0)
        1.1875: (0x3A, 0x3A, 0x42, 0x42),  # tie between 1.125 and 1.25 -> even (1.25)
        2.0**-10: (0x00, 0x00, 0x01, 0x01), 3 * 2.0**-10: (0x02, 0x02, 0x03, 0x03),
        -0.0: (0x80, 0x80, 0x00, 0x00), -(2.0**-12): (0x80, 0x80, 0x00, 0x00),
    }
    x = np.array(list(cases), np.float32)
    rows = run(dump_codes, "encode", "\n".join(f"{b:08x}" for b in x.view(np.uint32)) + "\n")
    for xi, r in zip(x, rows):
        assert tuple(int(c, 16) for c in r[:4]) == cases[float(xi)], f"x={xi}: {r}"
