"""Earlier labs' reference solutions (``labkit.load_reference("02-01")``) for the labs that build on
them: found by reading the lab's files (:func:`needed`), staged at ``/grader/references/<id>/`` with
their given modules, loaded in the sandbox (:func:`load_reference`). Never the graded lab's own."""

from __future__ import annotations

import re
import sys
from pathlib import Path

_CALL = re.compile(r"""load_reference\(\s*["'](\d{2}-\d{2})["']\s*\)""")
STAGED_DIR = Path(__file__).resolve().parents[2] / "references"  # /grader/references inside the sandbox


def needed(lab_dir: Path) -> dict[str, Path]:
    """lab id -> reference solution file, for every earlier lab the lab at ``lab_dir`` loads
    (through its starter, its solution or a helper module next to them, such as 99-01's ``_runner.py``,
    or through those labs' own solutions and given modules), never its own."""
    from labkit.course import registry

    own = next((lab.id for lab in registry.LABS if lab.path.resolve() == Path(lab_dir).resolve()), None)
    found: dict[str, Path] = {}
    todo = [f for f in sorted(Path(lab_dir).glob("*.py")) if not f.name.startswith("test_")]
    while todo:
        file = todo.pop()
        text = file.read_text(encoding="utf-8") if file.is_file() else ""
        for lab_id in _CALL.findall(text):
            if lab_id == own or lab_id in found:
                continue
            found[lab_id] = registry.get(lab_id).path / "solution.py"
            todo += [found[lab_id], *sorted(found[lab_id].parent.glob("_*.py"))]  # its given modules load too
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
