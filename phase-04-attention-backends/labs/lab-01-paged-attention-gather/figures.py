"""Lab 04-01's figure: the online-softmax state (m, denom, acc) after each block, on numbers small
enough to check by hand.

    python phase-04-attention-backends/labs/lab-01-paged-attention-gather/figures.py          # the figure
    python phase-04-attention-backends/labs/lab-01-paged-attention-gather/figures.py --print  # the numbers

``--print`` prints the example's inputs, the state after every block, and what the implementation
under test returns for it (``LAB_IMPL=starter`` for yours): add a print of ``m, denom, acc`` at the
end of your loop body and compare, line by line. The figure goes to ``figures/online_softmax.svg``
(needs matplotlib: ``pip install -e ".[bench]"``).

The example: head size d = 1 and q = [1.0], so every score is its key (q . k / sqrt(1) = k);
five tokens in blocks of 2, so the last block holds one token. The second block raises the
running max (corr < 1 shrinks the history), the third does not (corr = 1).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for labkit

from labkit.testing.cases import paged_copy  # noqa: E402
from labkit.testing.loader import impl_name, load_impl  # noqa: E402

HERE = Path(__file__).resolve().parent
SCORES = [0.5, 1.0, 3.0, 2.0, 2.5]  # = the keys, with q = [1.0] and d = 1
VALUES = [1.0, -1.0, 2.0, 0.0, 4.0]
BLOCK_SIZE = 2
BLOCK_TABLE = [3, 1, 4]  # logical block b lives in physical block BLOCK_TABLE[b]
NUM_BLOCKS = 5


def trace():
    """The state after each block: one dict per block, the recurrence written out step by step."""
    m, denom, acc = -math.inf, 0.0, 0.0
    rows = []
    for start in range(0, len(SCORES), BLOCK_SIZE):
        s = SCORES[start : start + BLOCK_SIZE]
        vals = VALUES[start : start + BLOCK_SIZE]
        m_new = max(m, max(s))
        corr = math.exp(m - m_new) if m != -math.inf else 0.0
        p = [math.exp(x - m_new) for x in s]
        denom = denom * corr + sum(p)
        acc = acc * corr + sum(w * x for w, x in zip(p, vals, strict=True))
        m = m_new
        rows.append({"block": start // BLOCK_SIZE, "tokens": list(range(start, start + len(s))), "s": s,
                     "m": m, "corr": corr, "p": p, "denom": denom, "acc": acc})
    return rows


def dense_answer() -> float:
    weights = [math.exp(x - max(SCORES)) for x in SCORES]
    return sum(w * x for w, x in zip(weights, VALUES, strict=True)) / sum(weights)


def example_inputs():
    """The example as paged_online_attention takes it."""
    k = np.array(SCORES)[:, None]
    v = np.array(VALUES)[:, None]
    k_cache, v_cache = paged_copy(k, v, BLOCK_TABLE, NUM_BLOCKS, BLOCK_SIZE)
    return np.array([1.0]), k_cache, v_cache, np.array(BLOCK_TABLE), len(SCORES), BLOCK_SIZE


def _fmt(xs) -> str:
    return "[" + ", ".join(f"{x:.4f}" for x in xs) + "]"


def print_numbers() -> None:
    print(f"q = [1.0] (d = 1, so score = key); scores = {SCORES}; values = {VALUES}")
    print(f"block_size = {BLOCK_SIZE}, block_table = {BLOCK_TABLE}, seq_len = {len(SCORES)}")
    print(f"{'block':>5} {'scores':>12} {'m':>7} {'corr':>7} {'p':>18} {'denom':>8} {'acc':>8} {'acc/denom':>10}")
    for r in trace():
        print(f"{r['block']:>5} {str(r['s']):>12} {r['m']:>7.4f} {r['corr']:>7.4f} {_fmt(r['p']):>18} "
              f"{r['denom']:>8.4f} {r['acc']:>8.4f} {r['acc'] / r['denom']:>10.4f}")
    print(f"dense attention over the same tokens: {dense_answer():.4f}")
    try:
        out = load_impl(HERE).paged_online_attention(*example_inputs())
        print(f"paged_online_attention (LAB_IMPL={impl_name()}): {float(np.asarray(out)[0]):.4f}")
    except NotImplementedError as err:
        print(f"paged_online_attention (LAB_IMPL={impl_name()}): {err}")


def draw() -> Path:
    from labkit.figures import COLORS, WIDTH, pyplot, save

    plt = pyplot()
    rows = trace()
    fig, (ax, tab) = plt.subplots(2, 1, figsize=(WIDTH, 6.2), gridspec_kw={"height_ratios": [1.25, 0.75]})

    # Top: the scores, block by block, and the running max after each block.
    for r in rows:
        lo, hi = r["tokens"][0] - 0.45, r["tokens"][-1] + 0.45
        ax.axvspan(lo, hi, color=COLORS["free"] if r["block"] % 2 else COLORS["paper"], zorder=0)
        ax.text((lo + hi) / 2, 3.62, f"block {r['block']}\n(physical {BLOCK_TABLE[r['block']]})", ha="center",
                va="bottom", fontsize=9)
        ax.hlines(r["m"], lo, hi, color=COLORS["poison"], lw=2, zorder=2)
        ax.text(hi - 0.05, r["m"] + 0.08, f"m = {r['m']:g}", ha="right", va="bottom", fontsize=10,
                color=COLORS["poison"])
    ax.bar(range(len(SCORES)), SCORES, width=0.55, color=COLORS["valid"], zorder=3)
    for t, (s, v) in enumerate(zip(SCORES, VALUES, strict=True)):
        ax.text(t, s / 2, f"s={s:g}\nv={v:g}", ha="center", va="center", fontsize=9, color=COLORS["paper"], zorder=4)
    ax.set_xlim(-0.6, len(SCORES) - 0.4)
    ax.set_ylim(0, 4.3)
    ax.set_yticks([0, 1, 2, 3])
    ax.set_xticks(range(len(SCORES)), [f"token {t}" for t in range(len(SCORES))])
    ax.set_ylabel("score")
    ax.set_title("The running max m (red) after each block; the bars are the scores", loc="left")

    # Bottom: the state after each block, the numbers --print prints.
    tab.axis("off")
    header = ["after\nblock", "m", "corr", "p", "denom", "acc", "acc / denom"]
    cells = [[str(r["block"]), f"{r['m']:g}", "0 (first)" if r["block"] == 0 else f"{r['corr']:.4f}",
              _fmt(r["p"]), f"{r['denom']:.4f}", f"{r['acc']:.4f}", f"{r['acc'] / r['denom']:.4f}"] for r in rows]
    widths = [0.09, 0.06, 0.12, 0.26, 0.12, 0.12, 0.16]
    table = tab.table(cellText=cells, colLabels=header, colWidths=widths, loc="upper center", cellLoc="center")
    table.auto_set_font_size(False)
    table.set_fontsize(9.5)
    table.scale(1, 1.7)
    for (row, _col), cell in table.get_celld().items():
        cell.set_edgecolor(COLORS["grid"])
        cell.set_facecolor(COLORS["paper"])
        if row == 0:
            cell.set_text_props(fontweight="bold")
            cell.set_height(cell.get_height() * 1.4)
    tab.text(0.0, 0.0, f"answer: acc / denom = {rows[-1]['acc'] / rows[-1]['denom']:.4f}; "
             f"dense attention over the five tokens = {dense_answer():.4f}", fontsize=10, transform=tab.transAxes)
    fig.tight_layout()
    return save(fig, HERE / "figures" / "online_softmax.svg")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--print", action="store_true", help="print the numbers instead of drawing")
    if parser.parse_args().print:
        print_numbers()
    else:
        print(draw())
