"""bench/sass_issue_model.py: in-order issue of one warp, register dependencies, pipe throughputs, followed branches."""
import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("sass_issue_model", ROOT / "bench" / "sass_issue_model.py")
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)


def listing(*lines):
    return m.parse("\n".join(f"        /*{16 * i:04x}*/                   {t} ;   /* 0x000 */" for i, t in enumerate(lines)))


def cycles(ins, **kw):
    return [c for _, c, _ in m.model(ins, ins[0][0], ins[-1][0], **kw)]


def test_independent_fp32_issue_every_cycle():
    assert cycles(listing("FFMA R1, R2, R3, R4", "FFMA R5, R6, R7, R8", "FADD R9, R10, R11")) == [1, 2, 3]


def test_dependent_fp32_waits_for_the_latency():
    assert cycles(listing("FFMA R1, R2, R3, R4", "FADD R5, R1, R6")) == [1, 1 + m.DEFAULT_LATENCY]


def test_exponentials_one_per_eight_cycles_and_shared():
    ins = listing("MUFU.EX2 R1, R2", "MUFU.EX2 R3, R4", "MUFU.EX2 R5, R6")
    assert cycles(ins) == [1, 9, 17]
    assert cycles(ins, sfu_share=2) == [1, 17, 33]


def test_conversion_latency_on_the_special_function_unit():
    ins = listing("F2I.TRUNC.NTZ R1, R2", "I2FP.F32.S32 R3, R1", "FADD R4, R3, R5")
    assert cycles(ins) == [1, 1 + m.LATENCY["F2I"], 1 + m.LATENCY["F2I"] + m.LATENCY["I2FP"]]


def test_branches_taken_only_when_asked():
    ins = listing("@P0 BRA 0x20", "FADD R1, R2, R3", "FADD R4, R5, R6")
    assert len(m.model(ins, 0, 0x20)) == 2  # falls through
    assert [a for a, _, _ in m.model(ins, 0, 0x20, take={0})] == [0x20]


def test_addresses_must_exist():
    with pytest.raises(ValueError):
        m.model(listing("FADD R1, R2, R3"), 0, 0x40)
