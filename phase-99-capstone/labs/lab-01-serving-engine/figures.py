"""Figures of lab 99-01 (``python figures.py`` rewrites them).

- ``figures/engine_step.svg`` (and its dark-mode twin): one engine step, top to bottom: schedule
  (blocks from the KV-cache manager), prepare the batch (positions, slot mapping, block tables,
  offsets), the forward pass (every layer writes its K/V through the slot mapping, then attends:
  decodes and prefill chunks), sample, update (finished requests free their blocks). In each stage:
  who writes it and the labs whose code it uses; beside it, what it produces. Under the steps, the
  example batch of the forward pass: two decodes and a prefill chunk.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from labkit.figures import COLORS, canvas, pyplot, save  # noqa: E402

# (title, who writes it, what it does, what comes out)
STAGES = [
    ("1. schedule", "you (steps 1, 2)\nlabs 02-01, 02-05",
     "running requests first, then the\nqueue's head; token budget, seats;\nallocate_slots, prefix hits; no "
     "free\nblock: preempt the newest",
     "SchedulerOutput: who,\nhow many tokens,\nnew block ids"),
    ("2. prepare the batch", "you (step 3)\nlab 02-06",
     "extend block tables; positions from\nnum_computed_tokens;\nslot = table[p // B] * B + p % B",
     "StepInputs: input_ids,\npositions, slot_mapping,\ntables, query_start_loc,\nseq_lens"),
    ("3. forward pass", "given (_runner.py)\nlabs 04-03, 04-06",
     "per layer: write K/V through the\nslots, then attend: the decode\nkernel for 1-token rows, the "
     "prefill\nkernel for chunks",
     "logits of each\nsequence's last row"),
    ("4. sample", "given", "greedy: the argmax of each row", "one token id\nper sequence"),
    ("5. update", "you (step 4)\nlab 02-05",
     "advance the computed tokens; append\nthe token only if the chunk reached\nthe end; finish and free "
     "the done\nones",
     "blocks back in the pool,\nqueues for the next step"),
]

# The example batch of the forward pass: (request, kind, tokens this step, seq_len after it).
BATCH = [("A", "decode", 1, 37), ("B", "decode", 1, 20), ("C", "prefill chunk", 6, 22)]


def engine_step_figure(path: Path) -> Path:
    plt = pyplot()
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    fig, ax = canvas(plt, 7.0, (0, 10.4), (-1.3, 10.6))
    ink, dark = COLORS["ink"], COLORS["dark"]
    pitch, height, left = 1.72, 1.4, 0.6  # one stage per row
    ax.text(0.05, 10.5, "One engine step", fontsize=12, weight="bold", va="top")
    for i, (title, who, does, out) in enumerate(STAGES):
        y = 8.0 - i * pitch
        mine = who.startswith("you")
        text = dark if mine else ink
        ax.add_patch(FancyBboxPatch((left, y), 6.75, height, boxstyle="round,pad=0.02,rounding_size=0.08",
                                    facecolor=COLORS["query"] if mine else COLORS["tail"], edgecolor=ink, lw=1.0))
        ax.text(left + 0.15, y + height - 0.22, title, ha="left", va="top", fontsize=10, weight="bold", color=text)
        ax.text(left + 0.15, y + 0.15, who, ha="left", va="bottom", fontsize=9, style="italic", color=text)
        ax.text(left + 2.75, y + height / 2, does, ha="left", va="center", fontsize=9, color=text)
        ax.text(7.8, y + height / 2, out, ha="left", va="center", fontsize=9,
                bbox={"boxstyle": "round,pad=0.3", "facecolor": COLORS["free"], "edgecolor": "none"})
        ax.add_patch(FancyArrowPatch((left + 6.8, y + height / 2), (7.72, y + height / 2), arrowstyle="-|>",
                                     mutation_scale=10, color=COLORS["muted"]))
        if i + 1 < len(STAGES):
            ax.add_patch(FancyArrowPatch((left + 1.0, y - 0.02), (left + 1.0, y - pitch + height + 0.02),
                                         arrowstyle="-|>", mutation_scale=12, color=ink))
    # The loop back: the next step starts from the updated queues.
    top, bottom = 8.0 + height / 2, 8.0 - (len(STAGES) - 1) * pitch + height / 2
    green = COLORS["accent"]
    ax.plot([left, 0.25, 0.25], [bottom, bottom, top], color=green, lw=1.5)
    ax.add_patch(FancyArrowPatch((0.25, top), (left, top), arrowstyle="-|>", mutation_scale=14, color=green, lw=1.5))
    ax.text(0.05, 0.85, "Next step: requests join (admitted from the queue) and leave (finished) between\n"
            "steps, continuous batching (the green loop).", va="top", fontsize=9, color=ink)
    # The example batch, flattened: one row per token, sequence after sequence.
    rows, lo = [], 0
    for name, kind, n, seq_len in BATCH:
        rows.append(f"{name}: {kind}, rows {lo}..{lo + n - 1}, seq_len {seq_len}")
        lo += n
    ax.text(0.05, 0.05, f"Example batch: 3 sequences, {lo} tokens (input_ids [1, {lo}]), query_start_loc "
            "[0, 1, 2, 8];\n" + "; ".join(rows[:2]) + ";\n" + rows[2], va="top", fontsize=9)
    legend = [FancyBboxPatch((0, 0), 1, 1, facecolor=COLORS["query"], edgecolor=ink),
              FancyBboxPatch((0, 0), 1, 1, facecolor=COLORS["tail"], edgecolor=ink)]
    ax.legend(legend, ["you write it (starter.py)", "given (earlier labs'\nreferences, _runner.py)"],
              loc="upper right", bbox_to_anchor=(1.0, 1.0), ncol=2, frameon=False)
    return save(fig, path)


def main() -> None:
    out = HERE / "figures"
    print(engine_step_figure(out / "engine_step.svg"))


if __name__ == "__main__":
    main()
