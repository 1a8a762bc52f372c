"""Lab 02-04 benchmark: the one-program-per-head kernel against dense attention (GPU only).

    python bench.py [--seq-lens 1024 4096 ...] [--out FOLDER]

One decode step, batch 1, 32 query heads over 8 KV heads, head_dim 128, fp16, block 16,
for sequence lengths 1k to 128k. Three ways to compute the same output:
  triton         this lab's kernel, reading the scattered cache through the block table
  sdpa           torch's scaled_dot_product_attention on a dense, contiguous copy of the cache
  gather+sdpa    index the cache through the table (a copy), then the same SDPA
Bytes counted: the K and V bytes of the valid tokens (what any decode kernel must read).
Prints the table; with --out, also writes results.md and results.svg (the plot, drawn from that
table) into that folder; --plot-from results.md redraws the plot on any machine.
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from labkit import bench, triton_env  # noqa: E402

BACKEND = triton_env.select_backend()  # before Triton is imported

NUM_HEADS, NUM_KV_HEADS, HEAD_DIM, BLOCK_SIZE = 32, 8, 128, 16
SEQ_LENS = [1024, 4096, 16384, 32768, 65536, 131072]
DEVICE = "cuda"  # the only device a bandwidth measurement means anything on
TRITON, SDPA, GATHER = "triton (block table)", "SDPA (dense copy)", "gather + SDPA"


def measure(lab, seq_len) -> dict[str, float]:
    """Microseconds of each way for one sequence length, after checking that they agree."""
    import torch

    from labkit import cases

    case = cases.decode_case([seq_len], num_heads=NUM_HEADS, num_kv_heads=NUM_KV_HEADS, head_dim=HEAD_DIM,
                             block_size=BLOCK_SIZE, dtype=torch.float16, device=DEVICE, seed=seq_len)
    args = case.one(0)
    k_dense = cases.dense_kv(case.k_cache, case.block_tables, seq_len)
    v_dense = cases.dense_kv(case.v_cache, case.block_tables, seq_len)

    out = lab.paged_attention_triton(*args)
    want = cases.sdpa_decode(case.q, k_dense, v_dense)[0]
    delta = (out.float() - want.float()).abs().max().item()
    if not delta < 1e-2:
        raise SystemExit(f"seq_len={seq_len}: the kernel differs from SDPA by {delta:.3g}; run the tests")

    def gather_then_sdpa():  # the copy an engine without a paged kernel would make every step
        k = cases.dense_kv(case.k_cache, case.block_tables, seq_len, contiguous=False)
        v = cases.dense_kv(case.v_cache, case.block_tables, seq_len, contiguous=False)
        return cases.sdpa_decode(case.q, k, v)

    return {
        TRITON: bench.time_us(lambda: lab.paged_attention_triton(*args)),
        SDPA: bench.time_us(lambda: cases.sdpa_decode(case.q, k_dense, v_dense)),
        GATHER: bench.time_us(gather_then_sdpa),
    }


def run(seq_lens, out_dir: Path | None) -> None:
    import torch

    import labkit
    from labkit import bench

    lab = labkit.load_impl(HERE)
    copy_bw = bench.copy_bandwidth()
    print(bench.device_line())
    print(f"copy bandwidth (read + write): {copy_bw / 1e9:.0f} GB/s")
    rows = []
    for seq_len in seq_lens:
        times = measure(lab, seq_len)
        torch.cuda.empty_cache()
        nbytes = bench.kv_bytes([seq_len], NUM_KV_HEADS, HEAD_DIM, 2)  # K and V, fp16
        gbps = {name: bench.gb_per_s(nbytes, us) for name, us in times.items()}
        rows.append([
            f"{seq_len // 1024}k", f"{nbytes / 2**20:.0f}",
            f"{times[TRITON]:.1f}", f"{gbps[TRITON]:.0f}", f"{100 * gbps[TRITON] * 1e9 / copy_bw:.0f}%",
            f"{times[SDPA]:.1f}", f"{gbps[SDPA]:.0f}",
            f"{times[GATHER]:.1f}", f"{gbps[GATHER]:.0f}",
            f"{times[TRITON] / times[SDPA]:.2f}x", f"{times[GATHER] / times[SDPA]:.2f}x",
        ])  # fmt: skip
        print(f"seq_len {seq_len:>6}: " + ", ".join(f"{name} {us:.1f} us" for name, us in times.items()))

    headers = [
        "seq_len", "K+V MiB",
        "triton µs", "triton GB/s", "% of copy",
        "SDPA µs", "SDPA GB/s",
        "gather+SDPA µs", "gather+SDPA GB/s",
        "triton / SDPA time", "gather+SDPA / SDPA time",
    ]  # fmt: skip
    table = bench.markdown_table(headers, rows)
    print(table)
    if out_dir is None:
        print("(pass --out FOLDER to write results.md and results.svg)")
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    (out_dir / "results.md").write_text(
        f"# Lab 02-04 results\n\n"
        f"One decode step, batch 1. {bench.device_line()}; {today}.\n\n"
        f"{NUM_HEADS} query heads over {NUM_KV_HEADS} KV heads, head_dim {HEAD_DIM}, fp16, block size {BLOCK_SIZE}. "
        f"GB/s = K+V bytes of the valid tokens / time (do_bench median, L2 flushed). "
        f"Measured copy bandwidth (read + write): {copy_bw / 1e9:.0f} GB/s.\n\n{table}\n"
    )
    plot(out_dir / "results.md", out_dir / "results.svg")
    print(f"wrote {out_dir / 'results.md'} and {out_dir / 'results.svg'}")


# The plot's lines: (label, the results.md column of their GB/s, colour name in labkit.figures.COLORS).
PLOT_SERIES = ((TRITON, "triton GB/s", "valid"), (SDPA, "SDPA GB/s", "accent"), (GATHER, "gather+SDPA GB/s", "poison"))


def plot(results: Path, path: Path) -> Path:
    """Draw ``path`` (an SVG) from the table of ``results`` (a results.md this script wrote): the run
    and its plot cannot disagree, and the plot can be redrawn anywhere (``--plot-from``)."""
    import re

    from labkit import figures

    rows = figures.results_table(results, "seq_len")
    copy_gbps = float(re.search(r"copy bandwidth \(read \+ write\): ([0-9.]+) GB/s", results.read_text()).group(1))
    seq_lens = [int(r["seq_len"].rstrip("k")) * 1024 for r in rows]
    plt = figures.pyplot()
    fig, ax = plt.subplots(figsize=(figures.WIDTH, 4.2), layout="constrained")
    for name, column, color in PLOT_SERIES:
        ax.plot(seq_lens, [figures.number(r[column]) for r in rows], marker="o", label=name,
                color=figures.COLORS[color])
    ax.axhline(copy_gbps, color=figures.COLORS["muted"], linestyle="--", label=f"copy bandwidth ({copy_gbps:.0f} GB/s)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(seq_lens, [r["seq_len"] for r in rows])
    ax.set_xlabel("seq_len (tokens)")
    ax.set_ylabel("GB/s (K+V bytes of the\nvalid tokens / time)")
    fig.suptitle(f"Decode, batch 1, {NUM_HEADS}/{NUM_KV_HEADS} heads, d={HEAD_DIM}, fp16", x=0.0, ha="left",
                 fontsize=10)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.6)
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=2, frameon=False)
    return figures.save(fig, path)


def main() -> int:
    parser = bench.arguments(__doc__)
    parser.add_argument("--seq-lens", type=int, nargs="+", default=SEQ_LENS)
    args = parser.parse_args()
    if bench.replotted(args, plot):
        return 0
    if BACKEND != "cuda":
        reason = "torch/triton are not installed" if BACKEND == "missing" else "no CUDA GPU here"
        print(f"bench.py needs a CUDA GPU ({reason}); the tests and lab.py run on the CPU. Nothing to do.")
        return 2
    run(args.seq_lens, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
