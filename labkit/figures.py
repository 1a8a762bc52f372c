"""What the course's figure scripts share: one look, a size the site's column shows legibly, and
SVG files that regenerate byte for byte, each with a twin for dark mode.

Each folder that shows figures has a ``figures.py`` that draws them from the course's own numbers
(``python <folder>/figures.py`` rewrites ``<folder>/figures/*.svg``); a benchmark's ``bench.py``
draws its ``results.svg`` from a run, or again from its committed table (``--plot-from
results.md``). The READMEs link the light SVG; the site shows its ``.dark.svg`` twin in dark mode.
Needs matplotlib (the ``bench`` extra).

Legible means: at most ``COLUMN`` inches wide (the site's column is 688 CSS px, 7.17 in at 96 px to
the inch, so a figure is never shrunk; figures are drawn ``WIDTH`` wide, plus a margin), and no text
under ``MIN_FONT`` points (12 CSS px at that size). ``save`` refuses a figure that breaks either
rule, and a colour near black or white that is not in ``DARK`` (it would vanish on one of the two
backgrounds).

A figure drawn from another implementation than the reference solution (``LAB_IMPL=starter
python <folder>/figures.py``, to see your own numbers) never overwrites the committed SVG:
:func:`save` writes it under the system's temporary folder instead, and prints where.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from labkit.testing.loader import DEFAULT_IMPL, impl_name

ROOT = Path(__file__).resolve().parents[1]
WIDTH = 7.0  # inches: a figure's design width (bbox_inches="tight" adds a margin)
COLUMN = 688 / 96  # inches: the widest a saved figure may be, the site's column at 96 px to the inch
MIN_FONT = 9.0  # points

# One palette for every figure: the same thing has the same colour in every lab.
COLORS = {
    "paper": "#ffffff",  # the background; also text on a saturated fill
    "ink": "#222222",  # text, outlines, arrows
    "muted": "#6b6b6b",  # secondary text and lines
    "grid": "#dddddd",
    "valid": "#4c9be8",  # a valid token / a block in use
    "tail": "#a8cdf2",  # slots of the last block not yet written
    "free": "#e6e6e6",  # free or unused
    "null": "#7f7f7f",  # vLLM's null block (block 0)
    "poison": "#e8604c",  # slots that must never be read
    "query": "#f2b134",
    "accent": "#2ca25f",
    "violet": "#9b72cb",
    "dark": "#1b1b1b",  # text on a light fill that stays light in dark mode (query)
}
COLORS["text"] = COLORS["ink"]
# Bars and lines of a plot, in order: mid tones that read on both backgrounds.
SERIES = (COLORS["valid"], COLORS["poison"], COLORS["accent"], COLORS["query"], COLORS["violet"],
          COLORS["null"], "#b5b5b5")

# Dark mode: each light colour that would not read on a dark page, and what it becomes there.
# The dark background is the site's own (Material's slate scheme).
DARK = {
    COLORS["paper"]: "#1e2029",
    COLORS["ink"]: "#e3e5ea",
    COLORS["muted"]: "#a3a7b0",
    COLORS["grid"]: "#3b3f4b",
    COLORS["free"]: "#3a3e4a",
    COLORS["tail"]: "#2f5f8f",
}

_COLOR = re.compile(r"#[0-9a-fA-F]{6}\b")
_FONT_SIZE = re.compile(r"font-size:\s*([0-9.]+)px")


def pyplot():
    """matplotlib's pyplot with a file-only backend and the course's style, or SystemExit with the
    install command."""
    try:
        import matplotlib
    except ImportError:
        raise SystemExit('figures need matplotlib: pip install -e ".[bench]"') from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ink, paper = COLORS["ink"], COLORS["paper"]
    plt.rcParams.update({
        "font.size": 10,
        # DejaVu Sans lays the text out; a reader without it gets another sans-serif, not Times
        "font.family": "sans-serif",
        "font.sans-serif": ["DejaVu Sans", "Bitstream Vera Sans", "Verdana", "Arial", "Helvetica"],
        "axes.titlesize": 10,
        "axes.labelsize": 10,
        "xtick.labelsize": MIN_FONT,
        "ytick.labelsize": MIN_FONT,
        "legend.fontsize": MIN_FONT,
        "axes.spines.top": False,
        "axes.spines.right": False,
        # every colour explicit, so that dark mode can swap it (SVG's default fill is black)
        "text.color": ink, "axes.edgecolor": ink, "axes.labelcolor": ink, "xtick.color": ink,
        "ytick.color": ink, "hatch.color": ink, "patch.edgecolor": ink, "grid.color": COLORS["grid"],
        "legend.edgecolor": COLORS["grid"], "figure.facecolor": paper, "axes.facecolor": paper,
        "savefig.facecolor": paper, "axes.prop_cycle": matplotlib.cycler(color=list(SERIES)),
        # text stays text: sharp at any zoom, searchable, and its size is checkable (MIN_FONT)
        "svg.fonttype": "none",
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


def canvas(plt, height: float, xlim: tuple[float, float], ylim: tuple[float, float], width: float = WIDTH):
    """A diagram's figure and its one axes, filling the figure, with no axis drawn: ``width`` x
    ``height`` inches showing data coordinates ``xlim`` x ``ylim``."""
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.axis("off")
    return fig, ax


def plain_log_axis(axis) -> None:
    """A log axis (``ax.xaxis`` or ``ax.yaxis``) labelled 1, 2, 5, 10, 20, 50...: matplotlib's
    default writes 10 with a small exponent, under ``MIN_FONT``."""
    from matplotlib import ticker

    axis.set_major_locator(ticker.LogLocator(subs=(1, 2, 5), numticks=8))
    axis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(ticker.NullFormatter())


def save(fig, path: str | Path) -> Path:
    """Write ``fig`` as ``path`` (an ``.svg``) and its dark twin ``<stem>.dark.svg``, without the
    metadata (date, software version) that would change them on every run; return ``path``.

    Raises ValueError when the figure is wider than ``WIDTH`` inches, has text under ``MIN_FONT``
    points, or a near-black or near-white colour that dark mode cannot swap. Under another
    ``LAB_IMPL`` than the reference, both files go to ``output_path(path)``, which is printed."""
    import matplotlib.pyplot as plt

    wanted, path = Path(path), output_path(path)
    if path.suffix != ".svg":
        raise ValueError(f"{path}: figures are SVG files")
    if path != wanted.resolve():
        print(f"LAB_IMPL={impl_name()}: {wanted.name} written to {path} (the committed figure is left as it is)")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight", pad_inches=0.06, metadata={"Date": None, "Creator": None})
    plt.close(fig)
    light = path.read_text(encoding="utf-8")
    problems = check_svg(light)
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))
    dark_path(path).write_text(dark_svg(light), encoding="utf-8")
    return path


def dark_svg(svg: str) -> str:
    """The same figure for the dark page: each colour of ``DARK`` swapped for its dark counterpart."""
    return _COLOR.sub(lambda m: DARK.get(m.group(0).lower(), m.group(0)), svg)


def dark_path(path: Path) -> Path:
    """``x.svg`` -> ``x.dark.svg``: the twin the site shows in dark mode."""
    return path.with_name(path.stem + ".dark.svg")


def svg_size(svg: str) -> tuple[float, float]:
    """An SVG's width and height in points, from matplotlib's ``width="..pt"`` attributes."""
    width = re.search(r'<svg[^>]*\swidth="([0-9.]+)pt"', svg)
    height = re.search(r'<svg[^>]*\sheight="([0-9.]+)pt"', svg)
    if not (width and height):
        raise ValueError("not an SVG written by matplotlib (no width and height in points)")
    return float(width.group(1)), float(height.group(1))


def smallest_font(svg: str) -> float:
    """The smallest font size of the SVG's text, in its own units (points for matplotlib's)."""
    sizes = [float(size) for size in _FONT_SIZE.findall(svg)]
    return min(sizes) if sizes else float("inf")


def _luminance(color: str) -> float:
    r, g, b = (int(color[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def check_svg(svg: str) -> list[str]:
    """What keeps a figure from being legible on the site, in light and dark mode; [] if nothing."""
    problems = []
    width, _ = svg_size(svg)
    if width > COLUMN * 72:
        problems.append(f"{width / 72:.2f} in wide, more than the {COLUMN:.2f} in the site's column shows unshrunk")
    if smallest_font(svg) < MIN_FONT - 1e-6:
        problems.append(f"text of {smallest_font(svg):g} pt, under the {MIN_FONT:g} pt minimum")
    if re.search(r"<text(?![^>]*fill:)[^>]*>(?!\s*<tspan)", svg):
        problems.append("text drawn in SVG's default black (give it a colour from COLORS)")
    if "<image" in svg:
        problems.append("a raster image inside (imshow?): its colours cannot follow dark mode; draw patches")
    if re.search(r"<(text|tspan)\b[^>]*>[^<]*\S {2,}\S", svg):
        problems.append("text with runs of spaces, which SVG shows as one space (align with separate texts)")
    stuck = sorted({c.lower() for c in _COLOR.findall(svg)
                    if c.lower() not in DARK and not 0.06 < _luminance(c.lower()) < 0.85})
    if stuck:
        problems.append(f"colours {stuck} would vanish on the dark page: use COLORS['ink'] / COLORS['paper']")
    return problems


def results_table(path: str | Path, first_header: str) -> list[dict[str, str]]:
    """The rows of the first Markdown table in ``path`` whose first header cell is ``first_header``,
    as dicts keyed by header: how a benchmark redraws its plot from its committed ``results.md``.
    A header that occurs more than once ("µs", "TFLOP/s" after each system) is keyed with the one
    before it: ``"SDPA flash us TFLOP/s"``."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines):
        cells = _cells(line)
        if cells and cells[0] == first_header and number + 1 < len(lines) and set(lines[number + 1]) <= set("|-: "):
            cells = [f"{cells[i - 1]} {cell}" if cells.count(cell) > 1 else cell for i, cell in enumerate(cells)]
            rows = []
            for row in lines[number + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append(dict(zip(cells, _cells(row), strict=True)))
            return rows
    raise ValueError(f"{path}: no table whose first column is {first_header!r}")


def _cells(line: str) -> list[str]:
    line = line.strip()
    if not line.startswith("|"):
        return []
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", line[1:].removesuffix("|"))]


def number(cell: str) -> float | None:
    """A table cell as a number (``"1,465"``, ``"97%"``, ``"0.98x"``, ``"125.1"``), None for ``-``."""
    cell = cell.replace(",", "").rstrip("%x").split()[0] if cell.strip() not in ("", "-") else ""
    return float(cell) if cell else None
