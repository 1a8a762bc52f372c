"""Lab 02-02's numbers and figures: one request stream, served contiguously and paged.

    python phase-02-paged-attention/labs/lab-02-fragmentation-viz/figures.py          # the reference
    LAB_IMPL=starter python phase-02-paged-attention/labs/lab-02-fragmentation-viz/figures.py   # yours

Prints every figure the README quotes, then draws ``figures/*.svg`` (each with its dark-mode twin)
next to this file (needs matplotlib: ``pip install -e ".[bench]"``). Everything is seeded: two runs
print the same numbers."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import labkit  # noqa: E402
from labkit import figures  # noqa: E402

HERE = Path(__file__).resolve().parent

# The memory both strategies get, in token slots: 16 reservations of MAX_LEN, or 2048 blocks of 16.
MAX_LEN = 2048  # the longest request the contiguous allocator can hold (vLLM's max_model_len)
NUM_SLOTS = 16 * MAX_LEN
BLOCK_SIZE = 16
KIB_PER_TOKEN = 128  # a Llama-3-8B-shaped model in bf16 (lab 02-03): NUM_SLOTS tokens = 4 GiB of KV

# The stream: NUM_REQUESTS requests; arrivals a Poisson process of ARRIVAL_RATE requests per step;
# prompts uniform in PROMPT_RANGE tokens; outputs geometric with mean MEAN_OUTPUT tokens, cut so
# that prompt + output <= MAX_LEN.
SEED = 0
NUM_REQUESTS = 300
ARRIVAL_RATE = 0.5
PROMPT_RANGE = (64, 1024)
MEAN_OUTPUT = 200

BLOCK_SIZES = [1, 2, 4, 8, 16, 32, 64, 128, 256]


def make_stream(seed: int = SEED) -> np.ndarray:
    """The seeded stream: int64 [NUM_REQUESTS, 3] of (arrival step, prompt_len, output_len)."""
    rng = np.random.default_rng(seed)
    arrivals = np.floor(np.cumsum(rng.exponential(1 / ARRIVAL_RATE, NUM_REQUESTS))).astype(np.int64)
    prompts = rng.integers(PROMPT_RANGE[0], PROMPT_RANGE[1] + 1, NUM_REQUESTS)
    outputs = np.minimum(rng.geometric(1 / MEAN_OUTPUT, NUM_REQUESTS), MAX_LEN - prompts)
    return np.stack([arrivals, prompts, outputs], axis=1).astype(np.int64)


def summary(name: str, timeline: dict, stream: np.ndarray) -> dict:
    """The replay's figures; "busy" means steps with requests waiting: memory is the bottleneck."""
    used, reserved, running = timeline["used"], timeline["reserved"], timeline["running"]
    busy = timeline["waiting"] > 0
    return {
        "strategy": name,
        "steps to serve all": len(used),
        "peak running": int(running.max()),
        "mean running, busy": float(running[busy].mean()),
        "used / reserved": float(used.sum() / reserved.sum()),  # slot-steps over the whole replay
        "used / memory, busy": float(used[busy].mean() / NUM_SLOTS),
        "preemptions": int(timeline["preemptions"]),
        "mean wait (steps)": float((timeline["admitted_at"] - stream[:, 0]).mean()),
    }


def print_numbers(lab, stream, contiguous, paged, tradeoff) -> None:
    print("== one instant: the book's example, 4096 slots, reservations of 512 ==")
    for tokens in (32, 33):
        c = lab.admit_contiguous([tokens] * 1000, 4096, 512)
        p = lab.admit_paged([tokens] * 1000, 4096 // 16, 16)
        waste_c = 1 - tokens / 512
        waste_p = lab.internal_fragmentation(tokens, 16) / (lab.blocks_needed(tokens, 16) * 16)
        print(f"requests of {tokens} tokens: contiguous admits {c} (waste {waste_c:.2%} of what it reserves), "
              f"paged with blocks of 16 admits {p} (waste {waste_p:.2%})")

    peaks = stream[:, 1] + stream[:, 2] - 1
    print(f"\n== the stream: {len(stream)} requests over {stream[-1, 0] + 1} steps (seed {SEED}) ==")
    print(f"prompt {stream[:, 1].mean():.0f} tokens on average, output {stream[:, 2].mean():.0f}, "
          f"peak KV {peaks.mean():.0f} (max {peaks.max()}); memory {NUM_SLOTS} slots "
          f"= {NUM_SLOTS * KIB_PER_TOKEN / 2**20:.0f} GiB at {KIB_PER_TOKEN} KiB per token")
    rows = [summary("contiguous (max_len 2048)", contiguous, stream),
            summary(f"paged (blocks of {BLOCK_SIZE})", paged, stream)]
    headers = list(rows[0])
    table = [[f"{v:.1%}" if "/" in k else f"{v:.1f}" if isinstance(v, float) else str(v) for k, v in row.items()]
             for row in rows]
    print(labkit.bench.markdown_table(headers, table))

    print("\n== block size: waste in last blocks vs block-table length (peak lengths of the stream) ==")
    rows = [[str(b), f"{w:.2%}", f"{t:.1f}", str(m)] for b, w, t, m in zip(
        tradeoff["block_size"], tradeoff["waste_fraction"], tradeoff["table_len"], tradeoff["max_table_len"],
        strict=True)]
    print(labkit.bench.markdown_table(["block_size", "waste", "mean table length", "max table length"], rows))


def draw_memory(plt, contiguous, paged, path) -> None:
    fig, axes = plt.subplots(3, 1, figsize=(figures.WIDTH, 7), sharex=True, height_ratios=[2, 2, 1.4])
    for ax, (name, tl) in zip(axes[:2], [("contiguous, reservations of 2048", contiguous),
                                         (f"paged, blocks of {BLOCK_SIZE} (lab 02-01's pool)", paged)], strict=True):
        steps = np.arange(len(tl["used"]))
        ax.fill_between(steps, 0, tl["used"], color=figures.COLORS["valid"], lw=0, label="used: tokens' KV")
        ax.fill_between(steps, tl["used"], tl["reserved"], color=figures.COLORS["poison"], alpha=0.55, lw=0,
                        label="reserved, not used")
        ax.axhline(NUM_SLOTS, color=figures.COLORS["text"], lw=1, ls="--", label="memory")
        ax.set_ylim(0, NUM_SLOTS * 1.08)
        ax.set_ylabel("token slots")
        ax.set_title(name, loc="left", fontsize=10)
    axes[1].legend(loc="center right", frameon=False)
    for name, tl, color in [("contiguous", contiguous, figures.COLORS["poison"]),
                            ("paged", paged, figures.COLORS["valid"])]:
        axes[2].plot(np.arange(len(tl["running"])), tl["running"], color=color, lw=1.2, label=name)
    axes[2].set_ylabel("running requests")
    axes[2].set_xlabel("engine step")
    axes[2].legend(loc="upper right", frameon=False)
    fig.suptitle(f"The same {NUM_REQUESTS} requests in the same {NUM_SLOTS} slots", x=0.02, ha="left")
    figures.save(fig, path)


def draw_tradeoff(plt, tradeoff, path) -> None:
    fig, ax = plt.subplots(figsize=(figures.WIDTH, 3.6))
    sizes = tradeoff["block_size"]
    ax.plot(sizes, 100 * tradeoff["waste_fraction"], "o-", color=figures.COLORS["poison"], label="waste (% of slots)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(b) for b in sizes])
    ax.set_xlabel("block_size (tokens)")
    ax.set_ylabel("slots wasted in last blocks (%)", color=figures.COLORS["poison"])
    twin = ax.twinx()
    twin.plot(sizes, tradeoff["table_len"], "s-", color=figures.COLORS["valid"], label="mean block-table length")
    twin.set_yscale("log")
    twin.yaxis.set_major_formatter(plt.matplotlib.ticker.ScalarFormatter())  # 100, not 10 with a tiny 2
    twin.set_ylabel("blocks per request (log)", color=figures.COLORS["valid"])
    twin.spines["right"].set_visible(True)
    ax.axvline(16, color=figures.COLORS["muted"], lw=1, ls=":")
    ax.annotate("vLLM's default: 16", (16, ax.get_ylim()[1] * 0.9), fontsize=9, color=figures.COLORS["muted"],
                xytext=(4, 0), textcoords="offset points")
    ax.set_title("Bigger blocks: more waste in the last block, shorter tables", loc="left", fontsize=10)
    figures.save(fig, path)


def main() -> int:
    lab = labkit.load_impl(HERE)
    stream = make_stream()
    contiguous = lab.serve_contiguous(stream, NUM_SLOTS, MAX_LEN)
    paged = lab.serve_paged(stream, NUM_SLOTS // BLOCK_SIZE, BLOCK_SIZE)
    tradeoff = lab.block_size_tradeoff(stream[:, 1] + stream[:, 2] - 1, BLOCK_SIZES)
    print_numbers(lab, stream, contiguous, paged, tradeoff)
    plt = figures.pyplot()
    draw_memory(plt, contiguous, paged, HERE / "figures" / "memory_over_time.svg")
    draw_tradeoff(plt, tradeoff, HERE / "figures" / "block_size_tradeoff.svg")
    print(f"\nwrote {HERE / 'figures'}/memory_over_time.svg and block_size_tradeoff.svg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
