"""Hazard checker against clang-22's own gfx950 output and against LLVM's hazard recognizer.

* clang's output (which LLVM has already padded with s_nops) has no violation;
* with its s_nops removed, the checker flags violations of each class the corpus exercises, and the padding the
  checker computes (program order) puts exactly LLVM's wait states in front of exactly the same instructions;
* the same comparison on the MIR level (llc -stop-before / -start-after post-RA-hazard-rec), which also proves
  that stripping s_nops from the final text equals "LLVM without its hazard pass";
* zyfa's BF16 attention kernel (tests/emu_kernels/bf16_attention.hip): clean, and padded exactly as LLVM pads it;
* every HIP translation unit registered for gfx950 in tools/ci/compile_device.sh (zyfa's kernels, as they land)
  compiles to hazard-free code.
"""
import pathlib
import re
import subprocess

import pytest

from gfx950hazard import Instr, check_text, parse
from gfx950hazard.checker import required_nops
from gfx950hazard.llvm_oracle import asm_pair, compare, hip_flags, mir_asm_pair, CLANG

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS_DIR = ROOT / "tools" / "gfx950hazard" / "corpus"
CORPUS = CORPUS_DIR / "mfma_kernels.hip"
TARGETED = CORPUS_DIR / "targeted.hip"
# zyfa's BF16 forward attention kernel (include/zyfa/bf16, hd 128 and 192/128) as the emulator tests compile it
BF16_ATTENTION = ROOT / "tests" / "emu_kernels" / "bf16_attention.hip"
NOP_LINE = re.compile(r"(?m)^\s*s_nop\s+\d+\s*(;.*)?\n")


def _clang_s(path: pathlib.Path, extra=()) -> str:
    r = subprocess.run([CLANG, *hip_flags([ROOT / "include"]), *extra, "-S", str(path), "-o", "-"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def _nop_positions(text: str) -> dict:
    """index (among non-nop instructions) -> wait states of the s_nops right before it."""
    out, pend, k = {}, 0, 0
    for x in parse(text):
        if not isinstance(x, Instr):
            continue
        if x.kind == "nop":
            pend += x.wait_states()
        else:
            if pend:
                out[k] = pend
            pend, k = 0, k + 1
    return out


@pytest.fixture(scope="module")
def corpus_s():
    return _clang_s(CORPUS)


def test_clang_output_is_clean(corpus_s):
    assert "v_mfma_scale_f32_32x32x64_f8f6f4" in corpus_s
    assert check_text(corpus_s) == []


def test_stripped_nops_are_caught_and_padding_matches_llvm(corpus_s):
    stripped = NOP_LINE.sub("", corpus_s)
    assert "s_nop" not in stripped
    want = _nop_positions(corpus_s)
    assert len(want) >= 10
    assert required_nops(parse(stripped)) == want
    rules = {v.rule for v in check_text(stripped)}
    assert {"mfma_d_to_read", "mfma_d_to_valu_write", "mfma_srcc_to_valu_write", "valu_vgpr_to_mfma",
            "valu_sgpr_to_valu", "valu_vgpr_to_readlane", "valu_vgpr_to_permlane",
            "store_data_to_valu_write"} <= rules


@pytest.mark.parametrize("hip,min_sites", [(CORPUS, 10), (TARGETED, 5), (BF16_ATTENTION, 50)],
                         ids=["mfma_kernels", "targeted", "bf16_attention"])
def test_agrees_with_llvm_hazard_recognizer_on_mir(hip, min_sites):
    assert hip.exists(), f"{hip} is missing (moved? update this test's path)"
    nonop, withnop = asm_pair(hip, [ROOT / "include"])
    assert check_text(withnop) == []
    n_llvm, mismatches = compare(nonop, withnop)
    assert n_llvm >= min_sites
    assert mismatches == []


def test_targeted_corpus_classes():
    nonop, _ = asm_pair(TARGETED, [ROOT / "include"])
    rules = {v.rule for v in check_text(nonop)}
    assert {"partial_dst_to_valu", "valu_sgpr_to_vmem", "valu_sgpr_to_lanesel", "dot_to_read",
            "vgpr_def_to_dpp"} <= rules


def test_agrees_with_llvm_on_handwritten_mir_pairs():
    """One MIR function per rule pair (corpus/rules.mir); LLVM pads each, the checker must pad identically."""
    mir = CORPUS_DIR / "rules.mir"
    n_funcs = mir.read_text().count("\nname: ")
    nonop, withnop = mir_asm_pair(mir)
    n_llvm, mismatches = compare(nonop, withnop)
    assert n_llvm == n_funcs == 20
    assert mismatches == []
    rules = {v.rule for v in check_text(nonop)}
    assert len(rules) >= 17, rules


def _registered_gfx950_tus():
    text = (ROOT / "tools" / "ci" / "compile_device.sh").read_text()
    block = text[text.index("DEVICE_TUS=("):]
    block = block[:block.index("\n)")]
    out = []
    for m in re.finditer(r'"([^"|]+)\|([^"|]*)\|([^"]*)"', block):
        path, targets = m.group(1), m.group(2)
        if (not targets or "gfx950" in targets.split(",")) and path.endswith((".hip", ".cpp", ".cu")):
            out.append((path, m.group(3).split()))
    return out


@pytest.mark.parametrize("tu,extra", _registered_gfx950_tus())
def test_registered_zyfa_kernels_are_hazard_free(tu, extra):
    s = _clang_s(ROOT / tu, extra)
    assert check_text(s) == []
