"""Lab 04-04's figure: flash-decoding's grid of thread blocks and the merge tree of one (sequence, head).

    python phase-04-attention-backends/labs/lab-04-flash-decoding-partitions/figures.py

writes ``figures/split_and_merge.png`` next to this file (needs matplotlib: ``pip install -e ".[bench]"``).
The numbers are vLLM v2's: partitions of 512 tokens, a grid of (heads, sequences, max partitions),
a thread block whose partition starts past its sequence's end exits at once.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for labkit

from labkit.figures import COLORS, pyplot, save  # noqa: E402

HERE = Path(__file__).resolve().parent
PARTITION_SIZE = 512
SEQ_LENS = [1800, 700]
NUM_HEADS = 4


def num_partitions(seq_len: int) -> int:
    return -(-seq_len // PARTITION_SIZE)


def draw() -> Path:
    plt = pyplot()
    fig, (grid, tree) = plt.subplots(1, 2, figsize=(11, 5.2), gridspec_kw={"width_ratios": [0.85, 1]})
    max_parts = max(num_partitions(n) for n in SEQ_LENS)

    # Left: one thread block per (sequence, head, partition).
    grid.axis("off")
    grid.set_xlim(-1.7, max_parts + 0.2)
    grid.set_ylim(-1.6, len(SEQ_LENS) * (NUM_HEADS + 2.2) + 0.6)
    grid.set_title("the grid: sequences x heads x partitions\n(one thread block per cell)", fontsize=10)
    y0 = 0.0
    for seq, seq_len in reversed(list(enumerate(SEQ_LENS))):
        parts = num_partitions(seq_len)
        for p in range(max_parts):
            start = p * PARTITION_SIZE
            label = f"{start}-{min(start + PARTITION_SIZE, seq_len) - 1}" if p < parts else "past end"
            grid.text(p + 0.5, y0 + NUM_HEADS + 0.25, label, ha="center", va="bottom", fontsize=7.5,
                      color=COLORS["text"] if p < parts else COLORS["null"])
            for h in range(NUM_HEADS):
                y = y0 + NUM_HEADS - 1 - h
                if p < parts:
                    grid.add_patch(plt.Rectangle((p + 0.04, y + 0.06), 0.92, 0.88, color=COLORS["valid"]))
                    grid.text(p + 0.5, y + 0.5, f"P{p}", ha="center", va="center", fontsize=8, color="white")
                else:
                    grid.add_patch(plt.Rectangle((p + 0.04, y + 0.06), 0.92, 0.88, facecolor=COLORS["free"],
                                                 edgecolor=COLORS["null"], hatch="///", linewidth=0))
        for h in range(NUM_HEADS):
            grid.text(-0.1, y0 + NUM_HEADS - 1 - h + 0.5, f"head {h}", ha="right", va="center", fontsize=8)
        grid.text(-1.65, y0 + NUM_HEADS + 0.95, f"sequence {seq}: {seq_len} tokens, {parts} partitions",
                  fontsize=9, fontweight="bold")
        y0 += NUM_HEADS + 2.2
    total = NUM_HEADS * sum(num_partitions(n) for n in SEQ_LENS)
    grid.text(-1.65, -0.2, f"{total} thread blocks do work (hatched: they exit at once);\n"
              f"without the split, {NUM_HEADS * len(SEQ_LENS)} would each walk a whole sequence.\n"
              "Each blue cell writes one summary (m, denom, acc).", fontsize=8, va="top")

    # Right: the merge tree of sequence 0, head 0.
    tree.axis("off")
    tree.set_xlim(0, 10)
    tree.set_ylim(0, 10)
    tree.set_title("merging the summaries of sequence 0, head 0", fontsize=10)

    def node(x, y, text, color, width=1.9):
        tree.add_patch(plt.Rectangle((x - width / 2, y - 0.45), width, 0.9, color=color))
        tree.text(x, y, text, ha="center", va="center", fontsize=8.5, color="white")

    def edge(x0, y0, x1, y1):
        tree.annotate("", xy=(x1, y1 - 0.45), xytext=(x0, y0 + 0.45),
                      arrowprops={"arrowstyle": "->", "color": COLORS["null"], "lw": 1.2})

    leaves = [1.3, 3.7, 6.3, 8.7]
    for p, x in enumerate(leaves):
        node(x, 1.3, f"P{p}\n(m{p}, d{p}, acc{p})", COLORS["valid"], width=2.2)
    mids = [(leaves[0] + leaves[1]) / 2, (leaves[2] + leaves[3]) / 2]
    for i, x in enumerate(mids):
        node(x, 3.6, "P0 ⊕ P1" if i == 0 else "P2 ⊕ P3", COLORS["accent"])
        edge(leaves[2 * i], 1.3, x, 3.6)
        edge(leaves[2 * i + 1], 1.3, x, 3.6)
    node(5.0, 5.9, "⊕ : (m, denom, acc)\nof all 1800 tokens", COLORS["accent"], width=3.2)
    for x in mids:
        edge(x, 3.6, 5.0, 5.9)
    node(5.0, 8.1, "out = acc / denom", COLORS["query"], width=3.2)
    edge(5.0, 5.9, 5.0, 8.1)
    tree.text(5.0, 9.35, "a ⊕ b:  m = max(m_a, m_b),  denom = denom_a e^(m_a - m) + denom_b e^(m_b - m),\n"
              "acc likewise; the identity (-inf, 0, 0) changes nothing", ha="center", va="center", fontsize=8)
    tree.text(0.1, 6.9, "any bracketing, any order:\n((P0 ⊕ P1) ⊕ P2) ⊕ P3\nis the same summary;\n"
              "vLLM's reduce kernel\nmerges all partitions\nin one step", fontsize=7.5, va="top",
              color=COLORS["text"])
    fig.tight_layout()
    return save(fig, HERE / "figures" / "split_and_merge.png")


if __name__ == "__main__":
    print(draw())
