"""Earlier labs' reference solutions, for the labs that build on them (``labkit.load_reference``).

Lab 02-05's ``starter.py`` takes lab 02-01's ``BlockPool`` with ``labkit.load_reference("02-01")``;
under grading the student's file runs in a sandbox that holds no repository. So the grader stages
the reference solutions a lab needs (found by reading, never running, ``load_reference("..")`` in
the lab's files, transitively) at ``/grader/references/<lab id>/solution.py``, next to the given
modules of that lab (its ``_*.py`` files, which the solution imports), and the sandbox's ``labkit``
offers :func:`load_reference` over them. The graded lab's own solution is never staged: a lab's
reference is in the sandbox only when it is an earlier lab's, which its students are given anyway.

The trusted side uses :func:`needed`; the sandboxed worker uses :func:`load_reference`.
"""

from __future__ import annotations

import importlib.util
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
    """Inside the sandbox: the staged reference solution of lab ``lab_id``, imported once."""
    name = "labs_reference_" + re.sub(r"\W", "_", str(lab_id))
    if name in sys.modules:
        return sys.modules[name]
    folder = STAGED_DIR / str(lab_id)
    path = folder / "solution.py"
    if not re.fullmatch(r"\d{2}-\d{2}", str(lab_id)) or not path.is_file():
        raise ImportError(f"load_reference({lab_id!r}): under grading a lab may load the reference solutions "
                          "of the earlier labs it builds on, and this lab's starter.py does not name that one")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    before = set(sys.modules)
    sys.modules[name] = module
    sys.path.insert(0, str(folder))  # the given modules the solution imports (``from _checks import ...``)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    finally:
        sys.path.remove(str(folder))
        # Another referenced lab may give a module of the same name: this lab's leave with it.
        for key in set(sys.modules) - before - {name}:
            origin = getattr(sys.modules[key], "__file__", None) or ""
            if origin and Path(origin).parent == folder:
                del sys.modules[key]
    return module
