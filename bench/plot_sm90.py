"""Plot of one benchmark pass of bench/bench_sm90_ws.py: TFLOP/s against seqlen (16K tokens per point) for each
head-dim pair, causal and not, with zyfa's sm_90a pipeline next to FlashAttention-3 and PyTorch SDPA (cuDNN, flash).
    python3 bench/plot_sm90.py --csv bench/results.csv --lines 2626-2777 --out bench/h200_bf16.png
--lines: the file lines (1 = header) of the pass in the csv; a pass is the block of rows that one call appended
(bench/RESULTS.md names them). Needs bench/requirements-plot.txt (matplotlib); runs without a GPU."""
import argparse
import collections
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

IMPLS = [("zyfa_sm90a", "zyfa (sm_90a)", "tab:red"), ("fa3", "FlashAttention-3", "tab:blue"),
         ("sdpa_cudnn", "SDPA cuDNN", "tab:green"), ("sdpa_flash", "SDPA flash (FA2)", "tab:gray")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", default="bench/results.csv")
    ap.add_argument("--lines", required=True, help="A-B: file lines of one pass (line 1 is the header)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    first, last = (int(x) for x in args.lines.split("-"))
    with open(args.csv, newline="") as f:
        rows = list(csv.DictReader(f))[first - 2:last - 1]  # DictReader row i is file line i + 2
    if not rows:
        raise SystemExit(f"plot_sm90: no rows in lines {args.lines} of {args.csv}")
    data = collections.defaultdict(dict)  # (dqk, dv, causal) -> impl -> [(seqlen, tflops)]
    for r in rows:
        key = (int(r["head_dim_qk"]), int(r["head_dim_v"]), int(r["causal"]))
        data[key].setdefault(r["impl"], []).append((int(r["seqlen_q"]), float(r["tflops"])))
    keys = sorted(data, key=lambda k: (k[0] != 128, k[0], -k[2]))
    cols = 2
    fig, axes = plt.subplots((len(keys) + cols - 1) // cols, cols, figsize=(11, 3.2 * ((len(keys) + 1) // cols)),
                             squeeze=False)
    for ax, key in zip(axes.flat, keys):
        for impl, label, color in IMPLS:
            pts = sorted(data[key].get(impl, []))
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=label, color=color)
        ax.set_xscale("log", base=2)
        ax.set_title(f"hd ({key[0]}, {key[1]}), {'causal' if key[2] else 'non-causal'}", fontsize=10)
        ax.set_xlabel("seqlen (batch x seqlen = 16K)")
        ax.set_ylabel("TFLOP/s")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=8)
    d = rows[0]
    fig.suptitle(f"BF16 forward attention, {d['device']}, {d['date']} (bench/results.csv lines {args.lines})",
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"plot_sm90: {args.out} ({len(rows)} rows, {len(keys)} shapes)")


if __name__ == "__main__":
    main()
