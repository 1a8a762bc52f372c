"""Figures of lab 99-01 (``python figures.py`` rewrites them).

- ``figures/engine_step.png``: one engine step, left to right: schedule (blocks from the KV-cache
  manager), prepare the batch (positions, slot mapping, block tables, offsets), the forward pass (every
  layer writes its K/V through the slot mapping, then attends: decodes and prefill chunks), sample,
  update (finished requests free their blocks). Under each stage: what it produces, and the lab whose
  code does it. The example batch is the one drawn in the middle row: two decodes and a prefill chunk.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from labkit.figures import COLORS, pyplot, save  # noqa: E402

# (title, who writes it, what it does, what comes out)
STAGES = [
    ("1. schedule", "you (steps 1, 2)\nlabs 02-01, 02-05",
     "running requests first,\nthen the queue's head;\ntoken budget, seats;\nallocate_slots, prefix hits;\n"
     "no block: preempt\nthe newest",
     "SchedulerOutput\n(who, how many tokens,\nnew block ids)"),
    ("2. prepare the batch", "you (step 3)\nlab 02-06",
     "extend block tables,\npositions from\nnum_computed_tokens,\nslot = table[p // B] * B\n+ p % B",
     "StepInputs\n(input_ids, positions,\nslot_mapping, tables,\nquery_start_loc, seq_lens)"),
    ("3. forward pass", "given (_runner.py)\nlabs 04-03, 04-06",
     "per layer: write K/V\nthrough the slots,\nthen attend: decode\nkernel for 1-token rows,\nprefill kernel "
     "for chunks",
     "logits of each\nsequence's last row"),
    ("4. sample", "given",
     "greedy: argmax\nof each row",
     "one token id\nper sequence"),
    ("5. update", "you (step 4)\nlab 02-05",
     "advance computed tokens;\nappend the token only\nif the chunk reached\nthe end; finish and\nfree the done ones",
     "blocks back in the pool;\nqueues for the next step"),
]

# The example batch drawn under the forward pass: (request, kind, tokens this step, seq_len after it).
BATCH = [("A", "decode", 1, 37), ("B", "decode", 1, 20), ("C", "prefill chunk", 6, 22)]


def engine_step_figure(path: Path) -> Path:
    plt = pyplot()
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    fig, ax = plt.subplots(figsize=(13, 6.2))
    ax.set_xlim(0, 12.8)
    ax.set_ylim(0, 6.2)
    ax.set_axis_off()
    width, gap, left = 2.25, 0.3, 0.15
    for i, (title, who, does, out) in enumerate(STAGES):
        x = left + i * (width + gap)
        mine = who.startswith("you")
        ax.add_patch(FancyBboxPatch((x, 3.3), width, 2.5, boxstyle="round,pad=0.03,rounding_size=0.08",
                                    facecolor=COLORS["query"] if mine else COLORS["tail"], edgecolor=COLORS["text"],
                                    lw=1.0))
        ax.text(x + width / 2, 5.6, title, ha="center", va="center", fontsize=11, weight="bold",
                color=COLORS["text"])
        ax.text(x + width / 2, 4.45, does, ha="center", va="center", fontsize=8.2, color=COLORS["text"])
        ax.text(x + width / 2, 3.62, who, ha="center", va="center", fontsize=8, style="italic",
                color=COLORS["text"])
        ax.text(x + width / 2, 1.75, out, ha="center", va="center", fontsize=8, color=COLORS["text"],
                bbox=dict(boxstyle="round,pad=0.3", facecolor=COLORS["free"], edgecolor="none"))
        ax.add_patch(FancyArrowPatch((x + width / 2, 3.25), (x + width / 2, 2.2), arrowstyle="-|>",
                                     mutation_scale=10, color=COLORS["null"]))
        if i + 1 < len(STAGES):
            ax.add_patch(FancyArrowPatch((x + width + 0.02, 4.55), (x + width + gap - 0.02, 4.55),
                                         arrowstyle="-|>", mutation_scale=14, color=COLORS["text"]))
    # The loop back: the next step starts from the updated queues.
    first_x, last_x = left + width / 2, left + (len(STAGES) - 1) * (width + gap) + width / 2
    ax.add_patch(FancyArrowPatch((last_x, 1.2), (first_x, 1.2), connectionstyle="bar,fraction=-0.04",
                                 arrowstyle="-|>", mutation_scale=14, color=COLORS["accent"], lw=1.5))
    ax.text((first_x + last_x) / 2, 0.95, "next step: requests join (admitted from the queue) and leave "
            "(finished) between steps: continuous batching", ha="center", va="center", fontsize=9,
            color=COLORS["accent"])
    # The example batch, flattened: one row per token, sequence after sequence.
    rows, lo = [], 0
    for name, kind, n, seq_len in BATCH:
        rows.append(f"{name}: {kind}, rows {lo}..{lo + n - 1}, seq_len {seq_len}")
        lo += n
    ax.text(left, 0.2, "example batch (3 sequences, 8 tokens: input_ids [1, 8]):  " + ";  ".join(rows)
            + ";  query_start_loc [0, 1, 2, 8]", ha="left", va="center", fontsize=8, color=COLORS["text"])
    legend = [FancyBboxPatch((0, 0), 1, 1, facecolor=COLORS["query"], edgecolor=COLORS["text"]),
              FancyBboxPatch((0, 0), 1, 1, facecolor=COLORS["tail"], edgecolor=COLORS["text"])]
    ax.legend(legend, ["you write it (starter.py)", "given (earlier labs' references, _runner.py)"],
              loc="upper right", bbox_to_anchor=(1.0, 1.04), ncol=2, fontsize=8.5, frameon=False)
    ax.set_title("One engine step", loc="left", fontsize=13, color=COLORS["text"])
    return save(fig, path)


def main() -> None:
    out = HERE / "figures"
    print(engine_step_figure(out / "engine_step.png"))


if __name__ == "__main__":
    main()
