"""The registry of labs, in study order: read from each lab's declaration (``lab.toml`` in its folder,
:mod:`labkit.course.declaration`) and each phase's README (its title).

Everything that lists labs reads this table: the ``labs`` command line (``labs list``), the site
(its home page's lab map and course map, its navigation), the grader, the maintainers' checks.
Numbering follows the book's chapters, not study order, which crosses phases: no lab may need an
idea that a later lab teaches, so each lab comes after the labs it declares it needs (and among
labs ready at once, the smaller id first). 02-06 (numpy) comes before 04-01 (the online softmax in
numpy), which comes before 02-04 (the same recurrence in a Triton kernel), which comes before 04-03
(prefill: the recurrence per query row, then a Triton kernel over query tiles).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from labkit.course import declaration
from labkit.course.declaration import Declaration

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Lab:
    id: str  # "02-06": phase number, lab number
    phase: str  # the phase folder, e.g. "phase-02-paged-attention"
    folder: str  # the lab folder, relative to the repository root
    title: str
    builds: str  # what the learner builds, one line for the lab map
    tags: tuple[str, ...]  # what it needs to run: declaration.TAGS
    needs: tuple[str, ...] = ()  # the ids of the earlier labs this one builds on
    declared: Declaration | None = None  # the whole lab.toml: its API, given modules, references

    @property
    def path(self) -> Path:
        return ROOT / self.folder

    @property
    def uses_torch(self) -> bool:
        """Whether its tests may import torch or Triton: every lab but the Python and numpy ones."""
        return not set(self.tags) <= {"python", "cpu"}

    @property
    def runs_on(self) -> str:
        """Where the lab runs, for the README's map and ``labs list``."""
        if "model" in self.tags:
            return "GPU, or CPU with a tiny model"
        if "triton" in self.tags:
            return "GPU, or CPU via Triton's interpreter"
        if "python" in self.tags:
            return "CPU (plain Python)"
        if "distributed" in self.tags:
            return "CPU (numpy + torch.distributed, gloo), or several GPUs (NCCL)"
        return "CPU (numpy)"


def _lab(d: Declaration) -> Lab:
    folder = d.path.relative_to(ROOT).as_posix()
    return Lab(d.id, folder.split("/")[0], folder, d.title, d.builds, d.tags, d.needs, d)


def _phase_title(phase: str) -> str:
    """A phase's title: the first heading of its README ("# Phase 2: paged attention")."""
    found = re.search(r"^# (.+)$", (ROOT / phase / "README.md").read_text(encoding="utf-8"), re.M)
    if not found:
        raise declaration.DeclarationError(f"{phase}/README.md: no title (a first line '# Phase N: ...')")
    return found.group(1).strip()


# Study order is the order of this tuple.
LABS: tuple[Lab, ...] = tuple(_lab(d) for d in declaration.study_order(declaration.find(ROOT)))
# Every phase folder, by number: its title.
PHASES: dict[str, str] = {
    phase.name: _phase_title(phase.name)
    for phase in sorted(ROOT.glob("phase-*/"), key=lambda p: int(p.name.split("-")[1]))
}
NEEDS: dict[str, tuple[str, ...]] = {lab.id: lab.needs for lab in LABS if lab.needs}


def get(lab_id: str) -> Lab:
    """The lab with this id ("02-06"), or a ValueError that lists the ids."""
    for lab in LABS:
        if lab.id == lab_id:
            return lab
    known = ", ".join(lab.id for lab in LABS)
    raise ValueError(f"no lab {lab_id!r}; the labs are: {known}")


def lab_for_path(path: Path) -> Lab | None:
    """The lab whose folder holds ``path`` (a file or the folder itself), if any."""
    path = Path(path).resolve()
    for lab in LABS:
        if path == lab.path or lab.path in path.parents:
            return lab
    return None


def render_lab_map() -> str:
    """The lab map: a Markdown table in study order (the site's home page shows it)."""
    rows = ["| # | lab | what you build | runs on |", "|---|---|---|---|"]
    for n, lab in enumerate(LABS, start=1):
        rows.append(f"| {n} | [{lab.id} {lab.title}]({lab.folder}/README.md) | {lab.builds} | {lab.runs_on} |")
    return "\n".join(rows)


if __name__ == "__main__":  # python -m labkit.course.registry: the lab map, as Markdown
    print(render_lab_map())
