"""Figures of chapter 03 (and lab 04-05): vLLM's key-cache layout and how a warp walks it.

    python phase-04-attention-backends/tutorials/figures.py

writes ``figures/key_cache_layout.svg`` and ``figures/warp_block_deal.svg`` next to this file (each
with its dark-mode twin).
Every number drawn is computed here from the formulas of vLLM v0.22.1's
``csrc/attention/attention_kernels.cuh`` (``THREAD_GROUP_SIZE``, ``VEC_SIZE``, ``x``, the
``vec_idx`` / ``offset1`` / ``offset2`` split of a key load, the warp-stride loop over blocks),
so a change of configuration redraws a true picture.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from labkit import figures  # noqa: E402

WARP_SIZE = 32
ITEMSIZE = 2  # fp16 (or bf16) cache and query
HEAD_SIZE = 128


def key_load(block_size: int, lane: int, j: int) -> tuple[int, int, int, int]:
    """What lane ``lane`` of a warp reads in its ``j``-th key load (first token pass):
    ``(token slot, chunk, first element in the chunk, elements)``, chunk = dims ``chunk * x ...``."""
    group = max(WARP_SIZE // block_size, 1)  # THREAD_GROUP_SIZE: threads per token
    vec = max(16 // (group * ITEMSIZE), 1)  # VEC_SIZE: elements per thread per load
    x = 16 // ITEMSIZE  # elements in 16 bytes
    slot = (lane // group) % block_size  # physical_block_offset of the thread's group
    vec_idx = lane % group + j * group  # thread_group_offset + j * THREAD_GROUP_SIZE
    return slot, vec_idx * vec // x, vec_idx * vec % x, vec


def rect(left, top, width, height, color, edge=None):
    """A rectangle patch (``top`` is the smaller y: the axes run downwards)."""
    from matplotlib.patches import Rectangle

    return Rectangle((left, top), width, height, facecolor=color or "none", edgecolor=edge or "none",
                     lw=2 if edge else 0)


SHOWN_CHUNKS = (0, 1, 2, 3, None, 15)  # the rows drawn (None: a gap for rows 4-14, which repeat the pattern)


def draw_slab(ax, block_size: int, title: str) -> None:
    """One (block, KV head) slab of the key cache: rows are chunks of x dims, columns token slots;
    each 16-byte cell is split between the threads of the token's group."""
    group = max(WARP_SIZE // block_size, 1)
    x = 16 // ITEMSIZE
    chunks = HEAD_SIZE // x
    shades = ["#2c6fb5", "#4c9be8", "#79b1ec", "#9fc8f1"]  # thread 0..3 of a group, dark to light
    loads = HEAD_SIZE // group // max(16 // (group * ITEMSIZE), 1)  # NUM_VECS_PER_THREAD
    row_of = {chunk: r for r, chunk in enumerate(SHOWN_CHUNKS) if chunk is not None}
    paper, ink = figures.COLORS["paper"], figures.COLORS["ink"]
    for lane in range(min(WARP_SIZE, block_size * group)):
        for j in range(loads):
            slot, chunk, first, n = key_load(block_size, lane, j)
            if chunk in row_of:
                ax.add_patch(rect(slot + first / x, row_of[chunk], n / x, 1, shades[lane % group]))
    for r, chunk in enumerate(SHOWN_CHUNKS):
        if chunk is None:
            ax.text(block_size / 2, r + 0.5, "⋮ chunks 4 to 14: the same pattern ⋮", ha="center", va="center",
                    fontsize=9)
            continue
        ax.plot([0, block_size], [r, r], color=paper, lw=1.2)
        ax.plot([0, block_size], [r + 1, r + 1], color=paper, lw=1.2)
        for s in range(block_size + 1):
            ax.plot([s, s], [r, r + 1], color=paper, lw=1.2)
    for s in range(block_size):  # the lanes of each column: the same for every load
        lanes = [lane for lane in range(WARP_SIZE) if key_load(block_size, lane, 0)[0] == s]
        label = f"{lanes[0]}" if len(lanes) == 1 else f"{lanes[0]}-{lanes[-1]}"
        ax.text(s + 0.5, -0.2, label, ha="center", va="bottom", fontsize=9, rotation=90)
    ax.text(-0.15, -0.2, "warp lanes", ha="right", va="bottom", fontsize=9)
    ax.add_patch(rect(0, 0, block_size, 1, None, edge=figures.COLORS["poison"]))
    ax.text(block_size + 0.4, 0.5, f"load j = 0: the whole\nwarp, {block_size * 16} contiguous\nbytes",
            va="center", fontsize=9, color=figures.COLORS["poison"])
    ax.text(block_size + 0.4, 2.0, "load j = 1:\nthe next row", va="center", fontsize=9)
    ax.text(block_size + 0.4, 4.5, f"every lane makes\n{loads} loads, one\nper row", va="center", fontsize=9)
    ax.text(block_size + 0.4, len(SHOWN_CHUNKS) - 0.5, f"load j = {chunks - 1}", va="center", fontsize=9)
    parts = []  # who reads what in cell (chunk c, slot s), from lane 0's group
    for o in range(group):
        _, _, first, n = key_load(block_size, o, 0)
        parts.append(f"lane {group}s+{o}: dims {x}c+{first}..{x}c+{first + n - 1}" if group > 1
                     else f"lane s: dims {x}c..{x}c+{x - 1}")
    ax.set_xlabel("token slot s in the block (address +16 bytes per slot)\nin cell (chunk c, slot s), left to "
                  "right: " + "; ".join(parts[:2]) + (";\n" + "; ".join(parts[2:]) if parts[2:] else ""), labelpad=4)
    ax.set_xlim(0, block_size)
    ax.set_ylim(len(SHOWN_CHUNKS), -0.1)
    ax.set_yticks([r + 0.5 for r, c in enumerate(SHOWN_CHUNKS) if c is not None],
                  [f"chunk {c}: dims {c * x}-{c * x + x - 1}" for c in SHOWN_CHUNKS if c is not None])
    ax.set_xticks([s + 0.5 for s in range(block_size)], [str(s) for s in range(block_size)])
    ax.set_title(title, loc="left", pad=34)
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    ax.tick_params(length=0)
    del ink


def key_cache_layout(path: Path) -> Path:
    plt = figures.pyplot()
    fig, (a, b) = plt.subplots(2, 1, figsize=(figures.WIDTH, 7.4), layout="constrained")
    draw_slab(a, 16, "BLOCK_SIZE 16: 2 threads per token, each loads 4 fp16 (8 bytes) at a time")
    draw_slab(b, 8, "BLOCK_SIZE 8: 4 threads per token, each loads 2 fp16 at a time")
    fig.suptitle(
        "vLLM's key cache [num_blocks, num_kv_heads, head_size/x, block_size, x], x = 16 bytes / 2 = 8\n"
        "(fp16): one (block, KV head) slab, head_size 128. Rows are chunks of x dims, one 16-byte cell\n"
        "per token and chunk; a row is contiguous, rows follow each other (4 KiB in all).\n"
        "Shades: the threads of one token's group.", x=0.0, ha="left", fontsize=10)
    return figures.save(fig, path)


def warp_block_deal(path: Path) -> Path:
    """Lab 04-05's example: sequence 0, 140 tokens in blocks of 16, dealt to 4 warps (v1, no partitions)."""
    plt = figures.pyplot()
    table = [5, 2, 7, 1, 9, 11, 4, 8, 13]
    seq_len, block_size, num_warps = 140, 16, 4
    warp_colors = [figures.COLORS[c] for c in ("valid", "query", "accent", "violet")]
    text_colors = [figures.COLORS[c] for c in ("paper", "dark", "paper", "paper")]
    fig, ax = figures.canvas(plt, 2.9, (-0.05, len(table) + 0.05), (-1.25, 2.45))
    for logical, physical in enumerate(table):
        warp = logical % num_warps  # the warp-stride loop: warp w takes w, w + NUM_WARPS, ...
        valid = min(block_size, seq_len - logical * block_size)
        ax.add_patch(rect(logical, 0, valid / block_size, 1, warp_colors[warp]))
        if valid < block_size:
            masked = rect(logical + valid / block_size, 0, 1 - valid / block_size, 1, figures.COLORS["free"])
            masked.set_hatch("//")
            ax.add_patch(masked)
            ax.text(logical + 0.5, 1.1, f"{valid} valid,\n{block_size - valid} masked", ha="center", va="bottom",
                    fontsize=9)
        middle = logical + valid / block_size / 2  # of the valid part
        ax.text(middle, 0.68, f"logical\n{logical}", ha="center", va="center", fontsize=9, color=text_colors[warp])
        ax.text(middle, 0.2, f"phys\n{physical}" if valid < block_size else f"phys {physical}", ha="center",
                va="center", fontsize=9, weight="bold", color=text_colors[warp], linespacing=0.9)
        ax.plot([logical, logical], [0, 1], color=figures.COLORS["paper"], lw=2)
    for w, color in enumerate(warp_colors):
        blocks = list(range(w, len(table), num_warps))
        ax.text((w % 2) * 4.6, -0.35 - 0.5 * (w // 2), f"warp {w}: logical blocks {blocks}", color=color,
                fontsize=10, weight="bold", va="center")
    ax.text(0, 2.4, "Sequence 0 of lab 04-05: 140 tokens, block table [5, 2, 7, 1, 9, 11, 4, 8, 13], 4 warps\n"
            "(v1: no partitions). Warp w scores logical blocks w, w + 4, w + 8 ...", fontsize=10, va="top")
    return figures.save(fig, path)


def main() -> None:
    out = HERE / "figures"
    for path in (key_cache_layout(out / "key_cache_layout.svg"), warp_block_deal(out / "warp_block_deal.svg")):
        print(f"wrote {path.relative_to(HERE.parents[1])}")


if __name__ == "__main__":
    main()
