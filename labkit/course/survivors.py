"""A lab's list of surviving mutants: the mutants no test kills, each with why no valid input tells it
from the solution.

The list is ``survivors.toml`` in the lab folder, data read without running it::

    # Lab 04-01: the mutants no test kills (labs mutate 04-01), and why each is equivalent.

    [[survivor]]
    file = "solution.py"
    old = "    scale = 1.0 / np.sqrt(q.shape[0])\\n"
    new = "    scale = 1.0 / np.sqrt(q.shape[-1])\\n"
    why = "q is checked to be 1-D, so its first dimension is its last"

``file``, ``old`` and ``new`` name the mutant (:class:`labkit.course.mutants.Mutant`: the file and its
edit, never a line number); ``why`` is one line: the reason no input the docstrings accept makes
the mutant answer differently. ``gpu_only = true`` marks a mutant of code that only tests needing
a GPU reach: without CUDA it survives (its tests skip), with CUDA a test must kill it.

A lab without the file is not under mutation testing yet; an empty list is a file with no entry.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

FILE = "survivors.toml"
_FIELDS = {"file", "old", "new", "why", "gpu_only"}


class SurvivorsError(ValueError):
    """The list is malformed: the message names the file and the entry."""


@dataclass(frozen=True)
class Survivor:
    source: str
    old: str
    new: str
    why: str
    gpu_only: bool = False

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.source, self.old, self.new)


def path(lab_dir: Path) -> Path:
    return Path(lab_dir) / FILE


def read(lab_dir: Path) -> list[Survivor] | None:
    """The lab's list, in file order; None when the lab has none. SurvivorsError when an entry lacks a
    field, has an empty ``why``, has a field it should not, or repeats another."""
    file = path(lab_dir)
    if not file.is_file():
        return None
    where = f"{Path(lab_dir).name}/{FILE}"
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise SurvivorsError(f"{where}: not TOML ({err})") from None
    if set(data) - {"survivor"}:
        extra = sorted(set(data) - {"survivor"})
        raise SurvivorsError(f"{where}: only [[survivor]] entries belong here, found {extra}")
    out, seen = [], set()
    for n, entry in enumerate(data.get("survivor", []), start=1):
        what = f"{where}, survivor {n}"
        if set(entry) - _FIELDS:
            raise SurvivorsError(f"{what}: unknown fields {sorted(set(entry) - _FIELDS)}")
        for name in ("file", "old", "new", "why"):
            if not isinstance(entry.get(name), str) or not entry[name].strip():
                raise SurvivorsError(f"{what}: {name!r} must be a non-empty string"
                                     + (" saying why no valid input tells the mutant from the solution"
                                        if name == "why" else ""))
        if not isinstance(entry.get("gpu_only", False), bool):
            raise SurvivorsError(f"{what}: gpu_only must be true or false")
        survivor = Survivor(entry["file"], entry["old"], entry["new"], " ".join(entry["why"].split()),
                            entry.get("gpu_only", False))
        if survivor.key in seen:
            raise SurvivorsError(f"{what}: the same mutant is listed twice")
        seen.add(survivor.key)
        out.append(survivor)
    return out


def _string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's (DEL, which TOML wants escaped, too)."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def entry(source: str, old: str, new: str, why: str = "", gpu_only: bool = False) -> str:
    """One ``[[survivor]]`` entry, as text to append to the list."""
    lines = ["", "[[survivor]]", f"file = {_string(source)}", f"old = {_string(old)}", f"new = {_string(new)}",
             f"why = {_string(why)}"]
    if gpu_only:
        lines.append("gpu_only = true")
    return "\n".join(lines) + "\n"


def header(lab_id: str) -> str:
    return (f"# Lab {lab_id}: the mutants that no test kills (labs mutate {lab_id}), each with why no input\n"
            "# the docstrings accept tells it from the solution. CONTRIBUTING.md, \"Mutation testing\".\n")


def append(lab_dir: Path, lab_id: str, entries: list[str]) -> Path:
    """Add ``entries`` (from :func:`entry`) at the end of the lab's list, starting the file if needed."""
    file = path(lab_dir)
    text = file.read_text(encoding="utf-8") if file.is_file() else header(lab_id)
    file.write_text(text + "".join(entries), encoding="utf-8")
    return file
