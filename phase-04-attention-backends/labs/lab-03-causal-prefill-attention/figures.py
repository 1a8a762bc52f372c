"""Figures of lab 04-03, drawn from the lab's own definitions (``python figures.py`` rewrites them).

- ``figures/causal_mask.svg``: the causal mask of a chunk at ``start`` over the paged keys: which
  key positions each query row sees, block by block, with each logical block's physical id.
- ``figures/ragged_batch.svg``: a batch of chunks as the kernel receives it: the packed queries,
  ``query_start_loc``, ``seq_lens`` and the prefix each chunk continues.

Each comes with its dark-mode twin (``*.dark.svg``).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

import numpy as np  # noqa: E402

from labkit.figures import COLORS, WIDTH, pyplot, save  # noqa: E402

# The example of the mask figure: a chunk of 7 tokens after a prefix of 10, blocks of 4.
START, CHUNK, BLOCK_SIZE = 10, 7, 4
BLOCK_TABLE = [6, 2, 9, 0, 4]  # logical block -> physical block, as a shuffled pool hands them out
# The example of the batch figure: (prefix, chunk) per sequence.
BATCH = [(0, 5), (9, 4), (12, 1), (3, 3)]


def causal_mask_figure(path: Path) -> Path:
    plt = pyplot()
    from matplotlib.patches import Patch, Rectangle

    seq_len = START + CHUNK
    slots = len(BLOCK_TABLE) * BLOCK_SIZE
    t = np.arange(slots)[None, :]
    pos = START + np.arange(CHUNK)[:, None]
    # 0: prefix key, visible; 1: chunk key, visible; 2: masked future; 3: past seq_len, never read.
    kind = np.where(t < START, 0, 1)
    kind = np.where(t > pos, 2, kind)
    kind = np.where(t >= seq_len, 3, kind)
    colors = [COLORS["valid"], COLORS["query"], COLORS["free"], COLORS["poison"]]

    fig, ax = plt.subplots(figsize=(WIDTH, 4.4), layout="constrained")
    for (row, key), k in np.ndenumerate(kind):  # patches, not imshow: a raster could not follow dark mode
        ax.add_patch(Rectangle((key - 0.5, row - 0.5), 1, 1, facecolor=colors[k], edgecolor=COLORS["paper"], lw=0.6))
    ax.set_xlim(-0.5, slots - 0.5)
    ax.set_ylim(CHUNK - 0.5, -0.5)
    ax.set_aspect("equal")
    ax.set_xticks(range(slots), [str(x) for x in range(slots)])
    ax.set_yticks(range(CHUNK), [f"row {i}: position {START + i}" for i in range(CHUNK)])
    ax.set_xlabel("key position t (logical), read through the block table")
    for b, physical in enumerate(BLOCK_TABLE):
        if b:
            ax.axvline(b * BLOCK_SIZE - 0.5, color=COLORS["paper"], lw=3)
        ax.text(b * BLOCK_SIZE + (BLOCK_SIZE - 1) / 2, -0.8, f"logical {b}\n= physical {physical}",
                ha="center", va="bottom", fontsize=9)
    for i in range(CHUNK):  # the diagonal: each row's own position
        ax.add_patch(Rectangle((START + i - 0.42, i - 0.42), 0.84, 0.84, fill=False, edgecolor=COLORS["ink"], lw=2))
    ax.tick_params(length=0)
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    ax.legend(handles=[Patch(color=COLORS["valid"], label=f"cached prefix 0 .. {START - 1}: every row"),
                       Patch(color=COLORS["query"], label="the chunk, up to the row itself"),
                       Patch(color=COLORS["free"], label="the row's future: masked"),
                       Patch(color=COLORS["poison"], label=f"past seq_len = {seq_len}: never read"),
                       Patch(facecolor=COLORS["paper"], edgecolor=COLORS["ink"], lw=1.6,
                             label="outlined: the row's own position")],
              loc="upper center", bbox_to_anchor=(0.35, -0.2), ncol=2, frameon=False)
    ax.set_title(f"A chunk of {CHUNK} tokens at start = {START}: row i sees keys 0 .. start + i\n"
                 f"(blocks of {BLOCK_SIZE})", pad=40)
    return save(fig, path)


def ragged_batch_figure(path: Path) -> Path:
    plt = pyplot()
    from matplotlib.patches import Patch

    starts = np.concatenate([[0], np.cumsum([m for _, m in BATCH])])
    seq_lens = [c + m for c, m in BATCH]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(WIDTH, 5.0), gridspec_kw={"height_ratios": [3, 1.3]})

    # Each sequence: its prefix (already in the cache) and this step's chunk, in positions.
    for s, (prefix, chunk) in enumerate(BATCH):
        y = len(BATCH) - 1 - s
        top.barh(y, prefix, color=COLORS["valid"], edgecolor=COLORS["paper"])
        top.barh(y, chunk, left=prefix, color=COLORS["query"], edgecolor=COLORS["paper"])
        top.text(prefix + chunk + 0.3, y, f"seq_lens[{s}] = {seq_lens[s]}, prefix {prefix}", va="center",
                 fontsize=9)
    top.set_yticks(range(len(BATCH)), [f"sequence {s}" for s in reversed(range(len(BATCH)))])
    top.set_xlim(0, max(seq_lens) + 6.5)  # room for the longest row's label, no more
    top.set_xticks(range(0, max(seq_lens) + 1, 2))
    top.spines["bottom"].set_bounds(0, max(seq_lens))
    top.set_xlabel("position in the sequence (prefix = seq_len - query_len)")
    top.legend(handles=[Patch(color=COLORS["valid"], label="prefix: in the paged cache from earlier steps"),
                        Patch(color=COLORS["query"], label="this step's chunk (its K/V written just before)")],
               loc="lower left", bbox_to_anchor=(0, 1.0), frameon=False)
    top.set_title("A ragged batch: a prompt from scratch, a chunk after a prefix,\na decode token, another chunk",
                  loc="left", pad=44)

    # The packed queries: one row per token of every chunk, cut by query_start_loc.
    for s, (_, chunk) in enumerate(BATCH):
        bottom.barh(0, chunk, left=starts[s], color=COLORS["query"], edgecolor=COLORS["paper"], height=0.6)
        bottom.text(starts[s] + chunk / 2, 0, f"seq {s}", ha="center", va="center", fontsize=9,
                    color=COLORS["dark"])
    for x in starts:
        bottom.annotate(f"{x}", (x, -0.3), xytext=(x, -0.95), ha="center", fontsize=9,
                        arrowprops={"arrowstyle": "-", "color": COLORS["ink"], "lw": 0.8})
    bottom.set_xlim(-0.3, starts[-1] + 0.3)
    bottom.set_ylim(-1.2, 0.5)
    bottom.set_xticks([])  # the row numbers that matter are query_start_loc's, drawn above
    bottom.set_yticks([])
    bottom.set_xlabel(f"rows of q [num_tokens = {starts[-1]}, num_heads, head_dim]\nquery_start_loc = "
                      f"{starts.tolist()}")
    for side in ("left", "top", "right", "bottom"):
        bottom.spines[side].set_visible(False)
    fig.tight_layout()
    return save(fig, path)


def main() -> None:
    for path in (causal_mask_figure(HERE / "figures" / "causal_mask.svg"),
                 ragged_batch_figure(HERE / "figures" / "ragged_batch.svg")):
        print(f"wrote {path.relative_to(HERE.parents[2])}")


if __name__ == "__main__":
    main()
