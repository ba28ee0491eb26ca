"""Cycle reports (all **modelled**) for the generated kernels and the calibration table of the cycle model.

``python3 tools/gen_asm.py --cycles`` prints both. The model is :mod:`gfx950isa.cycles`; its facts and sources are
:data:`gfx950isa.table.TIMING`; docs/cycle-model.md explains the calibration.
"""
from __future__ import annotations

import dataclasses

from gfx950isa import table
from gfx950isa.cycles import CycleReport, format_report, simulate
from gfx950isa.syntax import parse_items

from .calibration import block_step

__all__ = ["kernel_reports", "calibration", "PUBLISHED", "Calibration", "format_calibration"]

#: ZYFA's published per-block figures (one 32-query x 128-key FP8 hd128 block on MI355X; design notes,
#: "Published anchors").
PUBLISHED = {
    "matrix_cycles": 1024,
    "exact_exp_vector_cycles": 896,
    "lean_p_vector_cycles": 384,
    "busy_one_wave_pct": 60.0,
    "busy_pingpong_pct": 86.0,
}


@dataclasses.dataclass
class Calibration:
    """Steady-state per-block numbers of the calibration streams (difference of 9 and 8 loop iterations)."""
    matrix_cycles: float
    exact_exp_vector_cycles: float
    lean_p_vector_cycles: float
    busy_one_wave_pct: float
    busy_pingpong_pct: float
    busy_exact_one_wave_pct: float
    busy_exact_pingpong_pct: float
    cycles_one_wave: float
    cycles_pingpong_pair: float
    busy_complete_one_wave_pct: float = 0.0
    busy_complete_pingpong_pct: float = 0.0


def _streams(softmax: str, schedule: str, complete: bool = False) -> list:
    if schedule == "one_wave":
        return [parse_items(block_step(softmax, schedule, complete=complete))]
    return [parse_items(block_step(softmax, schedule, w, complete=complete)) for w in (0, 1)]


def _steady(softmax: str, schedule: str, complete: bool = False):
    st = _streams(softmax, schedule, complete)
    a = simulate(st, {".Lblock": 8})
    st = _streams(softmax, schedule, complete)
    b = simulate(st, {".Lblock": 9})
    cyc = b.cycles - a.cycles
    return cyc, (b.mfma_busy - a.mfma_busy), (b.valu_cycles - a.valu_cycles) / a.waves


def calibration() -> Calibration:
    lo_c, lo_m, lo_v = _steady("lean", "one_wave")
    lp_c, lp_m, _ = _steady("lean", "pingpong")
    eo_c, eo_m, eo_v = _steady("exact", "one_wave")
    ep_c, ep_m, _ = _steady("exact", "pingpong")
    co_c, co_m, _ = _steady("lean", "one_wave", True)
    cp_c, cp_m, _ = _steady("lean", "pingpong", True)
    return Calibration(matrix_cycles=lo_m, exact_exp_vector_cycles=eo_v, lean_p_vector_cycles=lo_v,
                       busy_one_wave_pct=100.0 * lo_m / lo_c, busy_pingpong_pct=100.0 * lp_m / lp_c,
                       busy_exact_one_wave_pct=100.0 * eo_m / eo_c, busy_exact_pingpong_pct=100.0 * ep_m / ep_c,
                       cycles_one_wave=lo_c, cycles_pingpong_pair=lp_c,
                       busy_complete_one_wave_pct=100.0 * co_m / co_c, busy_complete_pingpong_pct=100.0 * cp_m / cp_c)


def format_calibration(c: Calibration) -> str:
    rows = [("FP8 matrix cycles per block", c.matrix_cycles, PUBLISHED["matrix_cycles"]),
            ("exact-exp softmax vector cycles", c.exact_exp_vector_cycles, PUBLISHED["exact_exp_vector_cycles"]),
            ("Lean P softmax vector cycles", c.lean_p_vector_cycles, PUBLISHED["lean_p_vector_cycles"]),
            ("matrix-pipe busy %, one wave (Lean P)", c.busy_one_wave_pct, PUBLISHED["busy_one_wave_pct"]),
            ("matrix-pipe busy %, two-wave ping-pong (Lean P)", c.busy_pingpong_pct, PUBLISHED["busy_pingpong_pct"])]
    out = ["calibration (modelled, per 32x128 FP8 hd128 block, steady state) vs ZYFA published:"]
    for name, m, p in rows:
        d = 100.0 * (m - p) / p
        out.append(f"  {name:<50} model {m:8.1f}   published {p:8.1f}   {d:+6.1f}%  "
                   f"{'within 10%' if abs(d) <= 10 else 'DIFFERS (docs/cycle-model.md)'}")
    out.append(f"  (exact exp: busy {c.busy_exact_one_wave_pct:.1f}% one wave, {c.busy_exact_pingpong_pct:.1f}% "
               "ping-pong; modelled)")
    out.append(f"  (Lean P with the per-row work of a complete block step: busy {c.busy_complete_one_wave_pct:.1f}% one "
               f"wave, {c.busy_complete_pingpong_pct:.1f}% ping-pong; modelled)")
    peak = 2 * 32 * 32 * 64 / 64 * table.SIMDS * table.CLOCK_GHZ * 1e9 / 1e12
    out.append(f"  modelled steady-state TFLOP/s at {table.CLOCK_GHZ} GHz (FP8 peak {peak:.0f}): one wave "
               f"{peak * c.busy_one_wave_pct / 100:.0f}, ping-pong {peak * c.busy_pingpong_pct / 100:.0f} "
               "(block loop only: no prologue, epilogue, causal masking or memory limits; ZYFA published 2,672 "
               "end to end at 32K tokens)")
    return "\n".join(out)


def kernel_reports(generated: dict) -> list:
    """[(kernel name, waves, CycleReport)] for every generated kernel ({name: asm text}), one and two waves."""
    out = []
    for name, asm in generated.items():
        for waves in (1, 2):
            r: CycleReport = simulate([parse_items(asm) for _ in range(waves)])
            out.append((name, waves, r))
    return out


def report_lines(generated: dict) -> list:
    from .attention_cycles import attention_kernels, attention_report_lines
    lines = [format_report(n, r) for n, _, r in kernel_reports(generated)]
    lines += attention_report_lines(generated, attention_kernels())
    lines.append(format_calibration(calibration()))
    return lines
