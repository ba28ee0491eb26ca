"""FP8 loader/launcher headers (include/zyfa/fp8/gfx950/): the platform-free parts run on the host (g++), the HIP parts
compile for AMD (clang-22 host pass with HIP 5.2 headers + gfx950 device pass)."""
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

HOST_PROGRAM = r"""
#include <zyfa/fp8/gfx950/arch_name.hpp>
#include <zyfa/fp8/gfx950/qk_block.hpp>
#include <cstdio>
#include <cstddef>
using namespace zyfa::fp8;
alignas(16) static std::uint8_t buf[64];
static float out[4];
static void show(const char* tag, const zyfa::Status& s) { std::printf("%s|%d|%s\n", tag, (int)s.code, s.message.c_str()); }
int main() {
  std::printf("arch|%d|%d|%d|%d|%s\n", is_gfx950("gfx950:sramecc+:xnack-"), is_gfx950("gfx950"),
              is_gfx950("gfx942:sramecc+:xnack-"), is_gfx950(nullptr), arch_base_name("gfx9500:x").c_str());
  QkBlockArgs a{};
  a.q = buf; a.k = buf; a.q_scale = buf; a.k_scale = buf; a.s = out;
  a.q_stride = 128; a.k_stride = 256; a.s_stride = 128;
  show("ok", validate_qk_block(a));
  QkBlockArgs b = a; b.k = nullptr; show("nullk", validate_qk_block(b));
  b = a; b.q = buf + 1; show("alignq", validate_qk_block(b));
  b = a; b.s = reinterpret_cast<float*>(buf + 2); show("aligns", validate_qk_block(b));
  b = a; b.k_stride = 64; show("shortk", validate_qk_block(b));
  b = a; b.q_stride = 136; show("multq", validate_qk_block(b));
  b = a; b.k_stride = 0x2100000u; show("bigk", validate_qk_block(b));
  std::printf("size|%zu|%zu\n", sizeof(QkBlockArgs), offsetof(QkBlockArgs, s_stride));
  std::printf("co|%zu|%02x%02x%02x%02x\n", zyfa::fp8::gen::zyfa_fp8_qk_block_32x128_code_object_size,
              zyfa::fp8::gen::zyfa_fp8_qk_block_32x128_code_object[0], zyfa::fp8::gen::zyfa_fp8_qk_block_32x128_code_object[1],
              zyfa::fp8::gen::zyfa_fp8_qk_block_32x128_code_object[2], zyfa::fp8::gen::zyfa_fp8_qk_block_32x128_code_object[3]);
}
"""


@pytest.fixture(scope="module")
def host_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("fp8host")
    src = d / "t.cpp"
    src.write_text(HOST_PROGRAM)
    exe = d / "t"
    r = subprocess.run(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'include'}", str(src), "-o",
                        str(exe)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    return {line.split("|")[0]: line.split("|")[1:] for line in out.splitlines()}


def test_arch_name(host_run):
    assert host_run["arch"] == ["1", "1", "0", "0", "gfx9500"]


@pytest.mark.parametrize("tag,code,words", [
    ("ok", 0, ""),
    ("nullk", 1, "k: null pointer"),
    ("alignq", 1, "q: pointer not 16-byte aligned"),
    ("aligns", 1, "s: pointer not 4-byte aligned"),
    ("shortk", 1, "k_stride: 64 < 128"),
    ("multq", 1, "q_stride: 136 not a multiple of 16"),
    ("bigk", 2, "k_stride: tensor extent exceeds 4 GiB"),
])
def test_validate_qk_block(host_run, tag, code, words):
    c, msg = host_run[tag]
    assert int(c) == code
    assert words in msg


def test_struct_and_bytes_on_host(host_run):
    assert host_run["size"] == ["56", "48"]
    from zyfa_gen import generate
    _, _, co, _ = generate("zyfa_fp8_qk_block_32x128")
    assert host_run["co"] == [str(len(co)), co[:4].hex()]


def test_loader_compiles_for_amd():
    clang = shutil.which("clang++-22")
    assert clang, "clang++-22 is required (tools/ci/install_deps.sh)"
    rd = subprocess.run([clang, "-print-resource-dir"], capture_output=True, text=True, check=True).stdout.strip()
    flags = ["-x", "hip", "-nogpulib", "-nogpuinc", "-isystem", rd, "-D__HIP_PLATFORM_AMD__",
             "-D__AMDGCN_WAVEFRONT_SIZE=64", "-std=c++17", f"-I{ROOT / 'include'}", "-Wall", "-Wextra", "-Werror",
             "--offload-arch=gfx950"]
    tu = str(ROOT / "tests" / "fp8" / "fp8_loader_tu.hip")
    for mode in (["--cuda-host-only", "-fsyntax-only"], ["--cuda-device-only", "-S", "-o", "/dev/null"]):
        r = subprocess.run([clang, *flags, *mode, tu], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
