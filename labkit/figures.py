"""What the labs' figure scripts share: one look, and PNGs that regenerate byte for byte.

Each folder that shows figures has a ``figures.py`` that draws them from the course's own
numbers (``python <folder>/figures.py`` rewrites ``<folder>/figures/*.png``); the READMEs link
the PNGs. Needs matplotlib (the ``bench`` extra).

A figure drawn from another implementation than the reference solution (``LAB_IMPL=starter
python <folder>/figures.py``, to see your own numbers) never overwrites the committed PNG:
:func:`save` writes it under the system's temporary folder instead, and prints where.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from labkit.testing.loader import DEFAULT_IMPL, impl_name

ROOT = Path(__file__).resolve().parents[1]

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


def output_path(path: str | Path) -> Path:
    """Where a figure meant for ``path`` goes: ``path`` itself when ``LAB_IMPL`` is unset or names the
    reference solution; otherwise the same path below ``<temp>/paged-attention-labs-figures/<LAB_IMPL>/``,
    so that the committed figures only ever show the reference."""
    path = Path(path).resolve()
    impl = impl_name()
    if impl == DEFAULT_IMPL:
        return path
    rel = path.relative_to(ROOT) if ROOT in path.parents else Path(path.name)
    return Path(tempfile.gettempdir()) / "paged-attention-labs-figures" / re.sub(r"[^\w.-]", "_", impl) / rel


def save(fig, path: str | Path) -> Path:
    """Write ``fig`` as a PNG without the metadata (software version, date) that would change it on
    every run, at ``output_path(path)`` (printed when that is not ``path``); returns where it went."""
    wanted, path = Path(path), output_path(path)
    if path != wanted.resolve():
        print(f"LAB_IMPL={impl_name()}: {wanted.name} written to {path} (the committed figure is left as it is)")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150, bbox_inches="tight", metadata={"Software": None})
    return path
