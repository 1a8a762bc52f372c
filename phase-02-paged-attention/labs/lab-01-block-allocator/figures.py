"""Lab 02-01's figure: the free queue, and a cached block taken out of its middle.

    python phase-02-paged-attention/labs/lab-01-block-allocator/figures.py

writes ``figures/free_queue.svg`` (and its dark-mode twin) next to this file (needs matplotlib:
``pip install -e ".[bench]"``). The states drawn are those of the lab's reference solution, replayed
here: a pool of 8 blocks where request A (blocks 1, 2, 3; the first two full and cached) and then
request B (blocks 4, 5) have finished, and a newcomer whose prompt starts like A's touches A's first
block, which sits in the middle of the free queue."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for labkit

from labkit.figures import COLORS, canvas, pyplot, save  # noqa: E402
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
    ax.text(-0.1, y + 0.85, title, ha="left", va="bottom", fontsize=10, fontweight="bold")
    nodes = ["head"] + queue + ["tail"]
    xs = [STEP * i for i in range(len(nodes))]
    for x, node in zip(xs, nodes, strict=True):
        sentinel = node in ("head", "tail")
        face = COLORS["paper"] if sentinel else COLORS["accent"] if node == highlight else (
            COLORS["valid"] if node in cached else COLORS["free"])
        ax.add_patch(plt.Rectangle((x, y), BOX, 0.6, facecolor=face, edgecolor=COLORS["ink"],
                                   linestyle="--" if sentinel else "-", linewidth=1.0))
        light_text = not sentinel and (node in cached or node == highlight)
        ax.text(x + BOX / 2, y + 0.3, node, ha="center", va="center", fontsize=9 if sentinel else 11,
                color=COLORS["paper"] if light_text else COLORS["ink"])
    for i in range(len(nodes) - 1):
        changed = nodes[i] in relinked and nodes[i + 1] in relinked
        color = COLORS["poison"] if changed else COLORS["ink"]
        ax.annotate("", xy=(xs[i + 1], y + 0.45), xytext=(xs[i] + BOX, y + 0.45),
                    arrowprops={"arrowstyle": "->", "color": color, "lw": 1.6 if changed else 0.8})
        ax.annotate("", xy=(xs[i] + BOX, y + 0.15), xytext=(xs[i + 1], y + 0.15),
                    arrowprops={"arrowstyle": "->", "color": color, "lw": 1.6 if changed else 0.8})
    return xs


STEP, BOX = 1.3, 0.85  # distance between two nodes of a queue, width of a node


def draw_free_queue():
    (queue_before, cached_before), (queue_after, cached_after), touched = replay()
    plt = pyplot()
    fig, ax = canvas(plt, 4.0, (-0.15, STEP * 9 + BOX + 0.05), (-2.4, 4.3))

    draw_row(plt, ax, 2.9, queue_before, cached_before,
             "After A (blocks 1, 2, 3) and B (4, 5) finish\n(the front is evicted first)", highlight=touched)
    where = queue_before.index(touched)
    neighbours = {queue_before[where - 1], queue_before[where + 1]}
    draw_row(plt, ax, 0.7, queue_after, cached_after,
             f"After touch(block {touched}): its two neighbours are linked", relinked=neighbours)
    # The block that left, below the place it had: no links, ref_cnt 1, still holding its key.
    x = STEP * (where + 1) - STEP / 2
    ax.add_patch(plt.Rectangle((x, -0.35), BOX, 0.6, facecolor=COLORS["accent"], edgecolor=COLORS["ink"]))
    ax.text(x + BOX / 2, -0.05, str(touched), ha="center", va="center", fontsize=11, color=COLORS["paper"])
    ax.text(x + BOX + 0.2, -0.05, "out of the queue: ref_cnt 1,\nlinks None, hash kept", ha="left", va="center",
            fontsize=10)

    legend = [(COLORS["valid"], "cached (has a block hash)"), (COLORS["free"], "free, no hash"),
              (COLORS["accent"], "the hit a newcomer touches"), (COLORS["poison"], "links rewritten")]
    for i, (color, text) in enumerate(legend):
        lx, ly = 6.2 * (i % 2), -1.45 - 0.65 * (i // 2)
        ax.add_patch(plt.Rectangle((lx, ly - 0.15), 0.35, 0.3, facecolor=color, edgecolor=COLORS["ink"], lw=0.5))
        ax.text(lx + 0.5, ly, text, va="center", fontsize=10)
    ax.text(STEP * 9 + BOX, 4.25, "next_free_block →\n← prev_free_block", ha="right", va="top", fontsize=9)
    return save(fig, HERE / "figures" / "free_queue.svg")


if __name__ == "__main__":
    print(draw_free_queue())
