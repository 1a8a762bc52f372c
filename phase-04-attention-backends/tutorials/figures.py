"""Figures of chapter 03 (and lab 04-05): vLLM's key-cache layout and how a warp walks it.

    python phase-04-attention-backends/tutorials/figures.py

writes ``figures/key_cache_layout.png`` and ``figures/warp_block_deal.png`` next to this file.
Every number drawn is computed here from the formulas of vLLM v0.10.1's
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


def draw_slab(ax, block_size: int, title: str) -> None:
    """One (block, KV head) slab of the key cache: rows are chunks of x dims, columns token slots;
    each 16-byte cell is split between the threads of the token's group."""
    group = max(WARP_SIZE // block_size, 1)
    x = 16 // ITEMSIZE
    chunks = HEAD_SIZE // x
    shades = ["#2c6fb5", "#4c9be8", "#8dbdf0", "#cfe3f7"]  # thread 0..3 of a group, dark to light
    loads = HEAD_SIZE // group // max(16 // (group * ITEMSIZE), 1)  # NUM_VECS_PER_THREAD
    for lane in range(min(WARP_SIZE, block_size * group)):
        for j in range(loads):
            slot, chunk, first, n = key_load(block_size, lane, j)
            left = slot + first / x
            ax.add_patch(rect(left, chunk, n / x, 1, shades[lane % group]))
    for c in range(chunks + 1):
        ax.plot([0, block_size], [c, c], color="white", lw=1.2)
    for s in range(block_size + 1):
        ax.plot([s, s], [0, chunks], color="white", lw=1.2)
    for s in range(block_size):  # the lanes of each column: the same for every load
        lanes = [lane for lane in range(WARP_SIZE) if key_load(block_size, lane, 0)[0] == s]
        label = f"{lanes[0]}" if len(lanes) == 1 else f"{lanes[0]}-{lanes[-1]}"
        ax.text(s + 0.5, -0.35, label, ha="center", va="bottom", fontsize=7, rotation=90 if len(lanes) > 2 else 0)
    parts = []  # who reads what in cell (chunk c, slot s), from lane 0's group
    for o in range(group):
        _, _, first, n = key_load(block_size, o, 0)
        parts.append(f"lane {group}s+{o}: dims {x}c+{first}..{x}c+{first + n - 1}" if group > 1
                     else f"lane s: dims {x}c..{x}c+{x - 1}")
    ax.text(0, chunks + 1.6, "in cell (chunk c, slot s), left to right:\n" + "\n".join(parts), fontsize=7.5, va="top")
    ax.add_patch(rect(0, 0, block_size, 1, None, edge=figures.COLORS["poison"]))
    ax.text(block_size + 0.3, 0.5, f"load j = 0: the whole warp,\n{block_size * 16} contiguous bytes",
            va="center", fontsize=8, color=figures.COLORS["poison"])
    ax.text(block_size + 0.3, 1.5, "load j = 1: the next row", va="center", fontsize=8)
    ax.text(block_size + 0.3, chunks / 2, f"every lane makes\n{loads} loads, one per row", va="center", fontsize=8)
    ax.text(block_size + 0.3, chunks - 0.5, f"load j = {chunks - 1}", va="center", fontsize=8)
    ax.set_xlim(0, block_size)
    ax.set_ylim(chunks, -1.6)
    ax.set_yticks([c + 0.5 for c in range(chunks)], [f"chunk {c}: dims {c * x}-{c * x + x - 1}" for c in range(chunks)],
                  fontsize=7)
    ax.set_xticks([s + 0.5 for s in range(block_size)], [str(s) for s in range(block_size)], fontsize=7)
    ax.set_xlabel("token slot in the block (address +16 bytes per slot)", fontsize=8, labelpad=2)
    ax.set_title(title, fontsize=9, loc="left")
    ax.text(0, -1.45, "warp lanes:", fontsize=7, va="bottom")
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    ax.tick_params(length=0)


def key_cache_layout(path: Path) -> Path:
    plt = figures.pyplot()
    fig, (a, b) = plt.subplots(1, 2, figsize=(15, 7.0), gridspec_kw={"width_ratios": [16, 8], "wspace": 0.75})
    draw_slab(a, 16, "BLOCK_SIZE 16: 2 threads per token, 4 fp16 (8 bytes) each per load")
    draw_slab(b, 8, "BLOCK_SIZE 8: 4 threads per token, 2 fp16 each")
    fig.suptitle(
        "vLLM's key cache [num_blocks, num_kv_heads, head_size/x, block_size, x], x = 16 bytes / 2 = 8 (fp16): "
        "one (block, KV head) slab, head_size 128.\nRows are chunks of x dims, one 16-byte cell per token and chunk; "
        "a row is contiguous, rows follow each other (4 KiB in all). Shades: the threads of one token's group.",
        fontsize=10, x=0.02, ha="left", y=1.02,
    )
    return figures.save(fig, path)


def warp_block_deal(path: Path) -> Path:
    """Lab 04-05's example: sequence 0, 140 tokens in blocks of 16, dealt to 4 warps (v1, no partitions)."""
    plt = figures.pyplot()
    table = [5, 2, 7, 1, 9, 11, 4, 8, 13]
    seq_len, block_size, num_warps = 140, 16, 4
    warp_colors = ["#4c9be8", "#f2b134", "#2ca25f", "#b07cc6"]
    fig, ax = plt.subplots(figsize=(11, 3.4))
    for logical, physical in enumerate(table):
        warp = logical % num_warps  # the warp-stride loop: warp w takes w, w + NUM_WARPS, ...
        valid = min(block_size, seq_len - logical * block_size)
        ax.add_patch(rect(logical, 0, valid / block_size, 1, warp_colors[warp]))
        if valid < block_size:
            masked = rect(logical + valid / block_size, 0, 1 - valid / block_size, 1, figures.COLORS["free"])
            masked.set_hatch("//")
            ax.add_patch(masked)
            ax.text(logical + 0.5, 1.25, f"{valid} valid tokens,\n{block_size - valid} masked", ha="center",
                    fontsize=8)
        ax.text(logical + 0.5, 0.62, f"logical {logical}", ha="center", fontsize=8)
        ax.text(logical + 0.5, 0.32, f"physical {physical}", ha="center", fontsize=8, weight="bold")
        ax.plot([logical, logical], [0, 1], color="white", lw=2)
    for w, color in enumerate(warp_colors):
        blocks = list(range(w, len(table), num_warps))
        ax.text(w * 2.3, -0.45, f"warp {w}: logical {blocks}", color=color, fontsize=9, weight="bold")
    ax.set_xlim(0, len(table))
    ax.set_ylim(-0.7, 1.7)
    ax.axis("off")
    ax.set_title("Sequence 0 of lab 04-05: 140 tokens, block table [5, 2, 7, 1, 9, 11, 4, 8, 13], "
                 "4 warps (v1: no partitions). Warp w scores logical blocks w, w + 4, w + 8 ...", fontsize=9,
                 loc="left")
    return figures.save(fig, path)


def main() -> None:
    out = HERE / "figures"
    for path in (key_cache_layout(out / "key_cache_layout.png"), warp_block_deal(out / "warp_block_deal.png")):
        print(f"wrote {path.relative_to(HERE.parents[1])}")


if __name__ == "__main__":
    main()
