"""zyfa's own numeric conversions (include/zyfa/numeric: float -> e4m3fn / e4m3fnuz / bf16 and back), compiled
for gfx950 by clang-22 (tests/host/numeric_device.hip, the device-compile check of the numeric headers) and
run in the gfx950 emulator, give bit-identical results to the same headers compiled for the host by g++, on
every e4m3 code, every round-to-nearest-even midpoint, overflow/special values and random floats. The e4m3fn
saturating results are also checked against ml_dtypes."""
import pathlib
import struct
import subprocess

import ml_dtypes
import numpy as np

from gfx950emu import Machine, Program
from gfx950emu.toolchain import compile_hip_to_asm

ROOT = pathlib.Path(__file__).resolve().parents[2]
HOST_SRC = r"""
#include <cstdio>
#include <vector>
#include <zyfa/numeric/bf16.hpp>
#include <zyfa/numeric/e4m3.hpp>
int main(int argc, char** argv) {
  std::FILE* f = std::fopen(argv[1], "rb");
  std::vector<float> x(1 << 20);
  const size_t n = std::fread(x.data(), 4, x.size(), f);
  std::fclose(f);
  std::FILE* o = std::fopen(argv[2], "wb");
  for (size_t i = 0; i < n; ++i) {
    unsigned char fn = zyfa::float_to_e4m3fn(x[i]);
    unsigned char fnuz = zyfa::float_to_e4m3fnuz(x[i], zyfa::Fp8Overflow::to_nan);
    unsigned short bf = zyfa::float_to_bf16(x[i]);
    float back = zyfa::e4m3fn_to_float(fn) + zyfa::e4m3fnuz_to_float(fnuz) + zyfa::bf16_to_float(bf);
    std::fwrite(&fn, 1, 1, o); std::fwrite(&fnuz, 1, 1, o); std::fwrite(&bf, 2, 1, o); std::fwrite(&back, 4, 1, o);
  }
  std::fclose(o);
}
"""


def inputs():
    codes = np.arange(256, dtype=np.uint8)
    fn = codes.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    fnuz = codes.view(ml_dtypes.float8_e4m3fnuz).astype(np.float64)
    vals = []
    for t in (fn, fnuz):
        p = np.unique(t[np.isfinite(t) & (t > 0)])
        vals += [t[np.isfinite(t)], (p[:-1] + p[1:]) / 2, -(p[:-1] + p[1:]) / 2]
    rng = np.random.default_rng(11)
    vals += [np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 239.99, 240, 247.9, 248, 256, 447, 448, 449, 464,
                       465, 1e30, -1e30, 1e-40, 2.0 ** -10, 3 * 2.0 ** -10, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8]),
             rng.standard_normal(1500) * 50, rng.standard_normal(500) * 1e-3]
    x = np.concatenate(vals).astype(np.float32)
    pad = (-len(x)) % 256
    return np.concatenate([x, np.zeros(pad, np.float32)])


def test_device_conversions_match_host(tmp_path):
    x = inputs()
    # host reference (g++)
    src = tmp_path / "host.cpp"
    src.write_text(HOST_SRC)
    exe = tmp_path / "host"
    subprocess.run(["g++", "-std=c++17", "-O1", f"-I{ROOT / 'include'}", str(src), "-o", str(exe)], check=True)
    (tmp_path / "x.bin").write_bytes(x.tobytes())
    subprocess.run([str(exe), str(tmp_path / "x.bin"), str(tmp_path / "ref.bin")], check=True)
    rec = np.fromfile(tmp_path / "ref.bin", dtype=[("fn", "u1"), ("fnuz", "u1"), ("bf", "<u2"), ("back", "<f4")])
    # device (gfx950 code in the emulator)
    text = compile_hip_to_asm(str(ROOT / "tests" / "host" / "numeric_device.hip"), str(tmp_path / "n.s"),
                              include_dirs=[str(ROOT / "include")])
    prog = Program.from_asm_text(text)
    (name,) = [k for k in prog.kernels if "zyfa_numeric_roundtrip" in k]
    m = Machine(prog)
    n = len(x)
    px, pfn, pfnuz = m.upload(x), m.alloc(n), m.alloc(n)
    pbf, pback = m.alloc(2 * n), m.alloc(4 * n)
    for off in range(0, n, 256):
        m.launch(name, block=(256, 1, 1),
                 kernarg=struct.pack("<5Q", px + 4 * off, pfn + off, pfnuz + off, pbf + 2 * off, pback + 4 * off))
    fn = m.download(pfn, np.uint8, (n,))
    fnuz = m.download(pfnuz, np.uint8, (n,))
    bf = m.download(pbf, np.uint16, (n,))
    back = m.download(pback, np.uint32, (n,))
    np.testing.assert_array_equal(fn, rec["fn"])
    np.testing.assert_array_equal(fnuz, rec["fnuz"])
    np.testing.assert_array_equal(bf, rec["bf"])
    np.testing.assert_array_equal(back, rec["back"].view(np.uint32))
    # independent check of the saturating e4m3fn conversion and of bf16 RNE
    sat = np.where(np.isnan(x), x, np.clip(x, -448, 448)).astype(np.float32)
    want = sat.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    ok = ~np.isnan(x)
    np.testing.assert_array_equal(fn[ok], want[ok])
    np.testing.assert_array_equal(bf[ok], x[ok].astype(ml_dtypes.bfloat16).view(np.uint16))
