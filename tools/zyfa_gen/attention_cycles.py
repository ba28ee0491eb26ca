"""Modelled cycle report of the generated FP8 attention kernels (``python3 tools/gen_asm.py --cycles``).

**Every number here is modelled, not measured**: no MI355X has run these kernels. The model is
:mod:`gfx950isa.cycles` (docs/cycle-model.md); this module applies it to the checked-in ``.s`` of each attention
kernel and turns the per-block cycles into whole-problem figures:

* steady state: the block loop (``.Lblk``) run 9 and 8 times on the full-block path (the branches to
  ``.Lp1_full``/``.Lp2_full`` taken), the difference is one 64-key block (one wave of group A alone, and the two
  waves of the workgroup that share a SIMD: one of each ping-pong group, group B one barrier behind, the two
  streams synchronised at every ``s_barrier`` as the waves of one workgroup are); the same on the masked path; the
  rest of a workgroup (prologue, epilogue) is the run with one full block minus one steady-state block;
* matrix-pipe busy % = MFMA busy cycles / cycles of the steady-state block; VALU cycles per 32x128 block = twice
  the VALU pipe cycles of one 64-key block of one wave;
* a problem (batch 1, 16 heads, seqlen_q = seqlen_k = tokens, causal, as the H200 FP8 benchmarks of
  bench/results.csv) is the kernel's grid (ceil(tokens / 256) x 16 workgroups of 8 waves, 2 per SIMD: one
  workgroup fills a CU) dispatched in grid order (x fastest) onto the CUs (SIMDS / 4), each workgroup to the CU that
  frees first; the waves of a workgroup pass the same barriers, so each of its blocks takes the time of its slowest
  wave: a workgroup's time = rest + blocks where some wave is masked x C_masked + the other blocks x C_full (both
  at two waves per SIMD). TFLOP/s = 4 b h s^2 (d_qk + d_v) / 2 / 2 (causal) / time — the
  benchmarks' formula, so the masked half of the diagonal blocks is work the kernel does but is not counted.

Not modelled: HBM/L2 bandwidth and contention between SIMDs (VMEM latency is an L2-hit figure), instruction
fetch, the clock under load and workgroup launch cost. Conditional branches are not taken (the per-element
path for NaN logits is not modelled), except the skips of rare work (labels ``.Lrare*``: the kb > 123 scaling),
which are taken: the common case, where no row's block max lies more than 123 binades below its running max.
"""
from __future__ import annotations

import dataclasses
import heapq
import re

from gfx950isa import table
from gfx950isa.cycles import _flatten, simulate
from gfx950isa.roles import analyze
from gfx950isa.syntax import Instr, parse_items

__all__ = ["AttentionCycles", "attention_cycles", "problem_tflops", "attention_report_lines", "PUBLISHED_ATTENTION",
           "CLOCKS_GHZ", "TOKENS", "HEADS", "loop_valu_mix", "loop_valu_classes", "attention_kernels",
           "attention_csv_rows", "pingpong_timeline", "group_stream"]

#: clocks of the report: the model's peak clock and 1.63 GHz (a clock under sustained matrix load)
CLOCKS_GHZ = (table.CLOCK_GHZ, 1.63)
TOKENS = (16384, 32768)
HEADS = 16
BLOCK_M = 32        # query rows of one wave
WAVES_PER_WG = 8    # waves of one workgroup (2 per SIMD on the 4 SIMDs of a CU)
KEYS = 64
#: the branches of the block loop that select the full-block path of a wave
FULL_PATH = (".Lp1_full", ".Lp2_full")

#: published MI355X figures of the ZYFA report (design notes, "Published anchors"); zyfa has not run on an MI355X
PUBLISHED_ATTENTION = {
    (128, 128): "ZYFA 2,672 TFLOP/s (FP8 hd128, Gaussian, 32K tokens; 53% of FP8 peak), AITER 39% of peak",
    (192, 128): "ZYFA 2,464 TFLOP/s, AITER 1,237 TFLOP/s (FP8 MLA 192/128, Gaussian, 32K tokens)",
}


@dataclasses.dataclass
class AttentionCycles:
    """Modelled per-block and per-workgroup cycles of one attention kernel."""
    name: str
    d: int
    dv: int
    vgprs: int
    waves_per_simd: int
    full_cycles: dict       # waves (1, 2) -> cycles of one 64-key full block (per wave)
    full_busy_pct: dict     # waves -> matrix-pipe busy % in the full-block loop
    masked_cycles: dict     # waves -> cycles of one masked block
    rest_cycles: dict       # waves -> prologue + epilogue of one workgroup
    valu_cycles_block: float   # VALU pipe cycles of one wave per 64-key full block
    mfma_cycles_block: float   # matrix-pipe cycles per 64-key full block (one wave; every MFMA, l_blk's included)
    flops_block: int           # attention FLOPs of one full block: the QK^T and P V MFMAs (not the l_blk MFMA)

    @property
    def attention_busy_pct(self) -> dict:
        """waves -> matrix-pipe busy % of the QK^T and P V MFMAs alone (the l_blk row-sum MFMA left out)."""
        useful = 64 * (2 * self.d // 64 + 4)
        return {w: self.full_busy_pct[w] * useful / self.mfma_cycles_block for w in self.full_busy_pct}

    @property
    def valu_per_32x128(self) -> float:
        return 2 * self.valu_cycles_block

    def loop_tflops(self, waves: int, clock_ghz: float) -> float:
        """Modelled TFLOP/s of the full-block loop alone (every SIMD running it; no masking, prologue, epilogue)."""
        return waves * self.flops_block / self.full_cycles[waves] * clock_ghz * 1e9 * table.SIMDS / 1e12


def attention_kernels() -> dict:
    """{kernel name: (head_dim_qk, head_dim_v)} of every generated attention kernel (kernels.ALL)."""
    from .kernels import ALL
    return {n: (cfg.d, cfg.dv) for n, (mod, cfg) in ALL.items() if mod.__name__.endswith(".attn_fwd_fp8")}


#: branches around rare work (``s_cbranch_execz .Lrare_*``: no row of the wave needs it) are modelled as taken
RARE_PREFIX = ".Lrare"


def _trips(items, blocks: int, full: bool) -> dict:
    trips = {".Lblk": blocks}
    if full:
        trips.update({x: 10 ** 9 for x in FULL_PATH})
    trips.update({x[1]: 10 ** 9 for x in items if isinstance(x, tuple) and x[1].startswith(RARE_PREFIX)})
    return trips


#: the group branches of the ping-pong: group A (waves 0..3) skips the extra barrier at the start (taken branch to
#: GROUP_A_START) and passes one after the loop; group B (waves 4..7) the opposite (taken branch to GROUP_B_END)
GROUP_A_START, GROUP_B_END = ".Lgroup_a_start", ".Lgroup_b_end"


def group_stream(items, trips: dict, group: str) -> list:
    """The executed instruction stream of a wave of ping-pong group "A" or "B" (the model's trips otherwise)."""
    for x in items:
        if isinstance(x, Instr) and not x.kind:
            analyze(x)
    t = dict(trips)
    t[GROUP_A_START if group == "A" else GROUP_B_END] = 10 ** 9
    return _flatten(items, t)


def _run(items, waves: int, blocks: int, full: bool):
    """One wave (group A), or the two waves of a SIMD (one of each group, synchronised at every barrier)."""
    trips = _trips(items, blocks, full)
    streams = [group_stream(items, trips, g) for g in "AB"[:waves]]
    return simulate(streams, executed=True)


def _vgprs(asm: str) -> int:
    m = re.search(r"VGPR live max \d+, allocated (\d+)", asm)
    if not m:
        raise ValueError("attention cycles: no register banner in the .s")
    return int(m.group(1))


def attention_cycles(name: str, asm: str, d: int, dv: int) -> AttentionCycles:
    items = parse_items(asm)
    vg = _vgprs(asm)
    waves_per_simd = max(1, min(2, 512 // (-(-vg // 8) * 8)))
    fc, fb, mc, rc = {}, {}, {}, {}
    valu = mfma = flops = 0
    for w in (1, 2):
        a, b = _run(items, w, 8, True), _run(items, w, 9, True)
        fc[w] = b.cycles - a.cycles
        fb[w] = 100.0 * (b.mfma_busy - a.mfma_busy) / fc[w]
        if w == 1:
            valu, mfma = b.valu_cycles - a.valu_cycles, b.mfma_busy - a.mfma_busy
            flops = 2 * 32 * 32 * 64 * (2 * d // 64 + 4)  # QK^T (2 d / 64 MFMAs) and P V (4) per 64-key block
        m8, m9 = _run(items, w, 8, False), _run(items, w, 9, False)
        mc[w] = m9.cycles - m8.cycles
        rc[w] = _run(items, w, 1, True).cycles - fc[w]
    return AttentionCycles(name, d, dv, vg, waves_per_simd, fc, fb, mc, rc, valu, mfma, flops)


def _blocks(tile: int, s: int, causal: bool):
    """(full, masked) 64-key blocks of the wave with query rows BLOCK_M tile.. for seqlen_q = seqlen_k = s (the
    kernel's per-wave n_first/n_last)."""
    row0 = BLOCK_M * tile
    if row0 >= s:
        return 0, 0
    base = row0 + 1 if causal else s
    n_first = max(0, min(base, s))
    n_last = max(0, min(base + min(s - row0, BLOCK_M) - 1, s))
    nfull, nblk = n_first // KEYS, (n_last + KEYS - 1) // KEYS
    return nfull, max(nblk - nfull, 0)


def _wg_blocks(wg: int, s: int, causal: bool):
    """(full, masked) block times of workgroup `wg` (WAVES_PER_WG waves of BLOCK_M rows): a block where some wave
    takes the masked path costs a masked block, every other block of the workgroup's loop a full block (its waves
    pass the same barriers; a wave with nothing to do waits for the others)."""
    waves = [_blocks(WAVES_PER_WG * wg + w, s, causal) for w in range(WAVES_PER_WG)]
    nblk = max(f + m for f, m in waves)
    masked = sum(1 for j in range(nblk) if any(f <= j < f + m for f, m in waves))
    return nblk - masked, masked


def problem_tflops(c: AttentionCycles, tokens: int, clock_ghz: float, heads: int = HEADS, causal: bool = True,
                   waves: int | None = None):
    """(modelled TFLOP/s, modelled ms) of batch 1, `heads` heads, seqlen_q = seqlen_k = tokens (module docstring)."""
    w = waves or c.waves_per_simd
    tiles = -(-tokens // (BLOCK_M * WAVES_PER_WG))
    per_tile = []
    for t in range(tiles):
        nf, nm = _wg_blocks(t, tokens, causal)
        per_tile.append(c.rest_cycles[w] + nf * c.full_cycles[w] + nm * c.masked_cycles[w])
    slots = [0.0] * (table.SIMDS // 4 * max(1, w // 2))  # CUs; a workgroup (2 waves per SIMD) fills one
    heapq.heapify(slots)
    for _ in range(heads):  # grid order: x (tile) fastest, then the head
        for cyc in per_tile:
            heapq.heappush(slots, heapq.heappop(slots) + cyc)
    cycles = max(slots)
    seconds = cycles / (clock_ghz * 1e9)
    flop = 4.0 * heads * tokens * tokens * (c.d + c.dv) / 2 / (2 if causal else 1)
    return flop / seconds / 1e12, seconds * 1e3


def loop_valu_mix(asm: str, label: str = ".Lblk") -> list:
    """[(mnemonic, count, VALU pipe cycles)] of one steady-state trip of the loop at `label` (as the model runs
    it), most cycles first: where the vector cycles of one block go."""
    mix: dict = {}
    for ins in _steady_body(asm, label):
        tm = table.TIMING.get(table.timing_class(ins.base, ins.kind))
        if tm is None or tm.pipe != "valu":
            continue
        n, cyc = mix.get(ins.mnemonic, (0, 0))
        mix[ins.mnemonic] = (n + 1, cyc + tm.occupancy)
    return sorted(((k, n, cyc) for k, (n, cyc) in mix.items()), key=lambda r: (-r[2], r[0]))


#: classes of the loop's VALU work: (class, section comment prefixes of the generated .s or None for any,
#: mnemonic prefixes or None for any); the first match wins
VALU_CLASSES = [
    ("block row max over S (v_max3, permlane)", ("row max",), ("v_max3", "v_mov", "v_permlane")),
    ("NaN test of the lane's S (sum, compare, branch)", ("NaN test",), None),
    ("row sum of the codes (fp8 decode + add)", ("Lean P codes", "pack:"),
     ("v_cvt_f32_fp8", "v_cvt_pk_f32_fp8", "v_add_f32", "v_pk_add_f32")),
    ("P packing (byte inserts / v_perm_b32, B-layout permlane swaps)", ("Lean P codes", "pack:", "P into"),
     ("v_lshl_or", "v_mov", "v_permlane", "v_perm_b32")),
    ("Lean P codes (y, NaN code, clamp, round, convert)", ("Lean P",), None),
    ("V transpose (v_perm_b32, 1/8 of the block per wave)", ("this wave's share",), None),
    ("LDS stage toggle (v_xor of the read addresses)", ("LDS stage",), None),
    ("NaN bytes of the Vᵀ operands (masked blocks)", ("Vᵀ A operands",), ("v_and", "v_add_u32", "v_lshr", "v_or",
                                                                         "v_sub_u32", "v_bfi")),
    ("s_blk for kb > 123 (v_mul under EXEC)", ("Vᵀ A operands",), ("v_mul_f32",)),
    ("accumulator update (acc = fma(acc, alpha, pv))", ("Vᵀ A operands",), ("v_fma", "v_pk_fma")),
    ("per-row work (alpha, kb, e_blk, P_top, s_blk, l, l2, m)", None, None),
]


def _steady_body(asm: str, label: str = ".Lblk") -> list:
    """The instructions one steady-state trip of the loop at `label` executes in the model (full-block path and
    rare-work skips taken, other conditional branches not taken; a wave of group A)."""
    items = parse_items(asm)
    for x in items:
        if isinstance(x, Instr) and not x.kind:
            analyze(x)
    flat = group_stream(items, _trips(items, 3, True), "A")
    first = None
    for i, x in enumerate(items):
        if isinstance(x, tuple) and x[1] == label:
            first = next(y for y in items[i + 1:] if isinstance(y, Instr)).index
            break
    starts = [k for k, ins in enumerate(flat) if ins.index == first]
    return flat[starts[1]:starts[2]]


def loop_valu_classes(asm: str, label: str = ".Lblk") -> list:
    """[(class, ops, VALU pipe cycles)] of one steady-state trip of the loop at `label`, in VALU_CLASSES order:
    the loop's vector work by what it is for (attributed by the section comments the generator writes)."""
    section, sec_of = "", {}
    for n, line in enumerate(asm.splitlines(), 1):
        if line.startswith("\t; "):
            section = line[3:]
        sec_of[n] = section
    out = {c: [0, 0] for c, _, _ in VALU_CLASSES}
    for ins in _steady_body(asm, label):
        tm = table.TIMING.get(table.timing_class(ins.base, ins.kind))
        if tm is None or tm.pipe != "valu":
            continue
        sec = sec_of.get(ins.line, "")
        for c, prefixes, mns in VALU_CLASSES:
            if (prefixes is None or sec.startswith(prefixes)) and (mns is None or ins.mnemonic.startswith(mns)):
                out[c][0] += 1
                out[c][1] += tm.occupancy
                break
    return [(c, n, cyc) for c, (n, cyc) in out.items()]


def attention_report_lines(generated: dict, kernels: dict) -> list:
    """Report lines for the attention kernels among `generated` ({name: asm}); `kernels`: {name: (d, dv)}."""
    out = ["FP8 attention kernels, steady state and whole problems (modelled, not measured; model limits: "
           "docs/fp8-gfx950.md):"]
    peak = {clk: 2 * 32 * 32 * 64 / 64 * table.SIMDS * clk * 1e9 / 1e12 for clk in CLOCKS_GHZ}
    rows = []
    for name, asm in generated.items():
        if name not in kernels:
            continue
        d, dv = kernels[name]
        c = attention_cycles(name, asm, d, dv)
        out.append(f"  {name} (head dims {d}, {dv}; VGPRs {c.vgprs}, {c.waves_per_simd} wave(s)/SIMD):")
        for w in (1, 2):
            out.append(f"    full-block path, {w} wave(s)/SIMD: {c.full_cycles[w]} cycles per 64-key block"
                       f"{' per wave' if w == 2 else ''}, matrix pipe busy {c.full_busy_pct[w]:.1f}% "
                       f"({c.attention_busy_pct[w]:.1f}% QK^T and P V, the rest the l_blk MFMA), "
                       f"{c.loop_tflops(w, table.CLOCK_GHZ):.0f} TFLOP/s at {table.CLOCK_GHZ} GHz (modelled, not "
                       "measured)")
        out.append(f"    VALU cycles per 32x128 block: {c.valu_per_32x128:.0f} (ZYFA publishes 384 for Lean P; "
                   f"modelled, not measured); matrix cycles per 32x128 block {2 * c.mfma_cycles_block:.0f}")
        out.append(f"    masked block {c.masked_cycles[1]} cycles, prologue + epilogue {c.rest_cycles[1]} cycles "
                   "(1 wave; modelled)")
        for tokens in TOKENS:
            cells = []
            for clk in CLOCKS_GHZ:
                tf, ms = problem_tflops(c, tokens, clk)
                cells.append(f"{tf:.0f} TFLOP/s ({ms:.3f} ms, {100 * tf / peak[clk]:.1f}% of peak) at {clk} GHz")
            out.append(f"    causal, {tokens // 1024}K tokens (batch 1, {HEADS} heads): " + "; ".join(cells) +
                       " (modelled, not measured)")
        out.append(f"    published (MI355X, ZYFA report; not zyfa's measurement): {PUBLISHED_ATTENTION[(d, dv)]}")
        mix = loop_valu_mix(asm)
        total = sum(cyc for _, _, cyc in mix)
        out.append(f"    VALU cycles of one 64-key full block by instruction ({total} in all; modelled): " +
                   ", ".join(f"{m} {n}x {cyc}" for m, n, cyc in mix[:12]) +
                   (f", {len(mix) - 12} others {sum(cyc for _, _, cyc in mix[12:])}" if len(mix) > 12 else ""))
        out.append("    by purpose (modelled; ops, cycles): " +
                   "; ".join(f"{cl} {n}, {cyc}" for cl, n, cyc in loop_valu_classes(asm)))
        out.extend("    " + ln for ln in pingpong_timeline(asm, bucket=64))
        rows.append(c)
    out.append("  summary (modelled, not measured; causal, batch 1, 16 heads, seqlen = tokens; TFLOP/s):")
    head = (f"  {'kernel':<30} {'busy% 1w':>8} {'busy% 2w':>8} {'VALU/32x128':>11} " +
            " ".join(f"{f'{t // 1024}K@{clk}GHz':>12}" for clk in CLOCKS_GHZ for t in TOKENS) + "  published")
    out.append(head)
    for c in rows:
        cells = " ".join(f"{problem_tflops(c, t, clk)[0]:12.0f}" for clk in CLOCKS_GHZ for t in TOKENS)
        out.append(f"  {c.name:<30} {c.full_busy_pct[1]:8.1f} {c.full_busy_pct[2]:8.1f} {c.valu_per_32x128:11.0f} "
                   f"{cells}  {PUBLISHED_ATTENTION[(c.d, c.dv)]}")
    return out


def attention_csv_rows(generated: dict, kernels: dict, date: str, clock_ghz: float = table.CLOCK_GHZ) -> list:
    """bench/results.csv rows (device "MI355X (modelled)", impl zyfa, dtype e4m3fn) of the attention kernels:
    causal, batch 1, 16 heads (16 K/V heads), seqlen_q = seqlen_k = tokens, at `clock_ghz`; median_ms is the
    modelled time of that problem. Modelled, not measured."""
    out = []
    for name, asm in generated.items():
        if name not in kernels:
            continue
        d, dv = kernels[name]
        c = attention_cycles(name, asm, d, dv)
        for tokens in TOKENS:
            tf, ms = problem_tflops(c, tokens, clock_ghz)
            out.append(f"{date},MI355X (modelled),zyfa,e4m3fn,{d},{dv},1,1,{HEADS},{HEADS},{tokens},{tokens},"
                       f"{ms:.4f},{tf:.1f}")
    return out


def pingpong_timeline(asm: str, bucket: int = 32, trip: int = 6) -> list:
    """ASCII timeline of one steady-state period of the ping-pong (the two waves of a SIMD, full-block path, trip
    `trip` of 9; modelled): from group A's matrix-phase barrier of that trip to the next one, one column per
    `bucket` cycles. Rows: each wave's matrix pipe (M: an MFMA of that wave occupies the pipe), VALU issue (v), LDS
    issue (l: ds_read/ds_write), LDS-DMA issue (d), barriers (|). Returns the lines."""
    items = parse_items(asm)
    trips = _trips(items, 9, True)
    streams = [group_stream(items, trips, g) for g in "AB"]
    tr: list = []
    simulate(streams, trace=tr, executed=True)
    bars = [t for t, w, text in tr if w == 0 and text.startswith("s_barrier")]
    t0, t1 = bars[1 + 2 * trip], bars[3 + 2 * trip]  # group A: block 0 in LDS, then (matrix, vector) per trip
    n = -(-(t1 - t0) // bucket)
    rows = {(w, k): [" "] * n for w in (0, 1) for k in ("M", "v", "l", "d", "|")}
    mfma_cyc = 64
    for t, w, text in tr:
        mn = text.split()[0]
        if mn.startswith("v_mfma"):
            for c in range(t, t + mfma_cyc, bucket):
                if t0 <= c < t1:
                    rows[(w, "M")][(c - t0) // bucket] = "M"
            continue
        if not t0 <= t < t1:
            continue
        col = (t - t0) // bucket
        if mn == "s_barrier":
            rows[(w, "|")][col] = "|"
        elif mn.startswith("buffer_") and " lds" in text:
            rows[(w, "d")][col] = "d"
        elif mn.startswith("ds_"):
            rows[(w, "l")][col] = "l"
        elif mn.startswith("v_"):
            rows[(w, "v")][col] = "v"
    busy = sum(1 for c in range(n) if rows[(0, "M")][c] == "M" or rows[(1, "M")][c] == "M")
    out = [f"one ping-pong period: {t1 - t0} cycles (two 64-key blocks, one per wave), {bucket} cycles per column; "
           f"matrix pipe busy in {busy} of {n} columns (modelled, not measured)"]
    names = {0: "A (waves 0-3)", 1: "B (waves 4-7)"}
    for w in (0, 1):
        for k, what in (("M", "MATRIX"), ("v", "VALU"), ("l", "LDS"), ("d", "DMA"), ("|", "barrier")):
            out.append(f"{names[w]:<14}{what:<8}" + "".join(rows[(w, k)]))
    return out
