"""What the labs' figure scripts share: one look, and PNGs that regenerate byte for byte.

Each folder that shows figures has a ``figures.py`` that draws them from the course's own
numbers (``python <folder>/figures.py`` rewrites ``<folder>/figures/*.png``); the READMEs link
the PNGs. Needs matplotlib (the ``bench`` extra).
"""

from __future__ import annotations

from pathlib import Path

# One palette for every figure: the same thing has the same colour in every lab.
COLORS = {
    "valid": "#4c9be8",  # a valid token / a block in use
    "tail": "#a8cdf2",  # slots of the last block not yet written
    "free": "#e6e6e6",  # free or unused
    "null": "#7f7f7f",  # vLLM's null block (block 0)
    "poison": "#e8604c",  # slots that must never be read
    "query": "#f2b134",
    "accent": "#2ca25f",
    "text": "#222222",
}


def pyplot():
    """matplotlib's pyplot with a file-only backend and the course's style, or SystemExit with the
    install command."""
    try:
        import matplotlib
    except ImportError:
        raise SystemExit('figures need matplotlib: pip install -e ".[bench]"') from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({
        "font.size": 10,
        "font.family": "DejaVu Sans",
        "axes.spines.top": False,
        "axes.spines.right": False,
        "svg.hashsalt": "paged-attention-labs",
    })
    return plt


def save(fig, path: str | Path) -> Path:
    """Write ``fig`` as a PNG without the metadata (software version, date) that would change it on
    every run; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150, bbox_inches="tight", metadata={"Software": None})
    return path
