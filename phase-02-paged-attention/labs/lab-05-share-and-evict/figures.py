"""Lab 02-05's figure: two requests share their prompt's full blocks, then leave them cached.

    python phase-02-paged-attention/labs/lab-05-share-and-evict/figures.py

writes ``figures/sharing.svg`` (and its dark-mode twin) next to this file (needs matplotlib: ``pip
install -e ".[bench]"``). The states drawn are the lab's reference solution's, replayed here: blocks
of 4, a pool of 10 blocks, requests A and B with the same 10-token prompt; then A finishes, then B."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for labkit

from labkit.figures import COLORS, canvas, pyplot, save  # noqa: E402
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
    fig, ax = canvas(plt, 5.6, (-1.3, 12.6), (-3.9, 6.2))
    ax.text(-1.25, 5.95, f"Two requests, the same {len(PROMPT)}-token prompt (blocks of {BLOCK_SIZE})",
            fontweight="bold", va="top")

    # The physical blocks 1..9 in the middle, with their ref counts.
    def block_color(block):
        if refs[block] > 1:
            return COLORS["accent"]
        if refs[block] == 1:
            return COLORS["valid"] if block in cached else COLORS["tail"]
        return COLORS["free"]

    block_x = {block: 0.2 + 1.35 * (block - 1) for block in range(1, NUM_BLOCKS)}
    for block, px in block_x.items():
        ax.add_patch(plt.Rectangle((px, 2.3), 0.9, 0.7, facecolor=block_color(block), edgecolor=COLORS["ink"],
                                   linewidth=0.8))
        light = refs[block] > 1 or block in cached
        ax.text(px + 0.45, 2.65, str(block), ha="center", va="center", fontsize=11,
                color=COLORS["paper"] if light else COLORS["ink"])
        ax.text(px + 0.95, 2.65, f"{refs[block]}", ha="left", va="center", fontsize=9, color=COLORS["muted"])
    ax.text(-1.25, 2.65, "physical\nblocks", va="center", fontsize=10, fontweight="bold")
    ax.text(12.4, 3.15, "small numbers: ref_cnt", va="bottom", ha="right", fontsize=9, color=COLORS["muted"])

    # A above the blocks, B below: each logical block points at the physical block of its table.
    for (rid, table), y, arrow_end in zip(tables.items(), (4.3, 0.6), (3.0, 2.3), strict=True):
        ax.text(-0.8, y + 0.3, rid, ha="center", va="center", fontweight="bold", fontsize=11)
        for logical, block in enumerate(table):
            x = 2.0 * logical
            tokens = PROMPT[logical * BLOCK_SIZE:(logical + 1) * BLOCK_SIZE]
            full = len(tokens) == BLOCK_SIZE
            ax.add_patch(plt.Rectangle((x, y), 1.75, 0.6, facecolor=COLORS["valid"] if full else COLORS["tail"],
                                       edgecolor=COLORS["ink"], linewidth=0.8))
            ax.text(x + 0.875, y + 0.3, f"tokens {tokens[0]}-{tokens[-1]}", ha="center", va="center", fontsize=9,
                    color=COLORS["paper"] if full else COLORS["ink"])
            start_y = y if arrow_end < y else y + 0.6
            ax.annotate("", xy=(block_x[block] + 0.45, arrow_end), xytext=(x + 0.875, start_y),
                        arrowprops={"arrowstyle": "->", "color": COLORS["muted"], "lw": 0.9})

    # Bottom: the free queue after A, then B, finished: tails first, the shared prefix last.
    ax.text(-1.25, -0.45, "Free queue after A, then B, finish (the front is evicted first)", fontweight="bold",
            fontsize=10)
    for i, block in enumerate(queue):
        px = 0.2 + 1.35 * i
        face = COLORS["valid"] if block in cached else COLORS["free"]
        ax.add_patch(plt.Rectangle((px, -1.6), 0.9, 0.7, facecolor=face, edgecolor=COLORS["ink"], linewidth=0.8))
        ax.text(px + 0.45, -1.25, str(block), ha="center", va="center", fontsize=11,
                color=COLORS["paper"] if block in cached else COLORS["ink"])
    notes = [(0, "never used"), (queue.index(3), "A's, then B's\npartial tail"),
             (len(queue) - 2, "the shared prefix,\ncached")]
    for i, text in notes:
        ax.text(0.2 + 1.35 * i, -1.8, text, fontsize=9, va="top")

    legend = [(COLORS["accent"], "shared by A and B"), (COLORS["valid"], "full block, cached"),
              (COLORS["tail"], "partial block: not cached"), (COLORS["free"], "free, no hash")]
    for i, (color, text) in enumerate(legend):
        lx, ly = 0.2 + 6.2 * (i % 2), -3.0 - 0.6 * (i // 2)
        ax.add_patch(plt.Rectangle((lx, ly - 0.15), 0.35, 0.3, facecolor=color, edgecolor=COLORS["ink"], lw=0.5))
        ax.text(lx + 0.5, ly, text, va="center", fontsize=10)
    return save(fig, HERE / "figures" / "sharing.svg")


if __name__ == "__main__":
    print(draw_sharing())
