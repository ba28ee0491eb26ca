"""bench/loop_segments.py on a synthetic Nsight Compute source export: it finds the inner key-tile loop, counts an
unrolled body's tiles by their Q.K^T starts, and converts stall samples into cycles per key tile per warp."""
import csv
import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("loop_segments", ROOT / "bench" / "loop_segments.py")
loop_segments = importlib.util.module_from_spec(spec)
spec.loader.exec_module(loop_segments)

HEADER = ["Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed", "stall_barrier",
          "stall_selected", "stall_wait"]


def write(path, rows):
    """rows: (source, samples, executed, barrier, selected); addresses 0x100, 0x110, ..."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Kernel Name", "k"])
        w.writerow(HEADER)
        for i, (src, samples, ex, bar, sel) in enumerate(rows):
            w.writerow([f"0x{0x100 + 16 * i:x}", src, samples, ex, bar, sel, samples - bar - sel])


def kernel(tiles_per_body, iterations, mufu_samples):
    """An outer loop around an inner key loop of `tiles_per_body` tiles, each: turn, Q.K^T, P.V, two waits, MUFU."""
    rows = [("MOV R1, R2", 5, 10, 0, 1)]  # outer loop head (0x100)
    inner_top = 0x100 + 16 * len(rows)
    for _ in range(tiles_per_body):
        rows += [("BAR.SYNC.DEFER_BLOCKING R2, 0x100", 40, iterations, 30, 10),
                 ("HGMMA.64x128x16.F32.BF16 R24, gdesc[UR20], RZ, !UPT", 20, iterations, 0, 10),
                 ("HGMMA.64x128x16.F32.BF16 R88, R152, gdesc[UR20].tnspB, R88", 20, iterations, 0, 10),
                 ("WARPGROUP.DEPBAR.LE gsb0, 0x1", 10, iterations, 0, 10),
                 ("MUFU.EX2 R24, R24", mufu_samples, iterations, 0, 10),
                 ("WARPGROUP.DEPBAR.LE gsb0, 0x0", 10, iterations, 0, 10)]
    rows.append((f"@P0 BRA 0x{inner_top:x}", 10, iterations, 0, 10))
    rows.append(("@P1 BRA 0x100", 5, 10, 0, 1))  # outer back edge
    return rows


def test_cycles_per_key_tile(tmp_path):
    path = tmp_path / "src.csv"
    write(path, kernel(1, 1000, 90))
    r = loop_segments.analyse(str(path))
    # 7 instructions per tile, 70 selected samples per body: one sample = 0.1 cycle; 200 samples -> 20 cycles
    assert r["instr"] == pytest.approx(7.0)
    assert r["total"] == pytest.approx(20.0)
    assert r["groups"]["MUFU.EX2"] == pytest.approx(9.0)
    assert r["groups"]["ping-pong turn (named barrier)"] == pytest.approx(3.0)
    assert r["groups"]["named barrier"] == pytest.approx(1.0)
    assert r["groups"]["wgmma issue (P.V)"] == pytest.approx(2.0)


def test_unrolled_body_counts_each_tile(tmp_path):
    one, two = tmp_path / "one.csv", tmp_path / "two.csv"
    write(one, kernel(1, 1000, 90))
    write(two, kernel(2, 500, 90))
    a, b = loop_segments.analyse(str(one)), loop_segments.analyse(str(two))
    assert b["instr"] == pytest.approx(6.5)  # 13 instructions per body of two tiles
    # per tile the same samples and the same selected samples per instruction: the same cycles
    assert b["groups"]["MUFU.EX2"] == pytest.approx(a["groups"]["MUFU.EX2"]) == pytest.approx(9.0)


def test_slower_exponentials_show(tmp_path):
    fast, slow = tmp_path / "fast.csv", tmp_path / "slow.csv"
    write(fast, kernel(1, 1000, 90))
    write(slow, kernel(1, 1000, 190))
    assert loop_segments.analyse(str(slow))["groups"]["MUFU.EX2"] - \
        loop_segments.analyse(str(fast))["groups"]["MUFU.EX2"] == pytest.approx(10.0)


def test_e4m3_loop(tmp_path):
    """QGMMA, and a P.V that also starts from zero (a fresh accumulator per block): only Q.K^T starts count tiles."""
    rows = [("MOV R1, R2", 5, 10, 0, 1),
            ("BAR.SYNC.DEFER_BLOCKING R0, 0x100", 40, 1000, 30, 10),
            ("QGMMA.64x64x32.F32.E4M3.E4M3 R92, gdesc[UR20], RZ, !UPT", 20, 1000, 0, 10),
            ("QGMMA.64x136x32.F32.E4M3.E4M3 R24, R124, gdesc[UR20], RZ, !UPT", 20, 1000, 0, 10),
            ("PRMT R1, R2, 0x6420, R3", 30, 1000, 0, 10),
            ("@P0 BRA 0x110", 10, 1000, 0, 10)]
    path = tmp_path / "fp8.csv"
    write(path, rows)
    r = loop_segments.analyse(str(path))
    assert r["instr"] == pytest.approx(5.0)
    assert r["groups"]["wgmma issue (P.V)"] == pytest.approx(2.0)
    assert r["groups"]["wgmma issue (Q.K^T)"] == pytest.approx(2.0)
    assert r["groups"]["PRMT"] == pytest.approx(3.0)


def test_no_loop_is_an_error(tmp_path):
    path = tmp_path / "flat.csv"
    write(path, [("MOV R1, R2", 5, 10, 0, 1), ("EXIT", 1, 10, 0, 1)])
    with pytest.raises(SystemExit, match="no loop"):
        loop_segments.analyse(str(path))


def test_reasons_per_key_tile(tmp_path):
    """The stall-reason split uses analyse's clock: the loop's reasons sum to its total, MUFU's to its group."""
    path = tmp_path / "src.csv"
    write(path, kernel(1, 1000, 90))
    loop, ex2 = loop_segments.reasons(str(path))
    assert sum(loop.values()) == pytest.approx(20.0)
    assert loop["barrier"] == pytest.approx(3.0) and loop["selected"] == pytest.approx(7.0)
    assert ex2["wait"] == pytest.approx(8.0) and ex2["selected"] == pytest.approx(1.0)
    assert sum(ex2.values()) == pytest.approx(loop_segments.analyse(str(path))["groups"]["MUFU.EX2"])
