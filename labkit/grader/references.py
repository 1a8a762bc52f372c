"""Earlier labs' reference solutions (``labkit.load_reference("02-01")``) for the labs that build on
them: those a lab's ``lab.toml`` declares under ``references``, and theirs (:func:`needed`), staged at
``/grader/references/<id>/`` with their given modules, loaded in the sandbox (:func:`load_reference`).
Never the graded lab's own."""

from __future__ import annotations

import re
import sys
from pathlib import Path

STAGED_DIR = Path(__file__).resolve().parents[2] / "references"  # /grader/references inside the sandbox


def needed(lab_dir: Path) -> dict[str, Path]:
    """lab id -> reference solution file, for every earlier lab the lab at ``lab_dir`` loads, as its
    declaration says (``references``), and every lab those references load in turn, never its own."""
    from labkit.course import registry

    own = registry.lab_for_path(lab_dir)
    found: dict[str, Path] = {}
    todo = list(own.declared.references) if own else []
    while todo:
        lab = registry.get(todo.pop())
        if lab is not own and lab.id not in found:
            found[lab.id] = lab.path / "solution.py"
            todo += lab.declared.references  # its solution and given modules load them too
    return found


def load_reference(lab_id: str):
    """Inside the sandbox: the staged reference solution of lab ``lab_id``, imported once, as
    :func:`labkit.testing.loader.load_impl` imports a lab's solution (its given modules found next to it)."""
    from labkit.testing.loader import exec_file

    name = "labs_reference_" + re.sub(r"\W", "_", str(lab_id))
    folder = STAGED_DIR / str(lab_id)
    if name in sys.modules:
        return sys.modules[name]
    if not re.fullmatch(r"\d{2}-\d{2}", str(lab_id)) or not (folder / "solution.py").is_file():
        raise ImportError(f"load_reference({lab_id!r}): under grading a lab may load the reference solutions "
                          "of the earlier labs it builds on, and this lab's starter.py does not name that one")
    return exec_file(folder, name, folder / "solution.py")
