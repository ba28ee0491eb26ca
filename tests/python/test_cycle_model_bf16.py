"""The cycle model on clang-22's gfx950 code for zyfa's BF16 forward-attention templates (include/zyfa/bf16): one
tile configuration (tests/emu_kernels/bf16_tile.hip) runs one workgroup in the emulator, which records every
wave's executed instructions (Machine.trace); the model then schedules wave 0's stream with one and with two waves
per SIMD (two workgroups per CU: their barriers are independent). The numbers are modelled, not measured; they
are printed (pytest -s) and recorded in docs/cycle-model.md."""
import json
import pathlib

import ml_dtypes
import numpy as np
import pytest

from gfx950emu import Machine, Program
from gfx950emu.toolchain import compile_hip_to_asm
from gfx950isa.cycles import format_report, simulate

ROOT = pathlib.Path(__file__).resolve().parents[2]


def bf16_trace(tmp_path, tile: str, seqlen_k: int, dqk: int, dv: int):
    """(instruction streams per wave of workgroup 0, kernel name) for one tile configuration, non-causal,
    batch 1, one head, seqlen_q = BlockM."""
    import re
    import test_emu_attention as attn  # FwdArgs field list and packing (read only)
    text = compile_hip_to_asm(str(ROOT / "tests" / "emu_kernels" / "bf16_tile.hip"), str(tmp_path / "tile.s"),
                              include_dirs=[str(ROOT / "include")], defines=[f"ZYFA_TILE={tile.replace(' ', '')}"])
    prog = Program.from_asm_text(text)
    m = re.search(r"zyfa_emu_launch_tile:\s*\.long\s+(\d+).*?\.long\s+(\d+).*?\.long\s+(\d+)", text, re.S)
    smem, threads, block_m = (int(x) for x in m.groups())
    layout = json.loads(_layout(tmp_path, attn))
    name = next(iter(prog.kernels))
    rng = np.random.default_rng(5)
    sq, sk = block_m, seqlen_k
    q = (rng.standard_normal((1, sq, 1, dqk))).astype(ml_dtypes.bfloat16)
    k = (rng.standard_normal((1, sk, 1, dqk))).astype(ml_dtypes.bfloat16)
    v = rng.standard_normal((1, sk, 1, dv)).astype(ml_dtypes.bfloat16)
    mach = Machine(prog)
    vals = dict(q=mach.upload(q), k=mach.upload(k), v=mach.upload(v), out=mach.alloc(sq * dv * 2),
                lse=mach.alloc(sq * 4), q_batch_stride=sq * dqk, q_row_stride=dqk, q_head_stride=dqk,
                k_batch_stride=sk * dqk, k_row_stride=dqk, k_head_stride=dqk, v_batch_stride=sk * dv,
                v_row_stride=dv, v_head_stride=dv, o_batch_stride=sq * dv, o_row_stride=dv, o_head_stride=dv,
                batch=1, seqlen_q=sq, seqlen_k=sk, num_heads=1, group_size=1, num_m_blocks=1, causal=0,
                causal_offset=sk - sq, scale_log2=float(np.float32(1.0 / np.sqrt(dqk)) * np.float32(1.4426950408889634)),
                lse_batch_stride=sq, lse_head_stride=sq,  # softmax_lse [1, 1, sq]
                cu_seqlens_q=0, cu_seqlens_k=0, total_q=0, total_k=0)  # fixed length
    streams: dict = {}
    mach.trace = lambda w, ins: streams.setdefault(w.wave_id, []).append(ins)
    mach.launch(name, grid=(1, 1, 1), block=(threads, 1, 1), kernarg=attn.pack_args(layout, vals), dynamic_lds=smem)
    return streams, name


def _layout(tmp_path, attn):
    import subprocess
    src = tmp_path / "layout.cpp"
    src.write_text(attn._LAYOUT_SRC.replace("%FIELDS%", " ".join(f"F({f})" for f in attn.FIELDS)))
    exe = tmp_path / "layout"
    subprocess.run(["g++", "-std=c++17", f"-I{ROOT / 'include'}", str(src), "-o", str(exe)], check=True)
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout


def steady_state(tmp_path, tile: str, dqk: int, dv: int, waves: int):
    """Modelled per-key-block numbers of wave 0 in steady state: the difference of seqlen_k 512 and 256 (the
    prologue and epilogue cancel). Returns (cycles, matrix busy cycles, busy %) per 64 keys."""
    out = []
    for sk in (256, 512):
        d = tmp_path / f"sk{sk}"
        d.mkdir(exist_ok=True)
        streams, _ = bf16_trace(d, tile, sk, dqk, dv)
        w0 = streams[0]
        out.append(simulate([list(w0) for _ in range(waves)], executed=True, barrier_sync=False))
    cyc = (out[1].cycles - out[0].cycles) / 4
    busy = (out[1].mfma_busy - out[0].mfma_busy) / 4
    return cyc, busy, 100.0 * busy / cyc


@pytest.mark.parametrize("tile", ["128, 128, 128, 64, 4"])
def test_bf16_template_modelled_matrix_busy(tmp_path, tile):
    streams, name = bf16_trace(tmp_path, tile, seqlen_k=256, dqk=128, dv=128)
    w0 = streams[0]
    one = simulate([w0], executed=True)
    two = simulate([w0, list(w0)], executed=True, barrier_sync=False)
    print("\n" + format_report(f"bf16 KernelConfig<{tile}> seqlen_k 256", one))
    print(format_report(f"bf16 KernelConfig<{tile}> seqlen_k 256", two))
    n_mfma = sum(1 for i in w0 if i.kind == "mfma")
    assert n_mfma > 0 and one.mfma_busy == n_mfma * 32  # v_mfma_f32_32x32x16_bf16: 8 passes
    assert 0 < one.mfma_busy_pct < 100 and two.mfma_busy_pct >= one.mfma_busy_pct


def test_bf16_steady_state_per_key_block(tmp_path):
    cyc, busy, pct = steady_state(tmp_path, "128, 128, 128, 64, 4", 128, 128, 2)
    print(f"\nbf16 hd128 KernelConfig<128,128,128,64,4>, 2 waves/SIMD: modelled {cyc:.0f} cycles per 64-key block"
          f" (2 waves), matrix busy {pct:.1f}% (modelled)")
    assert 0 < pct < 100


#: Candidate tiles per built-in head-dim pair (DQK, DV): (BlockM, BlockN, Warps[, SkipRescale]) for the gfx950 tile
#: choice in include/zyfa/tile_config.hpp (docs/cycle-model.md records the modelled results).
CANDIDATES = {
    (128, 128): ["128, 64, 4", "128, 128, 4", "64, 64, 2", "256, 64, 8", "128, 64, 4, false"],
    (64, 64): ["128, 64, 4", "128, 128, 4", "256, 64, 8", "256, 128, 8"],
    (192, 128): ["128, 64, 4", "256, 64, 8"],
    (256, 256): ["128, 64, 4", "256, 64, 8"],
}

if __name__ == "__main__":  # candidate tiles for gfx950 (not run in CI): python3 tests/python/test_cycle_model_bf16.py [DQK]
    import sys
    import tempfile
    sys.path.insert(0, str(ROOT / "tools"))
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    want = {int(a) for a in sys.argv[1:]}
    for (dqk, dv), tiles in CANDIDATES.items():
        if want and dqk not in want:
            continue
        for tile in tiles:
            for waves in (1, 2):
                try:
                    with tempfile.TemporaryDirectory() as t:
                        cyc, busy, pct = steady_state(pathlib.Path(t), f"{dqk}, {dv}, {tile}", dqk, dv, waves)
                except Exception as e:  # a candidate that does not compile or fit is reported, not chosen
                    print(f"KernelConfig<{dqk}, {dv}, {tile}>: not modelled ({type(e).__name__}: {str(e)[:200]})",
                          flush=True)
                    break
                print(f"KernelConfig<{dqk}, {dv}, {tile}> {waves} wave(s)/SIMD: {cyc:.0f} cycles / 64 keys, "
                      f"matrix busy {pct:.1f}% (modelled)", flush=True)
