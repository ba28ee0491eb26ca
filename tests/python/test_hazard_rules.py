"""gfx950 hazard checker: every rule fires at need-1 wait states and is quiet at need (tools/gfx950hazard).

Each case is a real gfx950 instruction pair (the snippets are assembled with llvm-mc-22 once, so the syntax is
what LLVM accepts) with the wait-state count from gfx950-facts.md §3. Wait states are provided both as s_nop N
(N+1 each) and as independent instructions (1 each).
"""
import shutil
import subprocess

import pytest

from gfx950hazard import RULES, check_text, mfma_read_wait
from gfx950hazard.checker import required_nops

# (rule, producer, consumer, need)
CASES = [
    ("valu_vgpr_to_mfma", "v_mov_b32_e32 v0, 1", "v_mfma_f32_32x32x16_bf16 v[16:31], v[0:3], v[4:7], 0", 2),
    ("valu_vgpr_to_mfma", "v_accvgpr_write_b32 a4, v9", "v_mfma_f32_32x32x16_bf16 v[16:31], v[0:3], a[4:7], 0", 2),
    ("valu_vgpr_to_mfma", "v_mov_b32_e32 v40, 127",
     "v_mfma_scale_f32_32x32x64_f8f6f4 v[0:15], v[16:23], v[24:31], 0, v40, v41 op_sel_hi:[0,0,0]", 2),
    ("valu_exec_to_mfma", "v_cmpx_gt_u32_e32 vcc, v60, v61", "v_mfma_f32_32x32x16_bf16 v[16:31], v[0:3], v[4:7], 0", 4),
    ("mfma_d_to_srcc_overlap", "v_mfma_f32_32x32x16_bf16 v[0:15], v[32:35], v[36:39], 0",
     "v_mfma_f32_16x16x32_bf16 v[0:3], v[32:35], v[36:39], v[0:3]", 10),
    ("mfma_d_to_srcc_overlap", "v_mfma_scale_f32_32x32x64_f8f6f4 v[0:15], v[16:23], v[24:31], 0, v40, v41 op_sel_hi:[0,0,0]",
     "v_mfma_f32_16x16x32_bf16 v[4:7], v[32:35], v[36:39], v[4:7]", 18),
    ("mfma_d_to_srcab", "v_mfma_scale_f32_32x32x64_f8f6f4 v[0:15], v[16:23], v[24:31], 0, v40, v41 op_sel_hi:[0,0,0]",
     "v_mfma_f32_32x32x16_bf16 v[48:63], v[0:3], v[36:39], 0", 20),
    ("mfma_d_to_srcab", "v_mfma_f32_16x16x32_bf16 v[0:3], v[32:35], v[36:39], 0",
     "v_mfma_f32_16x16x32_bf16 v[4:7], v[32:35], v[0:3], 0", 8),
    ("mfma_d_to_read", "v_mfma_f32_16x16x32_bf16 v[0:3], v[32:35], v[36:39], 0", "global_store_dword v40, v1, s[0:1]", 8),
    ("mfma_d_to_read", "v_mfma_f32_32x32x16_bf16 a[0:15], v[32:35], v[36:39], 0", "v_accvgpr_read_b32 v50, a7", 12),
    ("mfma_d_to_read", "v_mfma_scale_f32_32x32x64_f8f6f4 v[0:15], v[16:23], v[24:31], 0, v40, v41 op_sel_hi:[0,0,0]",
     "v_max_f32_e32 v50, v15, v15", 20),
    ("mfma_d_to_read", "v_mfma_f32_32x32x16_bf16 v[0:15], v[32:35], v[36:39], 0", "ds_write_b32 v40, v3", 12),
    ("mfma_d_to_valu_write", "v_mfma_f32_32x32x16_bf16 v[0:15], v[32:35], v[36:39], 0", "v_mov_b32_e32 v3, 0", 12),
    ("mfma_srcc_to_valu_write",
     "v_mfma_scale_f32_32x32x64_f8f6f4 v[48:63], v[16:23], v[24:31], v[0:15], v40, v41 op_sel_hi:[0,0,0]",
     "v_mov_b32_e32 v5, 0", 15),
    ("mfma_srcc_to_valu_write", "v_mfma_f32_16x16x32_bf16 v[4:7], v[32:35], v[36:39], v[0:3]", "v_mov_b32_e32 v2, 0", 3),
    ("valu_sgpr_to_valu", "v_cmp_gt_f32_e64 s[4:5], v1, v2", "v_cndmask_b32_e64 v3, v4, v5, s[4:5]", 2),
    ("valu_sgpr_to_valu", "v_cmp_gt_f32_e32 vcc, v1, v2", "v_cndmask_b32_e32 v3, v4, v5, vcc", 2),
    ("valu_sgpr_to_vmem", "v_readfirstlane_b32 s8, v1", "buffer_load_dword v2, v3, s[4:7], s8 offen", 5),
    ("valu_sgpr_to_vmem", "v_readfirstlane_b32 s6, v1", "global_load_dword v2, v3, s[6:7]", 5),
    ("valu_sgpr_to_lanesel", "v_readfirstlane_b32 s8, v1", "v_readlane_b32 s9, v2, s8", 4),
    ("valu_exec_to_rwlane", "v_cmpx_gt_u32_e32 vcc, v1, v2", "v_readfirstlane_b32 s9, v3", 4),
    ("valu_vgpr_to_readlane", "v_mov_b32_e32 v3, 1", "v_readfirstlane_b32 s9, v3", 1),
    ("trans_to_valu", "v_exp_f32_e32 v1, v2", "v_add_f32_e32 v3, v1, v1", 1),
    ("trans_to_valu", "v_rcp_f32_e32 v1, v2", "v_fma_f32 v3, v1, v4, 1.0", 1),
    ("partial_dst_to_valu", "v_cvt_pk_fp8_f32 v1, v2, v3 op_sel:[0,0,1]", "v_add_u32_e32 v4, v1, v1", 1),
    ("partial_dst_to_valu", "v_mov_b32_sdwa v1, v2 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:DWORD",
     "v_add_u32_e32 v4, v1, v1", 1),
    ("store_data_to_valu_write", "global_store_dwordx4 v0, v[4:7], s[0:1]", "v_mov_b32_e32 v5, 0", 2),
    ("store_data_to_valu_write", "buffer_store_dwordx4 v[4:7], v0, s[0:3], 0 offen", "v_mov_b32_e32 v7, 0", 2),
    ("salu_m0_to_m0_reader", "s_mov_b32 m0, s2", "buffer_load_dword v1, s[4:7], 0 offen lds", 1),
    ("valu_vgpr_to_permlane", "v_mov_b32_e32 v1, 0", "v_permlane32_swap_b32_e32 v1, v2", 2),
    ("valu_exec_to_permlane", "v_cmpx_gt_u32_e32 vcc, v10, v11", "v_permlane16_swap_b32_e32 v1, v2", 4),
    ("setreg_to_getreg", "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 0, 4), 3", "s_getreg_b32 s0, hwreg(HW_REG_MODE, 0, 4)", 2),
    ("valu_vcc_to_div_fmas", "v_cmp_gt_f32_e32 vcc, v1, v2", "v_div_fmas_f32 v5, v6, v7, v8", 4),
    ("dot_to_read", "v_dot2_f32_bf16 v1, v2, v3, v4", "v_add_f32_e32 v5, v1, v1", 3),
    ("vgpr_def_to_dpp", "v_mul_f32_e32 v2, 4.0, v1",
     "v_add_f32_dpp v1, v2, v1 row_shr:1 row_mask:0xf bank_mask:0xf bound_ctrl:1", 2),
    ("vgpr_def_to_dpp", "global_load_dword v3, v0, s[0:1]",
     "v_mov_b32_dpp v3, v5 row_shr:1 row_mask:0xf bank_mask:0xf", 2),
    ("valu_exec_to_dpp", "v_cmpx_gt_u32_e32 vcc, v60, v61",
     "v_mov_b32_dpp v3, v5 row_shr:1 row_mask:0xf bank_mask:0xf", 5),
    ("dot_to_read", "v_dot2_f32_bf16 v1, v2, v3, v4", "v_dot2_f32_bf16 v5, v1, v3, v4", 3),
    ("dot_to_read", "v_dot2c_f32_bf16_e32 v1, v2, v3", "global_store_dword v40, v1, s[0:1]", 3),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]


def _nops(ws: int) -> list:
    out = []
    while ws > 0:
        n = min(ws, 16)
        out.append(f"s_nop {n - 1}")
        ws -= n
    return out


def _prog(prod, cons, ws, filler=False):
    mid = [f"v_mov_b32_e32 v{200 + (i % 40)}, 0" for i in range(ws)] if filler else _nops(ws)
    return "\n".join([prod, *mid, cons, "s_endpgm"]) + "\n"


def test_every_rule_has_a_case():
    assert {c[0] for c in CASES} == set(RULES)


@pytest.mark.parametrize("rule,prod,cons,need", CASES, ids=IDS)
def test_rule_boundary(rule, prod, cons, need):
    short = check_text(_prog(prod, cons, need - 1))
    assert rule in {v.rule for v in short}, short
    v = [v for v in short if v.rule == rule][0]
    assert (v.need, v.have) == (need, need - 1)
    assert [v for v in check_text(_prog(prod, cons, need)) if v.rule == rule] == []


@pytest.mark.parametrize("rule,prod,cons,need", [c for c in CASES if c[0] not in ("mfma_d_to_valu_write",
                                                                                  "mfma_srcc_to_valu_write",
                                                                                  "store_data_to_valu_write")],
                         ids=[i for c, i in zip(CASES, IDS) if c[0] not in ("mfma_d_to_valu_write",
                                                                             "mfma_srcc_to_valu_write",
                                                                             "store_data_to_valu_write")])
def test_independent_instructions_count_one_each(rule, prod, cons, need):
    # filler writes v200..v239, which no case reads or writes
    assert rule in {v.rule for v in check_text(_prog(prod, cons, need - 1, filler=True))}
    assert rule not in {v.rule for v in check_text(_prog(prod, cons, need, filler=True))}


def test_snippets_assemble_with_llvm_mc(tmp_path):
    mc = shutil.which("llvm-mc-22")
    assert mc, "llvm-mc-22 is required (tools/ci/install_deps.sh installs llvm-22)"
    src = tmp_path / "cases.s"
    src.write_text("".join(f"{p}\n{c}\n" for _, p, c, _ in CASES) + "s_nop 15\ns_endpgm\n")
    r = subprocess.run([mc, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx950", str(src), "-o", "/dev/null"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_mfma_read_wait_table():
    assert [mfma_read_wait(p) for p in (2, 4, 8, 16)] == [5, 8, 12, 20]


def test_identical_srcc_chain_needs_nothing():
    prog = ("v_mfma_scale_f32_32x32x64_f8f6f4 v[0:15], v[16:23], v[24:31], v[0:15], v40, v41 op_sel_hi:[0,0,0]\n"
            "v_mfma_scale_f32_32x32x64_f8f6f4 v[0:15], v[32:39], v[24:31], v[0:15], v40, v41 op_sel_hi:[0,0,0]\n"
            "s_endpgm\n")
    assert check_text(prog) == []


def test_dot_accumulate_chain_and_dot_to_mfma_need_nothing():
    # the same v_dot reading the previous result only as SrcC, and an MFMA reading a v_dot result (LLVM: 0)
    assert check_text("v_dot2_f32_bf16 v1, v2, v3, v4\nv_dot2_f32_bf16 v1, v5, v6, v1\ns_endpgm\n") == []
    assert check_text("v_dot2_f32_bf16 v0, v20, v21, v22\n"
                      "v_mfma_f32_32x32x16_bf16 v[16:31], v[0:3], v[4:7], 0\ns_endpgm\n") == []


def test_tied_accumulator_reads_its_destination():
    found = check_text("v_exp_f32_e32 v1, v2\nv_fmac_f32_e32 v1, v3, v4\ns_endpgm\n")
    assert [v.rule for v in found] == ["trans_to_valu"]


def test_loop_back_edge_hazard():
    # the MFMA at the loop's end is 1 wait state (the branch) before the loop head's VALU read of its D
    body = ["s_mov_b32 s0, 4", ".LOOP:", "v_add_f32_e32 v40, v3, v3", *_nops(16),
            "v_mfma_f32_32x32x16_bf16 v[0:15], v[32:35], v[36:39], v[0:15]", "s_sub_u32 s0, s0, 1",
            "s_cbranch_scc1 .LOOP", *_nops(12), "s_endpgm"]
    found = check_text("\n".join(body) + "\n")
    assert [(v.rule, v.have) for v in found] == [("mfma_d_to_read", 2)]
    # the same code with the read behind enough nops at the loop head is clean
    body.insert(2, "s_nop 9")
    assert check_text("\n".join(body) + "\n") == []


def test_branch_join_takes_shortest_path():
    prog = ["v_mfma_f32_16x16x32_bf16 v[0:3], v[32:35], v[36:39], 0", "s_cbranch_scc0 .LJOIN", *_nops(16),
            ".LJOIN:", "v_add_f32_e32 v40, v1, v1", "s_endpgm"]
    found = check_text("\n".join(prog) + "\n")
    assert [(v.rule, v.need, v.have) for v in found] == [("mfma_d_to_read", 8, 1)]


def test_s_endpgm_and_unconditional_branch_cut_paths():
    prog = ["v_exp_f32_e32 v1, v2", "s_branch .LX", ".LY:", "v_add_f32_e32 v3, v1, v1", "s_endpgm",
            ".LX:", "s_nop 0", "s_branch .LY"]
    # v_exp -> s_branch -> s_nop 0 -> s_branch -> v_add: 3 wait states (only path)
    assert check_text("\n".join(prog) + "\n") == []
    assert [v.rule for v in check_text("v_exp_f32_e32 v1, v2\ns_endpgm\nv_add_f32_e32 v3, v1, v1\n")] == []


def test_required_nops_pads_in_program_order():
    from gfx950hazard import parse
    prog = ("v_mfma_f32_32x32x16_bf16 v[0:15], v[32:35], v[36:39], 0\n"
            "v_add_f32_e32 v40, v1, v1\nv_add_f32_e32 v41, v2, v2\ns_endpgm\n")
    assert required_nops(parse(prog)) == {1: 12}


def test_unknown_mfma_is_an_error():
    from gfx950hazard import AsmError
    with pytest.raises(AsmError, match="v_mfma_f64_16x16x4_f64"):
        check_text("v_mfma_f64_16x16x4_f64 v[0:7], v[8:9], v[10:11], 0\n")


def test_command_line_exit_codes(tmp_path):
    import sys
    clean = tmp_path / "clean.s"
    clean.write_text("v_exp_f32_e32 v1, v2\ns_nop 0\nv_add_f32_e32 v3, v1, v1\ns_endpgm\n")
    bad = tmp_path / "bad.s"
    bad.write_text("v_exp_f32_e32 v1, v2\nv_add_f32_e32 v3, v1, v1\ns_endpgm\n")
    junk = tmp_path / "junk.s"
    junk.write_text("v_mfma_f32_4x4x1_16b_f16 v[0:3], v[4:5], v[6:7], 0\n")
    import os
    env = dict(os.environ, PYTHONPATH=str(__import__("pathlib").Path(__file__).resolve().parents[2] / "tools"))
    run = lambda f: subprocess.run([sys.executable, "-m", "gfx950hazard", str(f)], capture_output=True, text=True,
                                   env=env)
    assert run(clean).returncode == 0
    r = run(bad)
    assert r.returncode == 1 and "trans_to_valu" in r.stdout
    r = run(junk)
    assert r.returncode == 2 and "v_mfma_f32_4x4x1_16b_f16" in r.stderr
