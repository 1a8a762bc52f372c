"""The course map on the site's home page: the labs in study order, and what each builds on.

Drawn from the registry (``registry.LABS`` for the order, ``registry.NEEDS`` for the arrows) as an
SVG written into the page, so that each lab is a link and the colours follow the site's light and
dark schemes (docs/assets/site.css styles the classes). One row per lab, a phase's name above its
first lab; an arc on the left from each lab to every lab that builds on it directly (a need that
another need already implies is left to the text under the lab's title).
"""

from __future__ import annotations

import html

from labkit.course import registry
from labkit.course.registry import Lab

WIDTH = 600  # px: the map's natural width, under the site's 688-px column
ROW = 50  # px per lab
PHASE_ROW = 30  # px for a phase's name
BOX_LEFT = 150  # px: the arcs live left of this
TITLE_SIZE, NOTE_SIZE = 15, 12.5  # px


def direct_needs() -> dict[str, set[str]]:
    """Each lab's needs without those another of its needs already builds on (a transitive reduction)."""
    needs = {lab.id: set(lab.needs) for lab in registry.LABS}

    def ancestors(lab_id: str, seen: set[str]) -> set[str]:
        for parent in needs.get(lab_id, ()):
            if parent not in seen:
                seen.add(parent)
                ancestors(parent, seen)
        return seen

    return {lab_id: {n for n in mine if not any(n in ancestors(other, set()) for other in mine - {n})}
            for lab_id, mine in needs.items()}


def _layout() -> tuple[list[tuple[str, float, Lab | str]], float]:
    """The rows, top to bottom: ("phase", y, name) or ("lab", y, lab); and the total height."""
    rows, y, seen = [], 8.0, set()
    for lab in registry.LABS:
        if lab.phase not in seen:
            seen.add(lab.phase)
            rows.append(("phase", y, registry.PHASES[lab.phase]))
            y += PHASE_ROW
        rows.append(("lab", y, lab))
        y += ROW
    return rows, y + 4


def course_map(link) -> str:
    """The map as an inline ``<svg>``, on one line per element and without blank lines (Markdown keeps
    it as raw HTML); ``link(lab)`` gives the href of a lab's page."""
    rows, height = _layout()
    centre = {item.id: y + (ROW - 8) / 2 for kind, y, item in rows if kind == "lab"}
    position = {lab.id: i for i, lab in enumerate(registry.LABS)}
    phases = list(registry.PHASES)
    out = [f'<svg class="course-map" viewBox="0 0 {WIDTH} {height:.0f}" width="{WIDTH}" height="{height:.0f}" '
           f'role="img" aria-labelledby="course-map-title" xmlns="http://www.w3.org/2000/svg">',
           '<title id="course-map-title">The labs in study order; an arc joins a lab to each later lab that '
           'builds on it</title>',
           '<defs><marker id="course-map-arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" '
           'markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" class="course-map__arrowhead"/></marker></defs>']
    for lab_id, parents in direct_needs().items():
        for parent in sorted(parents, key=position.get):
            span = position[lab_id] - position[parent]
            depth = min(BOX_LEFT - 12, 18 + 17 * span)
            y0, y1 = centre[parent], centre[lab_id]
            out.append(f'<path class="course-map__arc" d="M{BOX_LEFT},{y0:.0f} C{BOX_LEFT - depth},{y0:.0f} '
                       f'{BOX_LEFT - depth},{y1:.0f} {BOX_LEFT - 2},{y1:.0f}" marker-end="url(#course-map-arrow)"/>')
    for kind, y, item in rows:
        if kind == "phase":
            out.append(f'<text class="course-map__phase" x="{BOX_LEFT}" y="{y + 18:.0f}" '
                       f'font-size="{NOTE_SIZE + 1}">{html.escape(item)}</text>')
            continue
        lab = item
        builds = ", ".join(lab.needs) if lab.needs else "nothing: the first lab"
        colour = f"course-map__phase-{phases.index(lab.phase)}"
        out += [f'<a href="{html.escape(link(lab))}" class="course-map__lab {colour}">',
                f'<title>{html.escape(lab.id)} {html.escape(lab.title)}: {html.escape(lab.builds)}</title>',
                f'<rect x="{BOX_LEFT}" y="{y:.0f}" width="{WIDTH - BOX_LEFT - 2}" height="{ROW - 8}" rx="6"/>',
                f'<rect class="course-map__stripe" x="{BOX_LEFT}" y="{y:.0f}" width="6" height="{ROW - 8}" rx="3"/>',
                f'<text x="{BOX_LEFT + 14}" y="{y + 18:.0f}" font-size="{TITLE_SIZE}"><tspan class="course-map__id">'
                f'{lab.id}</tspan> {html.escape(lab.title)}</text>',
                f'<text class="course-map__note" x="{BOX_LEFT + 14}" y="{y + 35:.0f}" font-size="{NOTE_SIZE}">'
                f'{html.escape(short_runs_on(lab))} · builds on {builds}</text>',
                "</a>"]
    out.append("</svg>")
    return "\n".join(out)


def short_runs_on(lab: Lab) -> str:
    """Where a lab runs, in a few words for the map."""
    if "model" in lab.tags or "triton" in lab.tags:
        return "GPU or CPU"
    if "distributed" in lab.tags:
        return "CPU ranks or GPUs"
    return "CPU"
