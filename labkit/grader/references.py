"""Earlier labs' reference solutions, for the labs that build on them (``labkit.load_reference``).

Lab 02-05's ``starter.py`` takes lab 02-01's ``BlockPool`` with ``labkit.load_reference("02-01")``;
under grading the student's file runs in a sandbox that holds no repository. So the grader stages
the reference solutions a lab needs (found by reading, never running, ``load_reference("..")`` in
the lab's files, transitively) at ``/grader/references/<lab id>.py``, and the sandbox's ``labkit``
offers :func:`load_reference` over them. The graded lab's own solution is never staged: a lab's
reference is in the sandbox only when it is an earlier lab's, which its students are given anyway.

A reference solution may import a module its lab gives its learners (04-03's ``_prefill_checks.py``,
``from _prefill_checks import ...``); those modules are staged next to the references, under their
own names (unique across the labs), and :func:`load_reference` lets the staged solution import them.

The trusted side uses :func:`needed`; the sandboxed worker uses :func:`load_reference`.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

_CALL = re.compile(r"""load_reference\(\s*["'](\d{2}-\d{2})["']\s*\)""")
_GIVEN = re.compile(r"^(?:from|import) (_[A-Za-z]\w*)\b", re.M)  # a lab-local module: from _prefill_checks import
STAGED_DIR = Path(__file__).resolve().parents[2] / "references"  # /grader/references inside the sandbox


def needed(lab_dir: Path) -> dict[str, Path]:
    """lab id -> reference solution file, for every earlier lab the lab at ``lab_dir`` loads
    (through its starter, its solution or a helper module next to them, such as 99-01's ``_runner.py``,
    or through those labs' own solutions), never its own; and module name -> file for each given
    module those solutions import from their lab folders (``_prefill_checks`` -> 04-03's file)."""
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
            for module in _GIVEN.findall(found[lab_id].read_text(encoding="utf-8")):
                given = registry.get(lab_id).path / f"{module}.py"
                if given.is_file() and module not in found:
                    found[module] = given
                    todo.append(given)
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
    if str(STAGED_DIR) not in sys.path:
        sys.path.append(str(STAGED_DIR))  # the given modules a reference imports (``from _prefill_checks import``)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
