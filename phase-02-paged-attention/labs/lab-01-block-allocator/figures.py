"""Lab 02-01's figure: the free queue, and a cached block taken out of its middle.

    python phase-02-paged-attention/labs/lab-01-block-allocator/figures.py

writes ``figures/free_queue.png`` next to this file (needs matplotlib: ``pip install -e ".[bench]"``).
The states drawn are those of the lab's reference solution, replayed here: a pool of 8 blocks
where request A (blocks 1, 2, 3; the first two full and cached) and then request B (blocks 4, 5)
have finished, and a newcomer whose prompt starts like A's touches A's first block, which sits in
the middle of the free queue.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for labkit

from labkit.figures import COLORS, pyplot, save  # noqa: E402
from labkit.testing.loader import load_sibling  # noqa: E402

HERE = Path(__file__).resolve().parent
BLOCK_SIZE = 4


def replay():
    """The pool before and after the newcomer's touch: (queue ids, cached ids) twice, and the block touched."""
    lab = load_sibling(__file__)
    pool = lab.BlockPool(8)
    a_tokens = list(range(10))
    a = pool.get_new_blocks(3)  # 1, 2, 3
    pool.cache_full_blocks(a, lab.hash_request_tokens(a_tokens, BLOCK_SIZE), 0, 2)
    b = pool.get_new_blocks(2)  # 4, 5
    pool.free_blocks(reversed(a))  # tail first: 3, 2, 1
    pool.free_blocks(reversed(b))  # 5, 4

    def state():
        queue = [blk.block_id for blk in pool.free_block_queue.get_all_free_blocks()]
        return queue, {blk.block_id for blk in pool.blocks if blk.block_hash is not None}

    before = state()
    hit = pool.get_cached_block(lab.hash_request_tokens(a_tokens[:BLOCK_SIZE], BLOCK_SIZE)[0])
    pool.touch([hit])
    return before, state(), hit.block_id


def draw_row(plt, ax, y, queue, cached, title, highlight=None, relinked=()):
    """One queue: head sentinel, blocks, tail sentinel, with next (above) and prev (below) arrows."""
    ax.text(-0.2, y + 0.95, title, ha="left", va="bottom", fontsize=10, fontweight="bold")
    nodes = ["head"] + queue + ["tail"]
    xs = [1.35 * i for i in range(len(nodes))]
    for x, node in zip(xs, nodes, strict=True):
        sentinel = node in ("head", "tail")
        face = "white" if sentinel else COLORS["accent"] if node == highlight else (
            COLORS["valid"] if node in cached else COLORS["free"])
        ax.add_patch(plt.Rectangle((x, y), 0.8, 0.6, facecolor=face, edgecolor=COLORS["text"],
                                   linestyle="--" if sentinel else "-", linewidth=1.0))
        label = f"fake\n{node}" if sentinel else str(node)
        ax.text(x + 0.4, y + 0.3, label, ha="center", va="center", fontsize=7 if sentinel else 10,
                color=COLORS["text"] if sentinel or node not in cached else "white")
    for i in range(len(nodes) - 1):
        changed = nodes[i] in relinked and nodes[i + 1] in relinked
        color = COLORS["poison"] if changed else COLORS["text"]
        ax.annotate("", xy=(xs[i + 1], y + 0.45), xytext=(xs[i] + 0.8, y + 0.45),
                    arrowprops={"arrowstyle": "->", "color": color, "lw": 1.6 if changed else 0.8})
        ax.annotate("", xy=(xs[i] + 0.8, y + 0.15), xytext=(xs[i + 1], y + 0.15),
                    arrowprops={"arrowstyle": "->", "color": color, "lw": 1.6 if changed else 0.8})
    return xs


def draw_free_queue():
    (queue_before, cached_before), (queue_after, cached_after), touched = replay()
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(10.5, 4.8))
    ax.set_xlim(-0.3, 12.4)
    ax.set_ylim(-2.2, 4.4)
    ax.axis("off")

    draw_row(plt, ax, 2.6, queue_before, cached_before,
             "free queue after A (blocks 1, 2, 3) and B (4, 5) finish: front = evicted first", highlight=touched)
    where = queue_before.index(touched)
    neighbours = {queue_before[where - 1], queue_before[where + 1]}
    draw_row(plt, ax, 0.3, queue_after, cached_after,
             f"after touch(block {touched}): its two neighbours are linked to each other", relinked=neighbours)
    # The block that left, below the place it had: no links, ref_cnt 1, still holding its key.
    x = 1.35 * (where + 1) - 0.675
    ax.add_patch(plt.Rectangle((x, -0.75), 0.8, 0.6, facecolor=COLORS["accent"], edgecolor=COLORS["text"]))
    ax.text(x + 0.4, -0.45, str(touched), ha="center", va="center", color="white")
    ax.text(x + 1.0, -0.45, "out of the queue: ref_cnt 1, links None, hash kept", ha="left", va="center", fontsize=8)

    legend = [(COLORS["valid"], "cached (has a block hash)"), (COLORS["free"], "free, no hash"),
              (COLORS["accent"], "the hit a newcomer touches"), (COLORS["poison"], "links rewritten")]
    for i, (color, text) in enumerate(legend):
        ax.add_patch(plt.Rectangle((0.2 + 3.1 * i, -1.9), 0.3, 0.25, color=color))
        ax.text(0.6 + 3.1 * i, -1.78, text, va="center", fontsize=8)
    ax.text(12.3, 3.55, "next_free_block →\n← prev_free_block", ha="right", va="bottom", fontsize=7)
    return save(fig, HERE / "figures" / "free_queue.png")


if __name__ == "__main__":
    print(draw_free_queue())
