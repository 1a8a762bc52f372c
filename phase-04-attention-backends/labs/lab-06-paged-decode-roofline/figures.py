"""Lab 04-06's figure: the split-KV grid and the grouped-query tile of one program.

    python phase-04-attention-backends/labs/lab-06-paged-decode-roofline/figures.py

Writes ``figures/split_kv_gqa.png`` next to this file (needs matplotlib: ``pip install -e ".[bench]"``).
The numbers are the README's example: one sequence of 200 tokens, blocks of 16, a table of 16
blocks (capacity 256), ``num_splits=4`` (partitions of 64 tokens), 10 query heads over 2 KV heads
(a group of 5), tiles of 32 tokens.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from labkit.figures import COLORS, pyplot, save  # noqa: E402

SEQ_LEN, BLOCK_SIZE, MAX_BLOCKS, NUM_SPLITS = 200, 16, 16, 4
NUM_HEADS, NUM_KV_HEADS, TILE_N = 10, 2, 32
GROUP = NUM_HEADS // NUM_KV_HEADS
GROUP_PAD = 16
PARTITION = MAX_BLOCKS * BLOCK_SIZE // NUM_SPLITS
SPLIT_COLORS = ["#4c9be8", "#e377c2", "#2ca25f", "#9467bd"]


def block_table(seed: int = 4) -> np.ndarray:
    """The sequence's physical block ids: 13 scattered blocks, then padding entries."""
    rng = np.random.default_rng(seed)
    used = -(-SEQ_LEN // BLOCK_SIZE)
    ids = rng.permutation(63)[:used]  # block 63 stays unused: the padding entries point at it
    return np.concatenate([ids, np.full(MAX_BLOCKS - used, 63)])


def draw_grid(ax) -> None:
    """Top panel: which program reads which tokens of which KV head."""
    table = block_table()
    used_blocks = -(-SEQ_LEN // BLOCK_SIZE)
    row_h = 1.0
    for j in range(NUM_KV_HEADS):
        y = (NUM_KV_HEADS - 1 - j) * 1.4
        for blk in range(MAX_BLOCKS):
            x0 = blk * BLOCK_SIZE
            split = x0 // PARTITION
            if blk < used_blocks:
                filled = min(BLOCK_SIZE, SEQ_LEN - x0)
                ax.add_patch(pyplot().Rectangle((x0, y), filled, row_h, color=SPLIT_COLORS[split], ec="white", lw=0.6))
                if filled < BLOCK_SIZE:  # the tail of the last block: poisoned, masked
                    ax.add_patch(pyplot().Rectangle((x0 + filled, y), BLOCK_SIZE - filled, row_h, fc=COLORS["poison"],
                                                    ec="white", lw=0.6, hatch="///", alpha=0.55))
            else:  # padding entries of the table: never read
                ax.add_patch(pyplot().Rectangle((x0, y), BLOCK_SIZE, row_h, fc=COLORS["free"], ec="white", lw=0.6))
        ax.text(-3, y + row_h / 2, f"KV head j={j}\n(query heads {j * GROUP}-{j * GROUP + GROUP - 1})",
                ha="right", va="center", fontsize=8.5)
        for s in range(NUM_SPLITS):
            lo, hi = s * PARTITION, min((s + 1) * PARTITION, SEQ_LEN)
            full = hi - lo == PARTITION
            label = f"program (b, {j}, {s})" + ("" if full else f": {hi - lo} tokens")
            ax.text(lo + PARTITION / 2 + (0 if full else 6), y + row_h / 2, label, ha="center", va="center",
                    fontsize=8, color="white" if full else COLORS["text"])
    # The block table above the grid.
    top = (NUM_KV_HEADS - 1) * 1.4 + row_h + 0.35
    for blk in range(MAX_BLOCKS):
        pad = blk >= used_blocks
        ax.text(blk * BLOCK_SIZE + BLOCK_SIZE / 2, top + 0.25, str(table[blk]), ha="center", va="center", fontsize=7.5,
                color="#888888" if pad else COLORS["text"])
    ax.text(-3, top + 0.25, "block_tables[b]", ha="right", va="center", fontsize=8.5, family="monospace")
    for s in range(NUM_SPLITS + 1):
        ax.axvline(s * PARTITION, ymin=0.0, ymax=1.0, color="black", lw=1.2, ls="--")
    for s in range(NUM_SPLITS):
        ax.text(s * PARTITION + PARTITION / 2, -0.45, f"split {s}: tokens {s * PARTITION}-{(s + 1) * PARTITION - 1}",
                ha="center", va="center", fontsize=8, bbox={"fc": "white", "ec": "none", "pad": 1})
    ax.annotate(f"seq_len = {SEQ_LEN}", xy=(SEQ_LEN, 0.0), xytext=(SEQ_LEN - 40, -1.05), fontsize=8, ha="center",
                arrowprops={"arrowstyle": "->", "lw": 0.8})
    ax.set_xlim(-1, MAX_BLOCKS * BLOCK_SIZE + 1)
    ax.set_ylim(-1.3, top + 0.7)
    ax.set_xticks(range(0, MAX_BLOCKS * BLOCK_SIZE + 1, BLOCK_SIZE))
    ax.tick_params(axis="x", labelsize=7)
    ax.set_yticks([])
    ax.spines[["left", "top", "right"]].set_visible(False)
    ax.set_xlabel("logical token (blocks of 16; a table of 16 blocks = capacity 256 tokens)", fontsize=8.5)
    ax.set_title(f"The partition kernel's grid (batch, num_kv_heads, max_splits): num_splits={NUM_SPLITS} cuts the "
                 f"capacity into partitions of {PARTITION} tokens", fontsize=10, loc="left")
    handles = [pyplot().Rectangle((0, 0), 1, 1, color=c) for c in SPLIT_COLORS]
    handles += [pyplot().Rectangle((0, 0), 1, 1, fc=COLORS["poison"], hatch="///", alpha=0.55),
                pyplot().Rectangle((0, 0), 1, 1, fc=COLORS["free"])]
    labels = [f"read by split {s}" for s in range(NUM_SPLITS)] + ["tail past seq_len (masked)", "padding (never read)"]
    ax.legend(handles, labels, fontsize=7.5, ncol=6, loc="upper center", bbox_to_anchor=(0.5, -0.32), frameon=False)


def draw_tile(ax) -> None:
    """Bottom panel: one iteration of program (b, 1, 1): the group's query rows against a tile of tokens."""
    plt = pyplot()
    d = 8  # head_dim drawn 8 wide (it is 64 or 128)

    def matrix(x, y, rows, cols, real_rows, color, title, sub):
        for r in range(rows):
            fc = color if r < real_rows else COLORS["free"]
            ax.add_patch(plt.Rectangle((x, y + rows - 1 - r), cols, 1, fc=fc, ec="white", lw=0.5))
        ax.text(x + cols / 2, y + rows + 0.9, title, ha="center", va="bottom", fontsize=9, family="monospace")
        ax.text(x + cols / 2, y - 0.7, sub, ha="center", va="top", fontsize=7.5)

    # q: GROUP_PAD rows, GROUP of them real.
    matrix(0, 0, GROUP_PAD, d, GROUP, COLORS["query"], "q tile", f"[GROUP_PAD={GROUP_PAD}, head_dim]")
    for r in range(GROUP):
        ax.text(-0.5, GROUP_PAD - 1 - r + 0.5, f"head {GROUP + r}", ha="right", va="center", fontsize=7)
    ax.annotate(f"rows {GROUP}-{GROUP_PAD - 1}: padding,\nloaded as 0 (mask), never stored",
                xy=(0, 4), xytext=(-7.5, 1.0), fontsize=7.5, ha="center", arrowprops={"arrowstyle": "->", "lw": 0.8})
    ax.text(d + 1.5, GROUP_PAD / 2, "x", ha="center", va="center", fontsize=14)
    # K^T: head_dim x TILE_N, its columns in two blocks.
    x0 = d + 3
    kt_w = 16
    for c in range(2):
        ax.add_patch(plt.Rectangle((x0 + c * kt_w / 2, GROUP_PAD / 2 - d / 2), kt_w / 2, d, fc=SPLIT_COLORS[1],
                                   ec="white", lw=1.0))
        ax.text(x0 + c * kt_w / 2 + kt_w / 4, GROUP_PAD / 2, f"16 tokens of\nblock\ntable[b, {4 + c}]",
                ha="center", va="center", fontsize=7, color="white")
    ax.text(x0 + kt_w / 2, GROUP_PAD / 2 + d / 2 + 0.9, "tl.trans(k)", ha="center", va="bottom", fontsize=9,
            family="monospace")
    ax.text(x0 + kt_w / 2, GROUP_PAD / 2 - d / 2 - 0.7, f"[head_dim, TILE_N={TILE_N}]: tokens 64-95 of KV head 1,\n"
            "each row found through the table", ha="center", va="top", fontsize=7.5)
    ax.text(x0 + kt_w + 1.5, GROUP_PAD / 2, "=", ha="center", va="center", fontsize=14)
    # scores: GROUP_PAD x TILE_N.
    x1 = x0 + kt_w + 3
    matrix(x1, 0, GROUP_PAD, kt_w, GROUP, "#b9d7f3", "scores = tl.dot(q, tl.trans(k))", f"[{GROUP_PAD}, {TILE_N}] "
           "float32: one row per query head")
    ax.text(x1 + kt_w + 1.0, GROUP_PAD - GROUP / 2, "online softmax per row:\nm, denom, acc += p . v\n"
            "(p . v is a second tl.dot,\n [16, TILE_N] x [TILE_N, head_dim])", ha="left", va="center", fontsize=7.5)
    ax.set_xlim(-12, x1 + kt_w + 12)
    ax.set_ylim(-3.2, GROUP_PAD + 2.5)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"One iteration of program (b, j=1, s=1): the {GROUP} query heads of KV head 1 share every K and V "
                 f"load (GQA group of {GROUP}, padded to {GROUP_PAD} rows for tl.dot)", fontsize=10, loc="left")


def main() -> int:
    plt = pyplot()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11.5, 8.2), gridspec_kw={"height_ratios": [1.0, 1.45]})
    draw_grid(top)
    draw_tile(bottom)
    fig.tight_layout()
    path = save(fig, HERE / "figures" / "split_kv_gqa.png")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
