"""Figures of lab 99-02 (``python figures.py`` rewrites them).

Each is an SVG with a dark-mode twin (``*.dark.svg``), drawn 7 in wide for the site's column.

- ``figures/persistent_batch.svg``: one step of the persistent batch, computed by the reference
  ``update_states`` on a small example: five decoding rows; B and D finish, E arrives with a prompt
  chunk; E takes the lowest hole, the last row moves into the other one (with its block table), and
  the decodes are swapped in front of E. Each row: request, tokens this step, computed tokens, block table.
- ``figures/one_step_ahead.svg``: the host and the GPU over three steps, the host waiting for each step
  (lab 99-01) and the host one step ahead (step 4 of this lab), with lab 99-01's H100 durations per
  decode step at full batch: 4.70 ms of kernels, 3.2 ms of host work (schedule 2.65 ms, inputs
  0.31 ms, update 0.26 ms; its ``results.md``).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from labkit import load_sibling  # noqa: E402
from labkit.figures import COLORS, WIDTH, canvas, pyplot, save  # noqa: E402

# The example: (request, block table) of five decoding rows; B and D finish; E arrives.
ROWS = [("A", [3, 8]), ("B", [5]), ("C", [2, 9, 11]), ("D", [4]), ("F", [6, 7])]
COMPUTED = {"A": 20, "B": 9, "C": 40, "D": 12, "F": 30}
NEW = ("E", [12, 13], 0, 24)  # request, its blocks, computed tokens, tokens this step (a prompt chunk)


def batch_states():
    """The batch after step N, after removing, adding and condensing, and after putting decodes first:
    three lists of (request, tokens this step, computed, block table), computed by the reference."""
    lab = load_sibling(__file__)
    batch = lab.InputBatch(8, 64, 4, lab.Stream("cpu"))
    first = {rid: 1 for rid, _ in ROWS}
    lab.update_states(batch, lab.SchedulerOutput(
        num_scheduled_tokens=first,
        scheduled_new_reqs=[lab.NewRequestData(rid, [1] * COMPUTED[rid], table, COMPUTED[rid]) for rid, table in ROWS]))

    def rows(counts):
        table, n = batch.block_table.np, batch.block_table.num_blocks
        return [(rid, counts[rid], int(batch.num_computed_tokens[i]), table[i, : n[i]].tolist())
                for i, rid in enumerate(batch.req_ids)]

    before = rows(first)
    stay = ["A", "C", "F"]
    counts = {**dict.fromkeys(stay, 1), NEW[0]: NEW[3]}
    for rid in ("B", "D"):
        batch.remove_request(rid)
    batch.add_request(NEW[0], [1] * NEW[3], NEW[1], NEW[2])
    batch.condense()
    condensed = rows(counts)
    batch.reorder_decodes_first(counts)
    return before, condensed, rows(counts)


def persistent_batch_figure(path: Path) -> Path:
    """Three states of the batch side by side, one row per box; the page's inches are the data
    coordinates (7 wide), so each length below is what the reader sees."""
    plt = pyplot()
    from matplotlib.patches import FancyArrowPatch, Rectangle

    before, condensed, final = batch_states()
    height = 4.3
    fig, ax = canvas(plt, height, (0, WIDTH), (0, height))
    ink, dark = COLORS["ink"], COLORS["dark"]
    titles = ["after step N:\nfive decodes", "step N+1: B, D finish;\nE takes the lowest hole,\nthe last row the other",
              "decodes first:\nE swaps with\nthe last decode"]
    left, width, gap = 0.4, 2.0, 0.27  # the first column's left edge, a column's width, the gap for an arrow
    box, pitch, top = 0.46, 0.56, 3.35  # a row's height, the distance between rows, the top of row 0
    block = 0.27  # a block id's square
    finished = {"B", "D"}
    ax.text(0, height - 0.02, "The persistent batch, computed by the reference update_states", ha="left", va="top",
            fontsize=11, weight="bold")
    for k, rows in enumerate((before, condensed, final)):
        x = left + k * (width + gap)
        ax.text(x + width / 2, top + 0.12, titles[k], ha="center", va="bottom", fontsize=9, weight="bold")
        for row in range(5):
            y = top - row * pitch - box
            if k == 0:
                ax.text(x - 0.06, y + box / 2, f"row {row}", ha="right", va="center", fontsize=9,
                        color=COLORS["muted"])
            if row >= len(rows):
                ax.add_patch(Rectangle((x, y), width, box, facecolor=COLORS["free"], edgecolor=COLORS["muted"],
                                       lw=0.6))
                ax.text(x + width / 2, y + box / 2, "(no row)", ha="center", va="center", fontsize=9,
                        color=COLORS["muted"])
                continue
            rid, n, computed, table = rows[row]
            fill = "poison" if (k == 0 and rid in finished) else ("query" if n > 1 else "tail")
            text = ink if fill == "tail" else dark  # the saturated fills stay light in dark mode
            ax.add_patch(Rectangle((x, y), width, box, facecolor=COLORS[fill], edgecolor=ink, lw=0.8))
            what = f"chunk of {n}" if n > 1 else "decode"
            ax.text(x + 0.07, y + box / 2, f"{rid}: {what}\ncomputed {computed}", ha="left", va="center",
                    fontsize=9, linespacing=1.15, color=text)
            for j, block_id in enumerate(table):
                bx = x + width - 0.05 - (3 - j) * block
                ax.add_patch(Rectangle((bx, y + (box - block) / 2), block, block, facecolor=COLORS["valid"],
                                       edgecolor=COLORS["paper"], lw=1.0))
                ax.text(bx + block / 2, y + box / 2, str(block_id), ha="center", va="center", fontsize=9,
                        color=dark)
        if k < 2:
            ax.add_patch(FancyArrowPatch((x + width + 0.04, top - box / 2), (x + width + gap - 0.04, top - box / 2),
                                         arrowstyle="-|>", mutation_scale=12, color=ink))
    # What moved, from the reference's own rows.
    moved = [rid for i, (rid, *_) in enumerate(condensed) if i < len(before) and before[i][0] != rid]
    ax.text(0, 0.0, f"Rows rewritten in step N+1: {', '.join(moved)}, then the swap. The other rows keep their "
            "place, token ids\nand block tables: a step patches the batch, it never rebuilds it. Blue squares: a "
            "row's block table\n(its block ids), which moves with the row. Red: finishes in step N+1; orange: a "
            "prompt chunk.",
            ha="left", va="bottom", fontsize=9, linespacing=1.3)
    return save(fig, path)


# Lab 99-01's H100 decode step at full batch (its results.md): kernels, and the host's work around them.
GPU_MS = 4.70
HOST_MS = {"schedule + inputs": 2.65 + 0.31, "update": 0.26}
LAUNCH_MS = 0.3  # launching the step (a graph replay and its copies): a fraction of a millisecond


def one_step_ahead_figure(path: Path) -> Path:
    plt = pyplot()
    from matplotlib.patches import Rectangle

    fig, axes = plt.subplots(2, 1, figsize=(WIDTH, 4.4), sharex=True, layout="constrained")
    prepare, update = HOST_MS["schedule + inputs"], HOST_MS["update"]

    def lane(ax, y, start, length, fill, label):
        ax.add_patch(Rectangle((start, y), length, 0.6, facecolor=COLORS[fill], edgecolor=COLORS["paper"], lw=0.8))
        if label:
            # the saturated fills stay light in dark mode; "free" turns dark there, and so does its text's ink
            text = COLORS["ink"] if fill == "free" else COLORS["dark"]
            ax.text(start + length / 2, y + 0.3, label, ha="center", va="center", fontsize=9, color=text)

    # The host waits for every step: prepare, launch, wait, update, then the next.
    ax = axes[0]
    t = 0.0
    for step in range(1, 4):
        lane(ax, 1.0, t, prepare, "query", f"inputs {step}")
        t += prepare
        lane(ax, 1.0, t, LAUNCH_MS, "accent", "")
        gpu_start = t + LAUNCH_MS
        lane(ax, 0.0, gpu_start, GPU_MS, "valid", f"step {step}")
        lane(ax, 1.0, gpu_start, GPU_MS, "free", "wait")
        t = gpu_start + GPU_MS
        lane(ax, 1.0, t, update, "tail", "")
        t += update
    sync_end = t
    idle = 1 - 3 * GPU_MS / sync_end
    ax.set_title(f"The host waits for every step (lab 99-01): the GPU idles {idle:.0%} of the time", loc="left")

    # The host one step ahead: step N+1 is prepared and launched while the GPU runs step N.
    ax = axes[1]
    host, gpu_free = 0.0, 0.0
    launches = []
    for step in range(1, 4):
        lane(ax, 1.0, host, prepare, "query", f"inputs {step}")
        host += prepare
        lane(ax, 1.0, host, LAUNCH_MS, "accent", "")
        host += LAUNCH_MS
        start = max(host, gpu_free)
        lane(ax, 0.0, start, GPU_MS, "valid", f"step {step}")
        gpu_free = start + GPU_MS
        launches.append(gpu_free)
        if step > 1:  # read the step before: wait only for what is left of it
            done = launches[-2]
            if done > host:
                lane(ax, 1.0, host, done - host, "free", "wait" if done - host > 1.0 else "")
                host = done
            lane(ax, 1.0, host, update, "tail", "")
            host += update
    busy = 3 * GPU_MS / (gpu_free - (prepare + LAUNCH_MS))
    ax.set_title(f"The host one step ahead (step 4): from its first kernel on, the GPU is busy {busy:.0%}",
                 loc="left")
    for ax in axes:
        ax.set_ylim(-0.15, 1.75)
        ax.set_yticks([0.3, 1.3], ["GPU", "host"])
        ax.tick_params(axis="y", length=0)
        ax.spines["left"].set_visible(False)
    axes[1].set_xlim(0, sync_end + 0.2)
    axes[1].set_xlabel(f"milliseconds: lab 99-01's H100 decode step at full batch, {GPU_MS} ms of kernels;\n"
                       f"the host takes {prepare:.2f} ms to schedule and build inputs, {update:.2f} ms to update")
    fills = ("query", "accent", "tail", "free", "valid")
    handles = [Rectangle((0, 0), 1, 1, facecolor=COLORS[fill]) for fill in fills]
    fig.legend(handles, ["schedule, build inputs", "launch", "update (read the tokens)", "host waits",
                         "GPU computes"], loc="outside lower center", ncol=3, frameon=False)
    return save(fig, path)


def main() -> None:
    out = HERE / "figures"
    print(persistent_batch_figure(out / "persistent_batch.svg"))
    print(one_step_ahead_figure(out / "one_step_ahead.svg"))


if __name__ == "__main__":
    main()
