"""Figures of lab 99-02 (``python figures.py`` rewrites them).

- ``figures/persistent_batch.png``: one step of the persistent batch, computed by the reference
  ``update_states`` on a small example: five decoding rows; B and D finish, E arrives with a prompt
  chunk; E takes the lowest hole, the last row moves into the other one (with its block table), and
  the decodes are swapped in front of E. Each row: request, tokens this step, computed tokens, block table.
- ``figures/one_step_ahead.png``: the host and the GPU over three steps, the host waiting for each step
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
from labkit.figures import COLORS, pyplot, save  # noqa: E402

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
    plt = pyplot()
    from matplotlib.patches import FancyArrowPatch, Rectangle

    before, condensed, final = batch_states()
    fig, ax = plt.subplots(figsize=(13.5, 5.2))
    ax.set_xlim(0, 13.5)
    ax.set_ylim(-0.9, 6.4)
    ax.set_axis_off()
    titles = ["after step N: five decodes", "step N+1: B and D finish, E arrives;\nE takes the lowest hole, "
              "the last row the other", "decodes first: E swaps\nwith the last decode"]
    columns = [(0.6, before), (5.1, condensed), (9.6, final)]
    width = 3.8
    finished = {"B", "D"}
    for k, (x, rows) in enumerate(columns):
        ax.text(x + width / 2, 6.0, titles[k], ha="center", va="center", fontsize=9.5, weight="bold",
                color=COLORS["text"])
        for row in range(5):
            y = 4.7 - row * 1.0
            ax.text(x - 0.05, y + 0.35, f"row {row}", ha="right", va="center", fontsize=8, color=COLORS["null"])
            if row >= len(rows):
                ax.add_patch(Rectangle((x, y), width, 0.7, facecolor=COLORS["free"], edgecolor=COLORS["null"], lw=0.6))
                ax.text(x + width / 2, y + 0.35, "(no row)", ha="center", va="center", fontsize=8, color=COLORS["null"])
                continue
            rid, n, computed, table = rows[row]
            color = COLORS["poison"] if (k == 0 and rid in finished) else (
                COLORS["query"] if n > 1 else COLORS["tail"])
            ax.add_patch(Rectangle((x, y), width, 0.7, facecolor=color, edgecolor=COLORS["text"], lw=0.8))
            what = f"chunk of {n}" if n > 1 else "decode"
            ax.text(x + 0.12, y + 0.35, f"{rid}: {what}, computed {computed}", ha="left", va="center", fontsize=8.2,
                    color=COLORS["text"])
            for j, block in enumerate(table):
                bx = x + 2.68 + j * 0.36
                ax.add_patch(Rectangle((bx, y + 0.12), 0.32, 0.46, facecolor=COLORS["valid"], edgecolor="white"))
                ax.text(bx + 0.16, y + 0.35, str(block), ha="center", va="center", fontsize=7, color="white")
        if k + 1 < len(columns):
            ax.add_patch(FancyArrowPatch((x + width + 0.05, 5.65), (x + width + 0.65, 5.65), arrowstyle="-|>",
                                         mutation_scale=14, color=COLORS["text"]))
    # What moved, from the reference's own rows.
    moved = [rid for i, (rid, *_) in enumerate(condensed) if i < len(before) and before[i][0] != rid]
    ax.text(0.6, -0.45, f"Rows rewritten in step N+1: {', '.join(moved)}, then the swap. The other rows, with their "
            "token ids and block tables, stay where they are:\na step patches the batch, it never rebuilds it. "
            "Blue: each row's block table (its block ids), which moves with its row.", ha="left", va="center",
            fontsize=8.5, color=COLORS["text"])
    ax.set_title("The persistent batch (computed by the reference update_states)", loc="left", fontsize=12,
                 color=COLORS["text"])
    return save(fig, path)


# Lab 99-01's H100 decode step at full batch (its results.md): kernels, and the host's work around them.
GPU_MS = 4.70
HOST_MS = {"schedule + inputs": 2.65 + 0.31, "update": 0.26}
LAUNCH_MS = 0.3  # launching the step (a graph replay and its copies): a fraction of a millisecond


def one_step_ahead_figure(path: Path) -> Path:
    plt = pyplot()
    from matplotlib.patches import Rectangle

    fig, axes = plt.subplots(2, 1, figsize=(13, 5.0), sharex=True)
    prepare, update = HOST_MS["schedule + inputs"], HOST_MS["update"]

    def lane(ax, y, start, length, color, label):
        ax.add_patch(Rectangle((start, y), length, 0.6, facecolor=color, edgecolor="white", lw=0.8))
        if length > 0.9:
            ax.text(start + length / 2, y + 0.3, label, ha="center", va="center", fontsize=7.5, color=COLORS["text"])

    # The host waits for every step: prepare, launch, wait, update, then the next.
    ax = axes[0]
    t = 0.0
    for step in range(1, 4):
        lane(ax, 1.0, t, prepare, COLORS["query"], f"schedule, inputs {step}")
        t += prepare
        lane(ax, 1.0, t, LAUNCH_MS, COLORS["accent"], "")
        gpu_start = t + LAUNCH_MS
        lane(ax, 0.0, gpu_start, GPU_MS, COLORS["valid"], f"step {step}")
        lane(ax, 1.0, gpu_start, GPU_MS, COLORS["free"], "wait")
        t = gpu_start + GPU_MS
        lane(ax, 1.0, t, update, COLORS["tail"], "")
        t += update
    sync_end = t
    idle = 1 - 3 * GPU_MS / sync_end
    ax.set_title(f"The host waits for every step (lab 99-01): in this sketch the GPU idles {idle:.0%} of the time",
                 loc="left", fontsize=10.5, color=COLORS["text"])

    # The host one step ahead: step N+1 is prepared and launched while the GPU runs step N.
    ax = axes[1]
    host, gpu_free = 0.0, 0.0
    launches = []
    for step in range(1, 4):
        lane(ax, 1.0, host, prepare, COLORS["query"], f"schedule, inputs {step}")
        host += prepare
        lane(ax, 1.0, host, LAUNCH_MS, COLORS["accent"], "")
        host += LAUNCH_MS
        start = max(host, gpu_free)
        lane(ax, 0.0, start, GPU_MS, COLORS["valid"], f"step {step}")
        gpu_free = start + GPU_MS
        launches.append(gpu_free)
        if step > 1:  # read the step before: wait only for what is left of it
            done = launches[-2]
            if done > host:
                lane(ax, 1.0, host, done - host, COLORS["free"], "wait")
                host = done
            lane(ax, 1.0, host, update, COLORS["tail"], "")
            host += update
    busy = 3 * GPU_MS / (gpu_free - (prepare + LAUNCH_MS))
    ax.set_title(f"The host one step ahead (step 4): after the first step the GPU never waits (busy {busy:.0%} "
                 "from its first kernel on)", loc="left", fontsize=10.5, color=COLORS["text"])
    for ax in axes:
        ax.set_ylim(-0.2, 1.8)
        ax.set_yticks([0.3, 1.3], ["GPU", "host"])
        ax.spines["left"].set_visible(False)
    axes[1].set_xlim(0, sync_end + 0.2)
    axes[1].set_xlabel(f"milliseconds (lab 99-01's H100 decode step at full batch: {GPU_MS} ms of kernels; the host: "
                       f"{prepare:.2f} ms to schedule and build inputs, {update:.2f} ms to update)")
    handles = [Rectangle((0, 0), 1, 1, facecolor=COLORS[c]) for c in ("query", "accent", "tail", "free", "valid")]
    axes[0].legend(handles, ["schedule + inputs", "launch", "update (read the tokens)", "host waits",
                             "GPU computes"], loc="upper right", ncol=5, fontsize=8, frameon=False,
                   bbox_to_anchor=(1.0, 1.32))
    return save(fig, path)


def main() -> None:
    out = HERE / "figures"
    print(persistent_batch_figure(out / "persistent_batch.png"))
    print(one_step_ahead_figure(out / "one_step_ahead.png"))


if __name__ == "__main__":
    main()
