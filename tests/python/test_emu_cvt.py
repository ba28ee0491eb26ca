"""fp8/bf8 conversion instructions of gfx950 against ml_dtypes (OCP E4M3FN / E5M2), including all 256 codes,
round-to-nearest-even midpoints, and the Semantics switches for the unverified overflow / half-write rules."""
import ml_dtypes
import numpy as np
import pytest

from gfx950emu import Semantics
from gfx950emu.snippet import run_snippet

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
CODES = np.arange(256, dtype=np.uint8)
E4M3 = CODES.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
E5M2 = CODES.view(ml_dtypes.float8_e5m2).astype(np.float32)


def _cvt_pk(values, fmt="fp8", sem=None, preset=0, op_sel_hi=False):
    """Converts pairs with v_cvt_pk_{fp8,bf8}_f32; returns the 32-bit results (one per pair)."""
    values = np.asarray(values, np.float32)
    out = []
    for i in range(0, len(values), 128):
        chunk = np.zeros(128, np.float32)
        part = values[i:i + 128]
        chunk[:len(part)] = part
        body = f"v_cvt_pk_{fmt}_f32 v0, v1, v2" + (" op_sel:[0,0,1]" if op_sel_hi else "")
        w = run_snippet(body, vgprs={0: np.uint32(preset), 1: chunk[0::2], 2: chunk[1::2]}, semantics=sem)
        out.append(w.v[0].copy())
    return np.concatenate(out)


def _bytes(words, n):
    lo = words & 0xFF
    hi = (words >> 8) & 0xFF
    return np.stack([lo, hi], axis=1).ravel()[:n].astype(np.uint8)


@pytest.mark.parametrize("fmt,table,dt", [("fp8", E4M3, ml_dtypes.float8_e4m3fn), ("bf8", E5M2, ml_dtypes.float8_e5m2)])
def test_cvt_pk_all_codes_and_midpoints(fmt, table, dt):
    finite = np.isfinite(table)
    vals = table[finite]
    # midpoints between consecutive finite positive values (ties: round to even) and 1/4 points
    pos = np.unique(vals[vals > 0])
    mids = (pos[:-1].astype(np.float64) + pos[1:]) / 2
    quarter = pos[:-1].astype(np.float64) + (pos[1:] - pos[:-1]) / 4
    x = np.concatenate([vals, mids, -mids, quarter, [0.1, -0.1, 1e-30, -1e-30]]).astype(np.float32)
    got = _bytes(_cvt_pk(x, fmt), len(x))
    want = x.astype(dt).view(np.uint8)
    bad = got != want
    assert not bad.any(), f"{bad.sum()} mismatches, e.g. x={x[bad][:4]} got={got[bad][:4]} want={want[bad][:4]}"


def test_cvt_pk_fp8_overflow_switch():
    x = np.array([449, 463.9, 464, 470, 1e6, np.inf, -1e6, -np.inf, np.nan, -np.nan], np.float32)
    nonsat = _bytes(_cvt_pk(x, "fp8"), len(x))
    sat = _bytes(_cvt_pk(x, "fp8", Semantics(fp8_overflow="saturate")), len(x))
    np.testing.assert_array_equal(nonsat[:8], [0x7E, 0x7E, 0x7E, 0x7F, 0x7F, 0x7F, 0xFF, 0xFF])
    np.testing.assert_array_equal(sat[:8], [0x7E, 0x7E, 0x7E, 0x7E, 0x7E, 0x7E, 0xFE, 0xFE])
    assert set(nonsat[8:]) <= {0x7F, 0xFF} and set(sat[8:]) <= {0x7F, 0xFF}  # NaN stays NaN


def test_cvt_pk_fp8_word_select_and_other_half():
    x = np.array([1.0, 2.0] * 64, np.float32)
    lo = _cvt_pk(x, "fp8", preset=0xAABBCCDD)
    hi = _cvt_pk(x, "fp8", preset=0xAABBCCDD, op_sel_hi=True)
    zero = _cvt_pk(x, "fp8", Semantics(cvt_pk_fp8_low_write="zero_high"), preset=0xAABBCCDD)
    assert (lo == 0xAABB4038).all()   # 1.0 = 0x38, 2.0 = 0x40; high half preserved (LLVM's view)
    assert (hi == 0x4038CCDD).all()   # op_sel:[0,0,1] writes the high half, keeps the low half
    assert (zero == 0x00004038).all()  # rocjitsu's model (gfx950-facts §8.13)


def test_cvt_f32_fp8_sdwa_bytes_and_pk_words():
    words = CODES.view(np.uint32)  # 64 words holding all 256 codes, byte j of word i = code 4i+j
    body = "\n".join(f"v_cvt_f32_fp8_sdwa v{10 + j}, v1 src0_sel:BYTE_{j}" for j in range(4)) + \
        "\nv_cvt_pk_f32_fp8_e32 v[20:21], v1\nv_cvt_pk_f32_fp8_sdwa v[22:23], v1 src0_sel:WORD_1" \
        "\nv_cvt_f32_bf8_sdwa v24, v1 src0_sel:BYTE_3"
    w = run_snippet(body, vgprs={1: words})
    got = np.stack([w.v[10 + j].view(np.float32) for j in range(4)], axis=1).ravel()
    same = (got == E4M3) | (np.isnan(got) & np.isnan(E4M3))
    assert same.all()
    np.testing.assert_array_equal(np.signbit(got), np.signbit(E4M3))  # -0 and -NaN keep their sign
    pk = np.stack([w.v[20].view(np.float32), w.v[21].view(np.float32),
                   w.v[22].view(np.float32), w.v[23].view(np.float32)], axis=1).ravel()
    assert ((pk == E4M3) | (np.isnan(pk) & np.isnan(E4M3))).all()
    b3 = w.v[24].view(np.float32)
    ref = E5M2[3::4]
    assert ((b3 == ref) | (np.isnan(b3) & np.isnan(ref))).all()


def test_cvt_scalef32_fp8_divides_and_multiplies_by_exponent():
    x = np.linspace(-100, 100, 64).astype(np.float32)
    scale = np.float32(8.0 * 1.75)  # only the exponent (2^3) is used
    w = run_snippet("v_cvt_scalef32_pk_fp8_f32 v0, v1, v2, v3\n"
                    "v_cvt_scalef32_pk_f32_fp8 v[4:5], v0, v3",
                    vgprs={0: 0, 1: x, 2: -x, 3: np.full(64, scale, np.float32)})
    want_lo = (x / 8).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    want_hi = (-x / 8).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    np.testing.assert_array_equal(w.v[0] & 0xFF, want_lo)
    np.testing.assert_array_equal((w.v[0] >> 8) & 0xFF, want_hi)
    np.testing.assert_array_equal(w.v[4].view(np.float32), want_lo.view(ml_dtypes.float8_e4m3fn).astype(np.float32) * 8)
    np.testing.assert_array_equal(w.v[5].view(np.float32), want_hi.view(ml_dtypes.float8_e4m3fn).astype(np.float32) * 8)
