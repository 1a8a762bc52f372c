"""The figures of lab 04-07's README, drawn from the lab's own functions (the reference solution).

    python phase-04-attention-backends/labs/lab-07-context-parallel-decode/figures.py

writes ``figures/layouts.svg`` (which rank holds each token, and where, for four stripes) and
``figures/combine_bytes.svg`` (bytes per decode step of the two combines against the rank count),
each with its dark-mode twin.
Needs matplotlib (the ``bench`` extra) and torch (the solution imports it).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

import numpy as np  # noqa: E402

from labkit import figures, load_sibling  # noqa: E402

RANK_COLORS = (figures.COLORS["valid"], figures.COLORS["query"], figures.COLORS["accent"])
TOKENS, WORLD_SIZE, BLOCK_SIZE = 24, 3, 4


def layouts(lab, path: Path) -> None:
    rows = [("contiguous (stripe 8)", 8), ("block-interleaved (stripe 4 = the block size)", BLOCK_SIZE),
            ("stripe of 3 tokens", 3), ("token-interleaved (stripe 1, vLLM's default)", 1)]
    plt = figures.pyplot()
    fig, ax = plt.subplots(figsize=(figures.WIDTH, 4.2), layout="constrained")
    pitch = 1.45  # one row of cells and the name above it
    for row, (name, stripe) in enumerate(rows):
        ranks, local = lab.token_owner(np.arange(TOKENS), WORLD_SIZE, stripe)
        y = (len(rows) - 1 - row) * pitch
        for t in range(TOKENS):
            ax.add_patch(plt.Rectangle((t, y), 0.94, 0.8, color=RANK_COLORS[ranks[t]]))
            ax.text(t + 0.47, y + 0.4, str(local[t]), ha="center", va="center", fontsize=9,
                    color=figures.COLORS["dark"] if ranks[t] == 1 else figures.COLORS["paper"])
        ax.text(0, y + 0.88, name, ha="left", va="bottom", fontsize=10)
    for t in range(0, TOKENS + 1, BLOCK_SIZE):  # logical block boundaries of the sequence
        ax.axvline(t - 0.03, color=figures.COLORS["muted"], linewidth=0.8, linestyle=":")
    for rank, color in enumerate(RANK_COLORS):
        ax.add_patch(plt.Rectangle((0, 0), 0, 0, color=color, label=f"rank {rank}"))
    ax.set_xlim(-0.1, TOKENS)
    ax.set_ylim(-0.1, len(rows) * pitch - 0.1)
    ax.set_xticks(np.arange(0, TOKENS, 2) + 0.47, [str(t) for t in range(0, TOKENS, 2)])
    ax.set_yticks([])
    ax.tick_params(length=0)
    ax.set_xlabel(f"token position t in the sequence (dotted: logical blocks of {BLOCK_SIZE});\n"
                  "cell text: the token's position among its rank's tokens")
    ax.spines["left"].set_visible(False)
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=WORLD_SIZE, frameon=False)
    figures.save(fig, path)


def combine_bytes(lab, path: Path) -> None:
    plt = figures.pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.6), layout="constrained")
    sizes = [1, 2, 4, 8, 16]
    for method, marker in (("all_gather", "o"), ("all_reduce", "s")):
        kib = [lab.combine_bytes(method, w, 1, 32, 128) / 1024 for w in sizes]
        ax.plot(sizes, kib, marker=marker, label=method.replace("_", "-"))
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(w) for w in sizes])
    ax.set_xlabel("ranks")
    ax.set_ylabel("KiB per decode step,\nall ranks together")
    ax.set_title("Batch 1, 32 query heads of 128, float32 summaries", loc="left")
    ax.grid(alpha=0.6)
    ax.legend()
    figures.save(fig, path)


def main() -> None:
    lab = load_sibling(__file__)
    layouts(lab, HERE / "figures" / "layouts.svg")
    combine_bytes(lab, HERE / "figures" / "combine_bytes.svg")


if __name__ == "__main__":
    main()
