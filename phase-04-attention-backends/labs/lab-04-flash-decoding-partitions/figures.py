"""Lab 04-04's figure: flash-decoding's grid of thread blocks and the merge tree of one (sequence,
head).

    python phase-04-attention-backends/labs/lab-04-flash-decoding-partitions/figures.py

writes ``figures/split_and_merge.svg`` (and its dark-mode twin) next to this file (needs matplotlib:
``pip install -e ".[bench]"``). The numbers are vLLM v2's: partitions of 512 tokens, a grid of
(heads, sequences, max partitions), a thread block whose partition starts past its sequence's end
exits at once."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for labkit

from labkit.figures import COLORS, WIDTH, pyplot, save  # noqa: E402

HERE = Path(__file__).resolve().parent
PARTITION_SIZE = 512
SEQ_LENS = [1800, 700]
NUM_HEADS = 4


def num_partitions(seq_len: int) -> int:
    return -(-seq_len // PARTITION_SIZE)


def draw() -> Path:
    plt = pyplot()
    fig = plt.figure(figsize=(WIDTH, 8.6))
    grid = fig.add_axes((0, 0.5, 1, 0.5))
    tree = fig.add_axes((0, 0, 1, 0.47))
    max_parts = max(num_partitions(n) for n in SEQ_LENS)
    light, muted = COLORS["paper"], COLORS["muted"]

    # Top: one thread block per (sequence, head, partition).
    grid.axis("off")
    grid.set_xlim(-1.15, max_parts + 2.4)
    grid.set_ylim(-1.9, len(SEQ_LENS) * (NUM_HEADS + 2.0) + 0.9)
    grid.text(-1.1, len(SEQ_LENS) * (NUM_HEADS + 2.0) + 0.8, "The grid: sequences x heads x partitions, one thread "
              "block per cell", fontsize=10, fontweight="bold", va="top")
    y0 = 0.0
    for seq, seq_len in reversed(list(enumerate(SEQ_LENS))):
        parts = num_partitions(seq_len)
        for p in range(max_parts):
            start = p * PARTITION_SIZE
            label = f"{start}-{min(start + PARTITION_SIZE, seq_len) - 1}" if p < parts else "past end"
            grid.text(p + 0.5, y0 + NUM_HEADS + 0.15, label, ha="center", va="bottom", fontsize=9,
                      color=COLORS["ink"] if p < parts else muted)
            for h in range(NUM_HEADS):
                y = y0 + NUM_HEADS - 1 - h
                if p < parts:
                    grid.add_patch(plt.Rectangle((p + 0.04, y + 0.06), 0.92, 0.88, color=COLORS["valid"]))
                    grid.text(p + 0.5, y + 0.5, f"P{p}", ha="center", va="center", fontsize=10, color=light)
                else:
                    grid.add_patch(plt.Rectangle((p + 0.04, y + 0.06), 0.92, 0.88, facecolor=COLORS["free"],
                                                 edgecolor=muted, hatch="///", linewidth=0))
        for h in range(NUM_HEADS):
            grid.text(-0.1, y0 + NUM_HEADS - 1 - h + 0.5, f"head {h}", ha="right", va="center", fontsize=9)
        grid.text(max_parts + 0.2, y0 + NUM_HEADS / 2, f"sequence {seq}:\n{seq_len} tokens,\n{parts} partitions",
                  fontsize=10, fontweight="bold", va="center")
        y0 += NUM_HEADS + 2.0
    total = NUM_HEADS * sum(num_partitions(n) for n in SEQ_LENS)
    grid.text(-1.1, -0.25, f"{total} thread blocks do work (hatched: they exit at once); without the split,\n"
              f"{NUM_HEADS * len(SEQ_LENS)} would each walk a whole sequence. Each blue cell writes one summary "
              "(m, denom, acc).", fontsize=9, va="top")

    # Bottom: the merge tree of sequence 0, head 0.
    tree.axis("off")
    tree.set_xlim(0, 10)
    tree.set_ylim(0.3, 10.3)
    tree.text(0.05, 10.2, "Merging the summaries of sequence 0, head 0", fontsize=10, fontweight="bold", va="top")

    def node(x, y, text, color, width=1.9, text_color=light):
        tree.add_patch(plt.Rectangle((x - width / 2, y - 0.5), width, 1.0, color=color))
        tree.text(x, y, text, ha="center", va="center", fontsize=9.5, color=text_color)

    def edge(x0, y0, x1, y1):
        tree.annotate("", xy=(x1, y1 - 0.5), xytext=(x0, y0 + 0.5),
                      arrowprops={"arrowstyle": "->", "color": muted, "lw": 1.2})

    leaves = [1.25, 3.75, 6.25, 8.75]
    for p, x in enumerate(leaves):
        node(x, 1.2, f"P{p}\n(m{p}, d{p}, acc{p})", COLORS["valid"], width=2.3)
    mids = [(leaves[0] + leaves[1]) / 2, (leaves[2] + leaves[3]) / 2]
    for i, x in enumerate(mids):
        node(x, 3.4, "P0 ⊕ P1" if i == 0 else "P2 ⊕ P3", COLORS["accent"])
        edge(leaves[2 * i], 1.2, x, 3.4)
        edge(leaves[2 * i + 1], 1.2, x, 3.4)
    node(5.0, 5.6, "⊕ : (m, denom, acc)\nof all 1800 tokens", COLORS["accent"], width=3.4)
    for x in mids:
        edge(x, 3.4, 5.0, 5.6)
    node(5.0, 7.7, "out = acc / denom", COLORS["query"], width=3.4, text_color=COLORS["dark"])
    edge(5.0, 5.6, 5.0, 7.7)
    tree.text(0.05, 9.3, "a ⊕ b: m = max(m_a, m_b), denom = denom_a e^(m_a - m) + denom_b e^(m_b - m),\n"
              "acc likewise; the identity (-inf, 0, 0) changes nothing", va="top", fontsize=9)
    tree.text(7.0, 6.6, "any bracketing, any order:\n((P0 ⊕ P1) ⊕ P2) ⊕ P3\nis the same summary;\n"
              "vLLM's reduce kernel\nmerges all partitions\nin one step", fontsize=9, va="top")
    return save(fig, HERE / "figures" / "split_and_merge.svg")


if __name__ == "__main__":
    print(draw())
