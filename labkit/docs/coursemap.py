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
# The phone's map: as wide as a 390-px screen's column, the arcs squeezed, a title or a note that
# does not fit on one line wrapped onto the next (never cut), the text as large as on a desktop.
NARROW_WIDTH, NARROW_BOX_LEFT = 356, 62
NARROW_TITLE_CHARS, NARROW_NOTE_CHARS = 33, 41
LINE = 18  # px between the lines of a wrapped title or note


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


def _wrap(text: str, chars: int | None) -> list[str]:
    """``text`` in lines of at most ``chars`` characters, broken between words (None: one line)."""
    if chars is None:
        return [text]
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= chars:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def _layout(title_chars: int | None = None, note_chars: int | None = None):
    """The rows, top to bottom: ("phase", y, name, 0, []) or ("lab", y, lab, height, [title lines],
    [note lines]); and the total height."""
    rows, y, seen = [], 8.0, set()
    for lab in registry.LABS:
        if lab.phase not in seen:
            seen.add(lab.phase)
            rows.append(("phase", y, registry.PHASES[lab.phase], 0, [], []))
            y += PHASE_ROW
        title = _wrap(f"{lab.id} {lab.title}", title_chars)
        note = _wrap(_note(lab), note_chars)
        height = ROW + LINE * (len(title) + len(note) - 2)
        rows.append(("lab", y, lab, height, title, note))
        y += height
    return rows, y + 4


def _note(lab: Lab) -> str:
    builds = ", ".join(lab.needs) if lab.needs else "nothing: the first lab"
    return f"{short_runs_on(lab)} · builds on {builds}"


def course_map(link, narrow: bool = False) -> str:
    """The map as an inline ``<svg>``, on one line per element and without blank lines (Markdown keeps
    it as raw HTML); ``link(lab)`` gives the href of a lab's page. ``narrow``: the phone's map."""
    width, left = (NARROW_WIDTH, NARROW_BOX_LEFT) if narrow else (WIDTH, BOX_LEFT)
    rows, height = _layout(*((NARROW_TITLE_CHARS, NARROW_NOTE_CHARS) if narrow else (None, None)))
    suffix = "-narrow" if narrow else ""
    centre = {item.id: y + (h - 8) / 2 for kind, y, item, h, *_ in rows if kind == "lab"}
    position = {lab.id: i for i, lab in enumerate(registry.LABS)}
    phases = list(registry.PHASES)
    kind_class = "course-map--narrow" if narrow else "course-map--wide"
    out = [f'<svg class="course-map {kind_class}" viewBox="0 0 {width} {height:.0f}" '
           f'width="{width}" height="{height:.0f}" role="img" aria-labelledby="course-map-title{suffix}" '
           'xmlns="http://www.w3.org/2000/svg">',
           f'<title id="course-map-title{suffix}">The labs in study order; an arc joins a lab to each later lab that '
           'builds on it</title>',
           f'<defs><marker id="course-map-arrow{suffix}" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" '
           'markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" class="course-map__arrowhead"/></marker></defs>']
    for lab_id, parents in direct_needs().items():
        for parent in sorted(parents, key=position.get):
            span = position[lab_id] - position[parent]
            depth = min(left - 12, 18 + (17 if not narrow else 5) * span)
            y0, y1 = centre[parent], centre[lab_id]
            out.append(f'<path class="course-map__arc" d="M{left},{y0:.0f} C{left - depth},{y0:.0f} '
                       f'{left - depth},{y1:.0f} {left - 2},{y1:.0f}" marker-end="url(#course-map-arrow{suffix})"/>')
    for kind, y, item, h, title, note in rows:
        if kind == "phase":
            out.append(f'<text class="course-map__phase" x="{left}" y="{y + 18:.0f}" '
                       f'font-size="{NOTE_SIZE + 1}">{html.escape(item)}</text>')
            continue
        lab = item
        colour = f"course-map__phase-{phases.index(lab.phase)}"
        first = title[0].removeprefix(lab.id).strip()
        title_lines = [f'<tspan class="course-map__id">{lab.id}</tspan> {html.escape(first)}',
                       *(html.escape(line) for line in title[1:])]
        out += [f'<a href="{html.escape(link(lab))}" class="course-map__lab {colour}">',
                f'<title>{html.escape(lab.id)} {html.escape(lab.title)}: {html.escape(lab.builds)}</title>',
                f'<rect x="{left}" y="{y:.0f}" width="{width - left - 2}" height="{h - 8}" rx="6"/>',
                f'<rect class="course-map__stripe" x="{left}" y="{y:.0f}" width="6" height="{h - 8}" rx="3"/>']
        out += [f'<text x="{left + 14}" y="{y + 18 + LINE * i:.0f}" font-size="{TITLE_SIZE}">{line}</text>'
                for i, line in enumerate(title_lines)]
        below = y + 35 + LINE * (len(title) - 1)
        out += [f'<text class="course-map__note" x="{left + 14}" y="{below + LINE * i:.0f}" '
                f'font-size="{NOTE_SIZE}">{html.escape(line)}</text>' for i, line in enumerate(note)]
        out.append("</a>")
    out.append("</svg>")
    return "\n".join(out)


def short_runs_on(lab: Lab) -> str:
    """Where a lab runs, in a few words for the map."""
    if "model" in lab.tags or "triton" in lab.tags:
        return "GPU or CPU"
    if "distributed" in lab.tags:
        return "CPU ranks or GPUs"
    return "CPU"
