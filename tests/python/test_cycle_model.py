"""The static cycle model of gfx950 (tools/gfx950isa/cycles.py; facts and sources in gfx950isa.table.TIMING):
pipe occupancy of MFMA/VALU/transcendental ops, accumulate chains, dependencies, s_nop, s_waitcnt against memory
latency, barriers and priorities with two waves, the calibration against ZYFA's published per-block figures,
and `gen_asm.py --cycles`. Every number is modelled, not measured."""
import pathlib
import re
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
    # the attention summary: one row per attention kernel, every number sane
    rows = {}
    for line in r.stdout.splitlines():
        m = re.match(r"\s+(zyfa_fp8_fwd_\w+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+"
                     r"([-\d.]+)\s+([-\d.]+)\s+(ZYFA .*)$", line)
        if m:
            rows[m.group(1)] = [float(x) for x in m.groups()[1:8]] + [m.group(9)]
    assert set(rows) == {"zyfa_fp8_fwd_d128_m32", "zyfa_fp8_fwd_d192_dv128_m32"}, r.stdout
    for name, (b1, b2, valu, t16, t32, t16s, t32s, pub) in rows.items():
        assert 0 < b1 <= 100 and 0 < b2 <= 100 and b2 >= b1, name
        assert valu > 0
        assert min(t16, t32, t16s, t32s) > 0
        assert abs(t16s / t16 - 1.63 / 2.4) < 1e-2 and abs(t32s / t32 - 1.63 / 2.4) < 1e-2  # clock scales time
        assert max(t16, t32) < 5034  # below the FP8 peak at 2.4 GHz
    assert "2,672" in rows["zyfa_fp8_fwd_d128_m32"][-1]
    assert "2,464" in rows["zyfa_fp8_fwd_d192_dv128_m32"][-1] and "1,237" in rows["zyfa_fp8_fwd_d192_dv128_m32"][-1]
    assert r.stdout.count("(modelled, not measured)") >= 10


def test_attention_cycle_model_of_the_generated_kernels():
    from zyfa_gen.attention_cycles import _blocks, attention_cycles, loop_valu_mix, problem_tflops
    # the kernel's block split: causal, seqlen 200: tiles 0..6; every key block counted once per row range
    assert [_blocks(t, 200, True) for t in range(7)] == [(0, 1), (0, 1), (1, 1), (1, 1), (2, 1), (2, 1), (3, 1)]
    assert [_blocks(t, 200, False) for t in range(7)] == [(3, 1)] * 7
    res = {}
    for name, d in (("zyfa_fp8_fwd_d128_m32", 128), ("zyfa_fp8_fwd_d192_dv128_m32", 192)):
        asm = (ROOT / "asm" / f"{name}.s").read_text()
        c = attention_cycles(name, asm, d, 128)
        res[d] = c
        # per 64-key full block: 2 x (d / 64) QK MFMAs + 4 P.V MFMAs + the l_blk MFMA, 64 matrix cycles each;
        # the FLOPs count the attention's MFMAs only
        assert c.mfma_cycles_block == 64 * (2 * d // 64 + 5)
        assert all(c.attention_busy_pct[w] < c.full_busy_pct[w] for w in (1, 2))
        assert c.flops_block == 2 * 32 * 32 * 64 * (2 * d // 64 + 4)
        for w in (1, 2):
            assert 0 < c.full_busy_pct[w] <= 100 and c.full_cycles[w] > 0 and c.masked_cycles[w] > 0
            assert c.rest_cycles[w] > 0
        assert c.full_cycles[2] < 2 * c.full_cycles[1]  # two waves overlap something
        assert c.waves_per_simd == 2  # about 200 VGPRs: two waves fit the 512-entry file
        mix = loop_valu_mix(asm)
        assert sum(cyc for _, _, cyc in mix) == c.valu_cycles_block
        tf16, ms16 = problem_tflops(c, 16384, 2.4)
        tf32, ms32 = problem_tflops(c, 32768, 2.4)
        assert 0 < tf16 < tf32 < c.loop_tflops(2, 2.4) * 1.01  # fixed costs weigh less at 32K; never above the loop
        assert ms32 > 3 * ms16  # causal work grows 4x
    assert res[192].mfma_cycles_block > res[128].mfma_cycles_block
    # bench/results.csv's modelled rows are the model's current figures for the checked-in kernels
    import csv
    with open(ROOT / "bench" / "results.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["device"] == "MI355X (modelled)"]
    assert len(rows) == 4
    for r in rows:
        assert (r["impl"], r["dtype"], r["causal"], r["batch"], r["num_heads"]) == ("zyfa", "e4m3fn", "1", "1", "16")
        c = res[int(r["head_dim_qk"])]
        tf, ms = problem_tflops(c, int(r["seqlen_q"]), 2.4)
        assert abs(float(r["tflops"]) - tf) <= 0.051 and abs(float(r["median_ms"]) - ms) <= 5.1e-5, r


def test_pingpong_groups_alternate_matrix_phases():
    """The two waves of a SIMD (one per ping-pong group) issue their QK and P V MFMAs in alternate phases: in the
    modelled period, group A's fall in the first phase and group B's in the second; in its vector phase a wave
    issues only the l_blk MFMA (one, 2 columns of 32 cycles; modelled, not measured)."""
    from zyfa_gen.attention_cycles import pingpong_timeline
    asm = (ROOT / "asm" / "zyfa_fp8_fwd_d128_m32.s").read_text()
    lines = pingpong_timeline(asm, bucket=32)
    a = next(ln for ln in lines if ln.startswith("A (waves 0-3) MATRIX"))[22:]
    b = next(ln for ln in lines if ln.startswith("B (waves 4-7) MATRIX"))[22:]
    bars = [i for i, ch in enumerate(next(ln for ln in lines if ln.startswith("A (waves 0-3) barrier"))[22:])
            if ch == "|"]
    assert len(bars) == 2 and "M" in a and "M" in b
    mid = bars[1]
    assert a[:mid].count("M") >= 16 and b[mid:].count("M") >= 16  # 8 MFMAs (hd128) of 2 columns each
    assert a[mid + 2:].count("M") <= 2 and b[:mid].count("M") <= 2
