"""Earlier labs' reference solutions, for the labs that build on them (``labkit.load_reference``).

The grader stages the ones a lab needs (found by reading, never running, its files, transitively:
:func:`needed`) at ``/grader/references/<lab id>.py``; in the sandbox, :func:`load_reference`
imports them. A lab's own solution is never staged.
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
    or through those labs' own solutions), never its own."""
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
            todo.append(found[lab_id])
    return found


def load_reference(lab_id: str):
    """Inside the sandbox: the staged reference solution of lab ``lab_id``, imported once."""
    name = "labs_reference_" + re.sub(r"\W", "_", str(lab_id))
    if name in sys.modules:
        return sys.modules[name]
    path = STAGED_DIR / f"{lab_id}.py"
    if not re.fullmatch(r"\d{2}-\d{2}", str(lab_id)) or not path.is_file():
        raise ImportError(f"load_reference({lab_id!r}): under grading a lab may load the reference solutions "
                          "of the earlier labs it builds on, and this lab's starter.py does not name that one")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
