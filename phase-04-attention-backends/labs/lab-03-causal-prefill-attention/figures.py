"""Figures of lab 04-03, drawn from the lab's own definitions (``python figures.py`` rewrites them).

- ``figures/causal_mask.png``: the causal mask of a chunk at ``start`` over the paged keys: which
  key positions each query row sees, block by block, with each logical block's physical id.
- ``figures/ragged_batch.png``: a batch of chunks as the kernel receives it: the packed queries,
  ``query_start_loc``, ``seq_lens`` and the prefix each chunk continues.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

import numpy as np  # noqa: E402

from labkit.figures import COLORS, pyplot, save  # noqa: E402

# The example of the mask figure: a chunk of 7 tokens after a prefix of 10, blocks of 4.
START, CHUNK, BLOCK_SIZE = 10, 7, 4
BLOCK_TABLE = [6, 2, 9, 0, 4]  # logical block -> physical block, as a shuffled pool hands them out
# The example of the batch figure: (prefix, chunk) per sequence.
BATCH = [(0, 5), (9, 4), (12, 1), (3, 3)]


def causal_mask_figure(path: Path) -> Path:
    plt = pyplot()
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    seq_len = START + CHUNK
    slots = len(BLOCK_TABLE) * BLOCK_SIZE
    t = np.arange(slots)[None, :]
    pos = START + np.arange(CHUNK)[:, None]
    # 0: prefix key, visible; 1: chunk key, visible; 2: masked future; 3: past seq_len, never read.
    kind = np.where(t < START, 0, 1)
    kind = np.where(t > pos, 2, kind)
    kind = np.where(t >= seq_len, 3, kind)
    cmap = ListedColormap([COLORS["valid"], COLORS["query"], COLORS["free"], COLORS["poison"]])

    fig, ax = plt.subplots(figsize=(9.5, 3.9))
    ax.imshow(kind, cmap=cmap, vmin=-0.5, vmax=3.5, aspect="equal")
    ax.set_xticks(range(slots), [str(x) for x in range(slots)], fontsize=7)
    ax.set_yticks(range(CHUNK), [f"row {i}: position {START + i}" for i in range(CHUNK)], fontsize=8)
    ax.set_xlabel("key position t (logical), read through the block table")
    for b, physical in enumerate(BLOCK_TABLE):
        if b:
            ax.axvline(b * BLOCK_SIZE - 0.5, color="white", lw=3)
        ax.text(b * BLOCK_SIZE + (BLOCK_SIZE - 1) / 2, -0.9, f"logical block {b}\n= physical {physical}",
                ha="center", va="bottom", fontsize=8, color=COLORS["text"])
    for i in range(CHUNK):  # the diagonal: each row's own position
        ax.text(START + i, i, "self", ha="center", va="center", fontsize=6, color=COLORS["text"])
    ax.set_xticks(np.arange(-0.5, slots, 1), minor=True)
    ax.set_yticks(np.arange(-0.5, CHUNK, 1), minor=True)
    ax.grid(which="minor", color="white", lw=0.6)
    ax.tick_params(which="minor", length=0)
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    ax.legend(handles=[Patch(color=COLORS["valid"], label=f"cached prefix (0 .. {START - 1}): every row sees it"),
                       Patch(color=COLORS["query"], label="the chunk, up to the row's own position"),
                       Patch(color=COLORS["free"], label="the row's future: masked (weight 0)"),
                       Patch(color=COLORS["poison"], label=f"past seq_len = {seq_len}: never read")],
              loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, fontsize=8, frameon=False)
    ax.set_title(f"A chunk of {CHUNK} tokens at start = {START}: row i sees keys 0 .. start + i "
                 f"(blocks of {BLOCK_SIZE})", fontsize=10, pad=34)
    return save(fig, path)


def ragged_batch_figure(path: Path) -> Path:
    plt = pyplot()
    from matplotlib.patches import Patch

    starts = np.concatenate([[0], np.cumsum([m for _, m in BATCH])])
    seq_lens = [c + m for c, m in BATCH]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9.5, 4.6), gridspec_kw={"height_ratios": [3, 1.2]})

    # Each sequence: its prefix (already in the cache) and this step's chunk, in positions.
    for s, (prefix, chunk) in enumerate(BATCH):
        y = len(BATCH) - 1 - s
        top.barh(y, prefix, color=COLORS["valid"], edgecolor="white")
        top.barh(y, chunk, left=prefix, color=COLORS["query"], edgecolor="white")
        top.text(prefix + chunk + 0.3, y, f"seq_lens[{s}] = {seq_lens[s]}  (prefix {prefix} = seq_len - query_len)",
                 va="center", fontsize=8)
    top.set_yticks(range(len(BATCH)), [f"sequence {s}" for s in reversed(range(len(BATCH)))], fontsize=8)
    top.set_xlim(-0.5, max(seq_lens) + 16)
    top.set_xlabel("position in the sequence")
    top.legend(handles=[Patch(color=COLORS["valid"], label="prefix: in the paged cache from earlier steps"),
                        Patch(color=COLORS["query"], label="this step's chunk (its K/V written just before)")],
               loc="lower right", fontsize=8)
    top.set_title("A ragged batch: a prompt from scratch, a chunk after a prefix, a decode token, another chunk",
                  fontsize=10)

    # The packed queries: one row per token of every chunk, cut by query_start_loc.
    for s, (_, chunk) in enumerate(BATCH):
        bottom.barh(0, chunk, left=starts[s], color=COLORS["query"], edgecolor="white", height=0.6)
        bottom.text(starts[s] + chunk / 2, 0, f"seq {s}", ha="center", va="center", fontsize=8)
    for x in starts:
        bottom.annotate(f"{x}", (x, -0.3), xytext=(x, -0.95), ha="center", fontsize=8,
                        arrowprops={"arrowstyle": "-", "color": COLORS["text"], "lw": 0.8})
    bottom.set_xlim(-0.5, max(seq_lens) + 16)
    bottom.set_ylim(-1.2, 0.5)
    bottom.set_xticks([])  # the row numbers that matter are query_start_loc's, drawn above
    bottom.set_yticks([])
    bottom.set_xlabel(f"rows of q [num_tokens = {starts[-1]}, num_heads, head_dim]; query_start_loc = "
                      f"{starts.tolist()}", fontsize=9)
    for side in ("left", "top", "right", "bottom"):
        bottom.spines[side].set_visible(False)
    fig.tight_layout()
    return save(fig, path)


def main() -> None:
    for path in (causal_mask_figure(HERE / "figures" / "causal_mask.png"),
                 ragged_batch_figure(HERE / "figures" / "ragged_batch.png")):
        print(f"wrote {path.relative_to(HERE.parents[2])}")


if __name__ == "__main__":
    main()
