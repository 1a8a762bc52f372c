"""Lab 04-06's figure: the split-KV grid and the grouped-query tile of one program.

    python phase-04-attention-backends/labs/lab-06-paged-decode-roofline/figures.py

Writes ``figures/split_kv_gqa.svg`` (and its dark-mode twin) next to this file (needs matplotlib:
``pip install -e ".[bench]"``). The numbers are the README's example: one sequence of 200 tokens,
blocks of 16, a table of 16 blocks (capacity 256), ``num_splits=4`` (partitions of 64 tokens), 10
query heads over 2 KV heads (a group of 5), tiles of 32 tokens."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from labkit.figures import COLORS, WIDTH, pyplot, save  # noqa: E402

SEQ_LEN, BLOCK_SIZE, MAX_BLOCKS, NUM_SPLITS = 200, 16, 16, 4
NUM_HEADS, NUM_KV_HEADS, TILE_N = 10, 2, 32
GROUP = NUM_HEADS // NUM_KV_HEADS
GROUP_PAD = 16
PARTITION = MAX_BLOCKS * BLOCK_SIZE // NUM_SPLITS
SPLIT_COLORS = [COLORS["valid"], COLORS["violet"], COLORS["accent"], COLORS["null"]]


def block_table(seed: int = 4) -> np.ndarray:
    """The sequence's physical block ids: 13 scattered blocks, then padding entries."""
    rng = np.random.default_rng(seed)
    used = -(-SEQ_LEN // BLOCK_SIZE)
    ids = rng.permutation(63)[:used]  # block 63 stays unused: the padding entries point at it
    return np.concatenate([ids, np.full(MAX_BLOCKS - used, 63)])


def draw_grid(ax) -> None:
    """Top panel: which program reads which tokens of which KV head."""
    plt = pyplot()
    table = block_table()
    used_blocks = -(-SEQ_LEN // BLOCK_SIZE)
    light, ink, muted = COLORS["paper"], COLORS["ink"], COLORS["muted"]
    row_h = 1.0
    for j in range(NUM_KV_HEADS):
        y = (NUM_KV_HEADS - 1 - j) * 1.4
        for blk in range(MAX_BLOCKS):
            x0 = blk * BLOCK_SIZE
            split = x0 // PARTITION
            if blk < used_blocks:
                filled = min(BLOCK_SIZE, SEQ_LEN - x0)
                ax.add_patch(plt.Rectangle((x0, y), filled, row_h, color=SPLIT_COLORS[split], ec=light, lw=0.6))
                if filled < BLOCK_SIZE:  # the tail of the last block: poisoned, masked
                    ax.add_patch(plt.Rectangle((x0 + filled, y), BLOCK_SIZE - filled, row_h, fc=COLORS["poison"],
                                               ec=light, lw=0.6, hatch="///"))
            else:  # padding entries of the table: never read
                ax.add_patch(plt.Rectangle((x0, y), BLOCK_SIZE, row_h, fc=COLORS["free"], ec=light, lw=0.6))
        ax.text(-3, y + row_h / 2, f"KV head {j}\n(query heads\n{j * GROUP}-{j * GROUP + GROUP - 1})",
                ha="right", va="center", fontsize=9)
        for s in range(NUM_SPLITS):
            lo, hi = s * PARTITION, min((s + 1) * PARTITION, SEQ_LEN)
            full = hi - lo == PARTITION
            if full:
                ax.text(lo + PARTITION / 2, y + row_h / 2, f"program\n(b, {j}, {s})", ha="center", va="center",
                        fontsize=9, color=light)
            else:  # too narrow to write in: the label goes over the padding beside it
                ax.text(BLOCK_SIZE * used_blocks + 2, y + row_h / 2, f"(b, {j}, {s}):\n{hi - lo} tokens",
                        ha="left", va="center", fontsize=9, color=ink)
    # The block table above the grid.
    top = (NUM_KV_HEADS - 1) * 1.4 + row_h + 0.3
    for blk in range(MAX_BLOCKS):
        pad = blk >= used_blocks
        ax.text(blk * BLOCK_SIZE + BLOCK_SIZE / 2, top + 0.25, str(table[blk]), ha="center", va="center",
                fontsize=9, color=muted if pad else ink)
    ax.text(-3, top + 0.25, "block_tables[b]", ha="right", va="center", fontsize=9, family="monospace")
    for s in range(NUM_SPLITS + 1):
        ax.axvline(s * PARTITION, ymin=0.0, ymax=1.0, color=ink, lw=1.2, ls="--")
    for s in range(NUM_SPLITS):
        ax.text(s * PARTITION + PARTITION / 2, -0.45, f"split {s}: {s * PARTITION}-{(s + 1) * PARTITION - 1}",
                ha="center", va="center", fontsize=9, bbox={"fc": light, "ec": "none", "pad": 1})
    ax.annotate(f"seq_len = {SEQ_LEN}", xy=(SEQ_LEN, 0.0), xytext=(SEQ_LEN - 30, -1.15), fontsize=9, ha="center",
                arrowprops={"arrowstyle": "->", "lw": 0.8, "color": ink})
    ax.set_xlim(-1, MAX_BLOCKS * BLOCK_SIZE + 1)
    ax.set_ylim(-1.45, top + 0.7)
    ax.set_xticks(range(0, MAX_BLOCKS * BLOCK_SIZE + 1, 2 * BLOCK_SIZE))
    ax.set_yticks([])
    ax.spines[["left", "top", "right"]].set_visible(False)
    ax.set_xlabel("logical token (blocks of 16; a table of 16 blocks = capacity 256 tokens)")
    ax.set_title(f"The partition kernel's grid (batch, num_kv_heads, max_splits): num_splits={NUM_SPLITS}\n"
                 f"cuts the capacity into partitions of {PARTITION} tokens", loc="left")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in SPLIT_COLORS]
    handles += [plt.Rectangle((0, 0), 1, 1, fc=COLORS["poison"], hatch="///"),
                plt.Rectangle((0, 0), 1, 1, fc=COLORS["free"])]
    labels = [f"read by split {s}" for s in range(NUM_SPLITS)] + ["tail past seq_len (masked)", "padding (never read)"]
    ax.legend(handles, labels, ncol=3, loc="upper left", bbox_to_anchor=(-0.2, -0.3), frameon=False)


def draw_tile(ax) -> None:
    """Bottom panel: one iteration of program (b, 1, 1): the group's query rows against a tile of tokens."""
    plt = pyplot()
    light, ink = COLORS["paper"], COLORS["ink"]
    d, tile_w = 8, 12  # head_dim drawn 8 wide (it is 64 or 128), a tile of TILE_N tokens 12 wide

    def matrix(x, y, rows, cols, real_rows, color, title, sub):
        for r in range(rows):
            fc = color if r < real_rows else COLORS["free"]
            ax.add_patch(plt.Rectangle((x, y + rows - 1 - r), cols, 1, fc=fc, ec=light, lw=0.5))
        ax.text(x + cols / 2, y + rows + 0.6, title, ha="center", va="bottom", fontsize=9, family="monospace")
        ax.text(x + cols / 2, y - 0.6, sub, ha="center", va="top", fontsize=9)

    # q: GROUP_PAD rows, GROUP of them real.
    matrix(0, 0, GROUP_PAD, d, GROUP, COLORS["query"], "q tile", f"[GROUP_PAD={GROUP_PAD},\nhead_dim]")
    ax.text(-0.6, GROUP_PAD - GROUP / 2, f"query\nheads\n{GROUP}-{2 * GROUP - 1}", ha="right", va="center",
            fontsize=9)
    ax.text(-0.6, (GROUP_PAD - GROUP) / 2, f"rows\n{GROUP}-{GROUP_PAD - 1}:\npadding,\nloaded\nas 0,\nnever\nstored",
            ha="right", va="center", fontsize=9)
    ax.text(d + 1.5, GROUP_PAD / 2, "x", ha="center", va="center", fontsize=14)
    # K^T: head_dim x TILE_N, its columns in two blocks.
    x0 = d + 3
    for c in range(2):
        ax.add_patch(plt.Rectangle((x0 + c * tile_w / 2, GROUP_PAD / 2 - d / 2), tile_w / 2, d, fc=SPLIT_COLORS[1],
                                   ec=light, lw=1.0))
        ax.text(x0 + c * tile_w / 2 + tile_w / 4, GROUP_PAD / 2, f"16\ntokens\nof block\n{4 + c} of\nthe table",
                ha="center", va="center", fontsize=9, color=light)
    ax.text(x0 + tile_w / 2, GROUP_PAD / 2 + d / 2 + 0.6, "tl.trans(k)", ha="center", va="bottom", fontsize=9,
            family="monospace")
    ax.text(x0 + tile_w / 2, GROUP_PAD / 2 - d / 2 - 0.6, f"[head_dim, TILE_N={TILE_N}]:\ntokens 64-95 of\n"
            "KV head 1, each row\nfound through the table", ha="center", va="top", fontsize=9)
    ax.text(x0 + tile_w + 1.5, GROUP_PAD / 2, "=", ha="center", va="center", fontsize=14)
    # scores: GROUP_PAD x TILE_N.
    x1 = x0 + tile_w + 3
    matrix(x1, 0, GROUP_PAD, tile_w, GROUP, COLORS["tail"], "scores", f"[{GROUP_PAD}, {TILE_N}] float32:\none row "
           "per query head")
    ax.text(x1 + tile_w / 2, GROUP_PAD - GROUP / 2, "tl.dot(q,\ntl.trans(k))", ha="center", va="center",
            fontsize=9, family="monospace", color=ink)
    ax.text(x1 + tile_w + 0.8, GROUP_PAD / 2, "then, per row,\nthe online\nsoftmax:\nm, denom,\nacc += p . v\n"
            "(a second\ntl.dot)", ha="left", va="center", fontsize=9)
    ax.set_xlim(-6.2, x1 + tile_w + 8.5)
    ax.set_ylim(-3.6, GROUP_PAD + 2.0)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"One iteration of program (b, j=1, s=1): the {GROUP} query heads of KV head 1\nshare every K "
                 f"and V load (a GQA group of {GROUP}, padded to {GROUP_PAD} rows for tl.dot)", loc="left")


def main() -> int:
    plt = pyplot()
    fig = plt.figure(figsize=(WIDTH, 8.4), layout="constrained")
    upper, lower = fig.subfigures(2, 1, height_ratios=[1.0, 1.15])  # each panel laid out on its own
    draw_grid(upper.subplots())
    draw_tile(lower.subplots())
    path = save(fig, HERE / "figures" / "split_kv_gqa.svg")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
