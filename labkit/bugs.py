"""TEMPORARY (removed once every gallery is converted to EDIT files): the old bug helper."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from labkit.testing.loader import _exec, lab_dir_of, module_name


def solution_with(file: str | Path, **replacements: Any) -> dict[str, Any]:
    lab_dir = lab_dir_of(file)
    bug = Path(file).resolve().relative_to(lab_dir).with_suffix("").as_posix()
    copy = _exec(lab_dir, module_name(lab_dir, f"solution__for__{bug}"), lab_dir / "solution.py", None)
    for name, value in replacements.items():
        if not hasattr(copy, name):
            raise AttributeError(f"{bug}: the solution has no {name!r} to replace")
        setattr(copy, name, value)
    return {k: v for k, v in vars(copy).items() if not k.startswith("__")}
