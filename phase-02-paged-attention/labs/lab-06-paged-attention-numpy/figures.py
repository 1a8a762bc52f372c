"""Lab 02-06's figure: a block table pointing at scattered physical blocks.

    python phase-02-paged-attention/labs/lab-06-paged-attention-numpy/figures.py

writes ``figures/block_table.svg`` (and its dark-mode twin) next to this file (needs matplotlib:
``pip install -e ".[bench]"``). The example is small enough to check by hand: 10 tokens in blocks of
4, so the third block is partly filled; the table is padded with two entries that point at block 0,
vLLM's null block."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for labkit

from labkit.figures import COLORS, canvas, pyplot, save  # noqa: E402

HERE = Path(__file__).resolve().parent
BLOCK_SIZE = 4
SEQ_LEN = 10
BLOCK_TABLE = [5, 2, 7, 0, 0]  # three blocks of the sequence, then padding: the null block 0
NUM_BLOCKS = 8
OTHER_SEQUENCE = {1, 4}  # blocks some other request holds


def slot(t: int) -> int:
    """The flat cache row of logical token t (the formula the figure illustrates)."""
    return BLOCK_TABLE[t // BLOCK_SIZE] * BLOCK_SIZE + t % BLOCK_SIZE


def draw_block_table():
    plt = pyplot()
    fig, ax = canvas(plt, 5.9, (-1.35, 14.3), (-2.75, 9.1))
    cell = 0.9
    light, ink, muted = COLORS["paper"], COLORS["ink"], COLORS["muted"]

    # Left: the sequence as the model sees it, logical blocks in order.
    ax.text(0.9, 8.5, "logical view", ha="center", fontweight="bold")
    used_blocks = -(-SEQ_LEN // BLOCK_SIZE)
    for b in range(used_blocks):
        y = 7.0 - 1.5 * b
        ax.text(-0.15, y + cell / 2, f"block {b}", ha="right", va="center", fontsize=9)
        for o in range(BLOCK_SIZE):
            t = b * BLOCK_SIZE + o
            valid = t < SEQ_LEN
            ax.add_patch(plt.Rectangle((o * 0.47, y), 0.45, cell, color=COLORS["valid"] if valid else COLORS["tail"]))
            ax.text(o * 0.47 + 0.225, y + cell / 2, f"{t}" if valid else "", ha="center", va="center",
                    fontsize=9, color=light)

    # Middle: the block table, one entry per logical block, padded to the batch's widest row.
    ax.text(4.3, 8.5, "block_table", ha="center", fontweight="bold", family="monospace")
    table_y = {}
    for i, block in enumerate(BLOCK_TABLE):
        y = 7.0 - 1.5 * i if i < used_blocks else 7.0 - 1.5 * used_blocks - 1.1 * (i - used_blocks)
        table_y[i] = y + cell / 2
        padding = i >= used_blocks
        ax.add_patch(plt.Rectangle((3.85, y), 0.9, cell, facecolor=light, edgecolor=muted if padding else ink,
                                   linewidth=1.2))
        ax.text(4.3, y + cell / 2, str(block), ha="center", va="center", family="monospace", fontsize=11,
                color=muted if padding else ink)
        ax.text(3.75, y + cell / 2, f"[{i}]", ha="right", va="center", fontsize=9, family="monospace")
        if padding and i == len(BLOCK_TABLE) - 1:
            ax.text(4.3, y - 0.05, "padding", ha="center", va="top", fontsize=9, color=muted)
        elif not padding:
            ax.annotate("", xy=(3.0, y + cell / 2), xytext=(1.9, 7.0 - 1.5 * i + cell / 2),
                        arrowprops={"arrowstyle": "->", "color": muted, "lw": 0.8})

    # Right: the physical cache, [num_blocks, block_size] slots, with the flat slot number in each.
    ax.text(9.35, 8.5, "physical cache\n[num_blocks, block_size, ...]", ha="center", va="center",
            fontweight="bold")
    owner = {block: b for b, block in enumerate(BLOCK_TABLE[:used_blocks])}
    for block in range(NUM_BLOCKS):
        y = 7.2 - 1.0 * block
        for o in range(BLOCK_SIZE):
            t = owner[block] * BLOCK_SIZE + o if block in owner else None
            if block == 0:
                color, label = COLORS["null"], ""
            elif t is not None and t < SEQ_LEN:
                color, label = COLORS["valid"], f"t{t}"
            elif t is not None:
                color, label = COLORS["tail"], "tail"
            elif block in OTHER_SEQUENCE:
                color, label = COLORS["accent"], ""
            else:
                color, label = COLORS["free"], ""
            on_light = color in (COLORS["free"], COLORS["tail"])
            x = 7.6 + o * 0.95
            ax.add_patch(plt.Rectangle((x, y), 0.9, 0.85, color=color))
            ax.text(x + 0.45, y + 0.58, label, ha="center", va="center", fontsize=9, color=ink if on_light else light)
            ax.text(x + 0.45, y + 0.2, str(block * BLOCK_SIZE + o), ha="center", va="center", fontsize=9,
                    color=muted if on_light else light)
        if block == 0:
            note, color = "null block", muted
        elif block in OTHER_SEQUENCE:
            note, color = "another request", COLORS["accent"]
        elif block in owner:
            note, color = f"logical block {owner[block]}", COLORS["valid"]
        else:
            note, color = "free", muted
        ax.text(11.45, y + 0.62, f"block {block}", ha="left", va="center", fontsize=9, fontweight="bold")
        ax.text(11.45, y + 0.2, note, ha="left", va="center", fontsize=9, color=color)

    # Arrows from each table entry to the physical block it names.
    for i, block in enumerate(BLOCK_TABLE):
        target_y = 7.2 - 1.0 * block + 0.42
        padding = i >= used_blocks
        ax.annotate("", xy=(7.55, target_y), xytext=(4.8, table_y[i]),
                    arrowprops={"arrowstyle": "->", "lw": 1.0 if padding else 1.4, "color": muted if padding else ink,
                                "linestyle": "--" if padding else "-"})

    t = SEQ_LEN - 1
    formula = "slot(t) = block_table[t // block_size] * block_size + t % block_size"
    example = (f"t = {t}: block_table[{t} // {BLOCK_SIZE}] * {BLOCK_SIZE} + {t} % {BLOCK_SIZE}"
               f" = {BLOCK_TABLE[t // BLOCK_SIZE]} * {BLOCK_SIZE} + {t % BLOCK_SIZE} = {slot(t)}")
    ax.text(7.6, -0.6, "small numbers: each slot's flat row,\nblock * block_size + offset", fontsize=9,
            color=muted, va="center")
    ax.text(-1.3, -1.65, formula, family="monospace", fontsize=10)
    ax.text(-1.3, -2.35, example, family="monospace", fontsize=10)
    ax.text(-1.3, 0.55, f"seq_len = {SEQ_LEN}, block_size = {BLOCK_SIZE}:\nthe last block holds "
            f"{SEQ_LEN - (used_blocks - 1) * BLOCK_SIZE} of {BLOCK_SIZE}\ntokens; its tail is no\ntoken "
            "of this sequence", fontsize=9, va="top")
    return save(fig, HERE / "figures" / "block_table.svg")


if __name__ == "__main__":
    print(draw_block_table())
