"""The static cycle model of gfx950 (tools/gfx950isa/cycles.py; facts and sources in gfx950isa.table.TIMING):
pipe occupancy of MFMA/VALU/transcendental ops, accumulate chains, dependencies, s_nop, s_waitcnt against memory
latency, barriers and priorities with two waves, the calibration against ZYFA's published per-block figures,
and `gen_asm.py --cycles`. Every number is modelled, not measured."""
import pathlib
import subprocess
import sys


from gfx950isa import table
from gfx950isa.cycles import simulate, simulate_text
from gfx950isa.syntax import parse_items

ROOT = pathlib.Path(__file__).resolve().parents[2]
MFMA = "v_mfma_scale_f32_32x32x64_f8f6f4 v[0:15], v[16:23], v[24:31], v[0:15], v32, v33\n"


def test_accumulate_chain_keeps_the_matrix_pipe_full():
    r = simulate_text(MFMA * 8 + "s_endpgm\n")
    assert r.mfma_busy == 8 * 64 and r.cycles == 8 * 64 and r.mfma_busy_pct == 100.0
    assert r.flops == 8 * 2 * 32 * 32 * 64


def test_dependent_read_of_an_mfma_result_waits_for_it():
    r = simulate_text(MFMA + "v_add_f32_e32 v40, v0, v1\ns_endpgm\n")
    assert r.cycles == 64 + 4 + 4  # the VALU op issues when D is ready (64), then s_endpgm one slot later


def test_valu_trans_and_packed_costs():
    r = simulate_text("v_add_f32_e32 v1, v2, v3\n" * 4 + "v_exp_f32_e32 v4, v5\n" * 2 +
                      "v_pk_fma_f32 v[6:7], v[8:9], v[10:11], v[12:13]\ns_endpgm\n")
    assert r.valu_cycles == 4 * 4 + 2 * 8 + 4 and r.trans_cycles == 16


def test_nop_and_waitcnt_stall_the_wave():
    r = simulate_text("s_nop 3\ns_endpgm\n")
    assert r.cycles == 4 * 4 + 4
    r = simulate_text("buffer_load_dword v1, v0, s[4:7], 0 offen\ns_waitcnt vmcnt(0)\ns_endpgm\n")
    assert r.cycles >= table.TIMING["vmem"].latency


def test_two_waves_overlap_matrix_and_vector_work():
    """One wave's MFMAs run while the other wave's VALU ops issue; one wave alone serialises the VALU work that
    reads the MFMA result."""
    mf = MFMA * 4
    va = "v_add_f32_e32 v40, v0, v42\n" * 64
    one = simulate([parse_items(mf + va + "s_endpgm\n")])
    assert one.cycles == 4 * 64 + 64 * 4 + 4
    a = parse_items(mf + "s_barrier\ns_endpgm\n")
    b = parse_items(va + "s_barrier\ns_endpgm\n")
    two = simulate([a, b])
    assert two.cycles < 4 * 64 + 64 * 4 and two.mfma_busy == 4 * 64


def test_barrier_waits_for_every_wave_and_setprio_wins_ties():
    slow = parse_items("v_exp_f32_e32 v1, v2\n" * 10 + "s_barrier\nv_add_f32_e32 v3, v4, v5\ns_endpgm\n")
    fast = parse_items("s_barrier\nv_add_f32_e32 v3, v4, v5\ns_endpgm\n")
    tr = []
    simulate([slow, fast], trace=tr)
    fast_add = [t for t, w, x in tr if w == 1 and x.startswith("v_add")][0]
    assert fast_add >= 10 * 8
    a = parse_items("s_setprio 3\n" + "v_add_f32_e32 v1, v2, v3\n" * 4 + "s_endpgm\n")
    b = parse_items("s_nop 0\n" + "v_add_f32_e32 v1, v2, v3\n" * 4 + "s_endpgm\n")
    tr = []
    simulate([b, a], trace=tr)
    order = [w for t, w, x in tr if x.startswith("v_add")]
    assert order[:4] == [1, 1, 1, 1]


def test_loop_trip_counts():
    text = "s_mov_b32 s0, 0\n.Lx:\n" + MFMA + "s_add_u32 s0, s0, 1\ns_cmp_lt_u32 s0, 4\ns_cbranch_scc1 .Lx\ns_endpgm\n"
    assert simulate_text(text, trips={".Lx": 5}).mfma_busy == 5 * 64
    assert simulate_text(text).mfma_busy == 64


def test_executed_stream_from_the_emulator():
    """clang's kernels: the emulator's dynamic trace (the same Instr objects) is the stream."""
    from gfx950emu import Machine
    from gfx950emu.snippet import snippet_program
    prog = snippet_program("v_mov_b32_e32 v1, 1.0\n" + MFMA.replace("v[0:15], v[16:23]", "v[0:15], v[16:23]") * 0 +
                           "v_add_f32_e32 v2, v1, v1\nv_exp_f32_e32 v3, v2\n")
    rec = []
    m = Machine(prog)
    m.trace = lambda w, ins: rec.append(ins)
    name = next(iter(prog.kernels))
    m.launch(name, grid=(1, 1, 1), block=(64, 1, 1), kernarg=b"")
    r = simulate([rec], executed=True)
    assert r.instructions == len(rec) and r.trans_cycles == 8


def test_calibration_against_the_published_block_figures():
    from zyfa_gen.cycle_report import PUBLISHED, calibration
    c = calibration()
    assert c.matrix_cycles == PUBLISHED["matrix_cycles"]
    assert abs(c.exact_exp_vector_cycles - PUBLISHED["exact_exp_vector_cycles"]) <= 0.1 * 896
    assert abs(c.lean_p_vector_cycles - PUBLISHED["lean_p_vector_cycles"]) <= 0.1 * 384
    assert abs(c.busy_one_wave_pct - PUBLISHED["busy_one_wave_pct"]) <= 0.1 * 60
    # the per-row work of a complete block step costs the one-wave schedule, and stays within 10%
    assert c.busy_complete_one_wave_pct < c.busy_one_wave_pct
    assert abs(c.busy_complete_one_wave_pct - PUBLISHED["busy_one_wave_pct"]) <= 0.1 * 60
    # documented difference (docs/cycle-model.md): the ping-pong stream hides all vector work in the model
    assert c.busy_pingpong_pct > c.busy_one_wave_pct and c.busy_exact_pingpong_pct > c.busy_exact_one_wave_pct
    assert c.busy_complete_pingpong_pct > c.busy_complete_one_wave_pct


def test_gen_asm_cycles_prints_modelled_reports():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_asm.py"), "--cycles"], capture_output=True,
                       text=True, check=True)
    assert "zyfa_fp8_qk_block_32x128: modelled" in r.stdout and "(modelled, not measured)" in r.stdout
    assert "Lean P softmax vector cycles" in r.stdout and "published" in r.stdout
