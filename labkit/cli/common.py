"""What the ``labs`` commands share: the consoles, the usage error, finding a lab, the progress bar."""

from __future__ import annotations

import re
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from labkit.course import registry
from labkit.course.registry import Lab

console = Console()
err_console = Console(stderr=True)


class UsageError(Exception):
    """Bad input from the command line: printed as one message, exit status 2."""


def resolve_lab(text: str) -> Lab:
    """A lab from its id ("02-06", "2-6", "99-01") or its folder (absolute or relative)."""
    found = re.fullmatch(r"(\d{1,2})-(\d{1,2})", text.strip())
    if found:
        lab_id = f"{int(found.group(1)):02d}-{int(found.group(2)):02d}"
        if any(lab.id == lab_id for lab in registry.LABS):
            return registry.get(lab_id)
    path = Path(text)
    for candidate in (path, registry.ROOT / path):
        lab = registry.lab_for_path(candidate) if candidate.exists() else None
        if lab is not None:
            return lab
    known = ", ".join(lab.id for lab in registry.LABS)
    raise UsageError(f"no lab {text!r}; the labs are: {known} (see `labs list`)")


def require_folder(lab: Lab, *files: str) -> None:
    """UsageError unless the lab's folder (and ``files`` in it) exist in this checkout."""
    if not lab.path.is_dir():
        raise UsageError(f"lab {lab.id}'s folder {lab.folder}/ is not in this checkout yet")
    missing = [f for f in files if not (lab.path / f).exists()]
    if missing:
        raise UsageError(f"lab {lab.id} ({lab.folder}/) has no {', '.join(missing)} yet")



def progress_bar() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=err_console, transient=True)

