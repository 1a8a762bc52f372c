"""Lab 02-05's figure: two requests share their prompt's full blocks, then leave them cached.

    python phase-02-paged-attention/labs/lab-05-share-and-evict/figures.py

writes ``figures/sharing.png`` next to this file (needs matplotlib: ``pip install -e ".[bench]"``).
The states drawn are the lab's reference solution's, replayed here: blocks of 4, a pool of 10
blocks, requests A and B with the same 10-token prompt; then A finishes, then B.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for labkit

from labkit.figures import COLORS, pyplot, save  # noqa: E402
from labkit.testing.loader import load_sibling  # noqa: E402

HERE = Path(__file__).resolve().parent
BLOCK_SIZE = 4
NUM_BLOCKS = 10
PROMPT = list(range(10))


def replay():
    """Block tables and ref counts while A and B run, and the free queue once both have finished."""
    lab = load_sibling(__file__)
    mgr = lab.KVCacheManager(NUM_BLOCKS, BLOCK_SIZE)
    requests = [lab.Request(rid, list(PROMPT)) for rid in "AB"]
    for req in requests:
        hits, num_hit = mgr.get_computed_blocks(req)
        mgr.allocate_slots(req, req.num_tokens - num_hit, num_hit, hits)
        req.num_computed_tokens = req.num_tokens
    tables = {req.request_id: mgr.get_block_ids(req.request_id) for req in requests}
    refs = [b.ref_cnt for b in mgr.block_pool.blocks]
    cached = {b.block_id for b in mgr.block_pool.blocks if b.block_hash is not None}
    for req in requests:
        mgr.free(req)
    queue = [b.block_id for b in mgr.block_pool.free_block_queue.get_all_free_blocks()]
    return tables, refs, cached, queue


def draw_sharing():
    tables, refs, cached, queue = replay()
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(10.5, 6.2))
    ax.set_xlim(-1.2, 13.0)
    ax.set_ylim(-3.3, 6.3)
    ax.axis("off")
    ax.text(-1.1, 5.9, f"two requests, the same {len(PROMPT)}-token prompt (blocks of {BLOCK_SIZE})",
            fontweight="bold")

    # The physical blocks 1..9 in the middle, with their ref counts.
    def block_color(block):
        if refs[block] > 1:
            return COLORS["accent"]
        if refs[block] == 1:
            return COLORS["valid"] if block in cached else COLORS["tail"]
        return COLORS["free"]

    block_x = {block: 0.2 + 1.3 * (block - 1) for block in range(1, NUM_BLOCKS)}
    for block, px in block_x.items():
        ax.add_patch(plt.Rectangle((px, 2.3), 0.9, 0.7, facecolor=block_color(block), edgecolor=COLORS["text"],
                                   linewidth=0.8))
        white = refs[block] > 1 or block in cached
        ax.text(px + 0.45, 2.65, str(block), ha="center", va="center", color="white" if white else COLORS["text"])
        ax.text(px + 1.0, 2.65, f"{refs[block]}", ha="left", va="center", fontsize=7, color=COLORS["null"])
    ax.text(-1.1, 2.65, "physical\nblocks", va="center", fontsize=9, fontweight="bold")
    ax.text(12.0, 3.25, "small numbers: ref_cnt", va="bottom", ha="right", fontsize=7, color=COLORS["null"])

    # A above the blocks, B below: each logical block points at the physical block of its table.
    for (rid, table), y, arrow_end in zip(tables.items(), (4.4, 0.5), (3.0, 2.3), strict=True):
        ax.text(-0.9, y + 0.3, rid, ha="center", va="center", fontweight="bold")
        for logical, block in enumerate(table):
            x = 1.9 * logical
            tokens = PROMPT[logical * BLOCK_SIZE:(logical + 1) * BLOCK_SIZE]
            full = len(tokens) == BLOCK_SIZE
            ax.add_patch(plt.Rectangle((x, y), 1.6, 0.6, facecolor=COLORS["valid"] if full else COLORS["tail"],
                                       edgecolor=COLORS["text"], linewidth=0.8))
            ax.text(x + 0.8, y + 0.3, f"tokens {tokens[0]}-{tokens[-1]}", ha="center", va="center", fontsize=8,
                    color="white" if full else COLORS["text"])
            start_y = y if arrow_end < y else y + 0.6
            ax.annotate("", xy=(block_x[block] + 0.45, arrow_end), xytext=(x + 0.8, start_y),
                        arrowprops={"arrowstyle": "->", "color": COLORS["null"], "lw": 0.8})

    # Bottom: the free queue after A, then B, finished: tails first, the shared prefix last.
    ax.text(-1.1, -0.75, "free queue after A, then B, finish (front = evicted first)", fontweight="bold", fontsize=9)
    for i, block in enumerate(queue):
        px = 0.2 + 1.3 * i
        face = COLORS["valid"] if block in cached else COLORS["free"]
        ax.add_patch(plt.Rectangle((px, -1.9), 0.9, 0.7, facecolor=face, edgecolor=COLORS["text"], linewidth=0.8))
        ax.text(px + 0.45, -1.55, str(block), ha="center", va="center",
                color="white" if block in cached else COLORS["text"])
    ax.text(0.2, -2.15, "never used", fontsize=7, va="top")
    ax.text(0.2 + 1.3 * queue.index(3), -2.15, "A's, then B's partial tail", fontsize=7, va="top")
    ax.text(0.2 + 1.3 * (len(queue) - 2), -2.15, "the shared prefix, cached", fontsize=7, va="top")

    legend = [(COLORS["accent"], "shared by A and B"), (COLORS["valid"], "full block, cached"),
              (COLORS["tail"], "partial block: not cached"), (COLORS["free"], "free, no hash")]
    for i, (color, text) in enumerate(legend):
        ax.add_patch(plt.Rectangle((0.2 + 3.1 * i, -3.1), 0.3, 0.25, color=color))
        ax.text(0.6 + 3.1 * i, -2.98, text, va="center", fontsize=8)
    return save(fig, HERE / "figures" / "sharing.png")


if __name__ == "__main__":
    print(draw_sharing())
