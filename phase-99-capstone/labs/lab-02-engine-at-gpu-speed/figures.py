"""Figures of lab 99-02 (``python figures.py`` rewrites them).

Each is an SVG with a dark-mode twin (``*.dark.svg``), drawn 7 in wide for the site's column.

- ``figures/persistent_batch.svg``: one step of the persistent batch, computed by the reference
  ``update_states`` on a small example: five decoding rows; B and D finish, E arrives with a prompt
  chunk; E takes the lowest hole, the last row moves into the other one (with its block table), and
  the decodes are swapped in front of E. Each row: request, tokens this step, computed tokens, block table.
- ``figures/one_step_ahead.svg``: the host and the GPU over three decode steps at full batch, waiting
  for each step (engine 2 of the benchmark) and one step ahead (engine 3: step 4 added), a model drawn
  to the measured profile of ``results.md`` (trace A): each step's kernel time and its time from one
  step's first kernel to the next's, so that the busy fractions are the table's.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from labkit import load_sibling  # noqa: E402
from labkit.figures import COLORS, WIDTH, canvas, number, pyplot, save  # noqa: E402

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


# The profile this figure is drawn to: trace A's table "GPU over 30 decode steps at full batch" in
# results.md, the two rungs that differ by step 4 alone.
WAITING, AHEAD = "2. + step 3", "3. + step 4"


def measured_steps(results_md: Path = HERE / "results.md") -> dict[str, dict[str, float]]:
    """Trace A's profile in ``results_md``, by engine: kernels and first-to-last-kernel milliseconds per
    step, and the busy fraction, as the benchmark measured them (the first table of its kind: trace A's)."""
    lines = results_md.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| engine | kernels (ms/step) |"))
    header = [cell.strip() for cell in lines[start].strip("|").split("|")]
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        row = dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")), strict=True))
        rows[row["engine"]] = {"kernels": number(row["kernels (ms/step)"]),
                               "span": number(row["first to last kernel (ms/step)"]),
                               "busy": number(row["busy"]) / 100}
    return rows


def one_step_ahead_figure(path: Path) -> Path:
    """Three decode steps at full batch, as a model drawn to the measured means: each step takes its
    measured time from one step's first kernel to the next's, of which its kernels (drawn as one block,
    though on the GPU they are spread over the step) take the measured kernel time. Waiting for each
    step, the host's work fills the rest; one step ahead, the host is the slower side (its step is
    longer than the GPU's), so it works without a pause and the GPU waits for each launch."""
    plt = pyplot()
    from matplotlib.patches import Rectangle

    steps = measured_steps()
    waiting, ahead = steps[WAITING], steps[AHEAD]
    for name, row in ((WAITING, waiting), (AHEAD, ahead)):  # the table's busy is kernels / span
        assert abs(row["kernels"] / row["span"] - row["busy"]) < 0.01, f"results.md's row {name!r} disagrees"
    assert ahead["span"] > ahead["kernels"], "one step ahead, this model needs a host slower than the GPU"
    fig, axes = plt.subplots(2, 1, figsize=(WIDTH, 4.6), sharex=True, layout="constrained")

    def lane(ax, y, start, length, fill, label):
        ax.add_patch(Rectangle((start, y), length, 0.6, facecolor=COLORS[fill], edgecolor=COLORS["paper"], lw=0.8))
        if label:
            # the saturated fills stay light in dark mode; "free" turns dark there, and so does its text's ink
            text = COLORS["ink"] if fill == "free" else COLORS["dark"]
            ax.text(start + length / 2, y + 0.3, label, ha="center", va="center", fontsize=9, color=text)

    # The host waits for every step: its work (schedule, inputs, launch, update), then the step's kernels.
    ax = axes[0]
    gpu, host = waiting["kernels"], waiting["span"] - waiting["kernels"]
    for step in range(3):
        t = step * waiting["span"]
        lane(ax, 1.0, t, host, "query", f"host's work {step + 1}")
        lane(ax, 0.0, t + host, gpu, "valid", f"step {step + 1}")
        lane(ax, 1.0, t + host, gpu, "free", "wait")
    ax.set_title(f"Waiting for every step (engine {WAITING[0]}): the GPU busy {waiting['busy']:.0%}", loc="left")

    # One step ahead: the host prepares step N+1 while the GPU runs step N, and reads step N after.
    ax = axes[1]
    period, gpu = ahead["span"], ahead["kernels"]
    for step in range(3):
        lane(ax, 1.0, step * period, period, "query", f"host's work {step + 1}")
        lane(ax, 0.0, (step + 1) * period, gpu, "valid", f"step {step + 1}")
    ax.set_title(f"One step ahead (engine {AHEAD[0]}): the GPU busy {ahead['busy']:.0%}; it waits for the host",
                 loc="left")
    for ax in axes:
        ax.set_ylim(-0.15, 1.75)
        ax.set_yticks([0.3, 1.3], ["GPU", "host"])
        ax.tick_params(axis="y", length=0)
        ax.spines["left"].set_visible(False)
    axes[1].set_xlim(0, 3 * waiting["span"] + 0.2)
    axes[1].set_xlabel(f"milliseconds: a model drawn to results.md (trace A, H100, decode at full batch).\n"
                       f"Kernels per step {waiting['kernels']:.2f} and {gpu:.2f} ms (one block here); "
                       f"first kernel to next step's {waiting['span']:.2f} and {period:.2f} ms")
    fills = ("query", "free", "valid")
    handles = [Rectangle((0, 0), 1, 1, facecolor=COLORS[fill]) for fill in fills]
    fig.legend(handles, ["host: schedule, inputs, launch, update", "host waits", "GPU computes"],
               loc="outside lower center", ncol=3, frameon=False)
    return save(fig, path)


def main() -> None:
    out = HERE / "figures"
    print(persistent_batch_figure(out / "persistent_batch.svg"))
    print(one_step_ahead_figure(out / "one_step_ahead.svg"))


if __name__ == "__main__":
    main()
