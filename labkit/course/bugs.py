"""The bug gallery: each lab's classic mistakes, as edits of its solution.

A bug is a file ``bugs/<name>.py`` in a lab folder that holds no code, only data::

    '''Missing correction factor: the running sums are not rescaled when the max grows.

    Symptom: right while the first block holds the largest score, wrong after.
    '''

    CAUGHT_BY = ["test_matches_dense_block_aligned"]

    EDIT = (
        "        denom = denom * corr + p.sum()\n",
        "        denom = denom + p.sum()  # forgot the correction\n",
    )

``SHOWS_ON = ["cpu"]`` says on which devices the mistake changes what the code does (a row mask that a
GPU's launch of one row per program never needs, a host check that runs for CPU tensors only); on
any other, the gallery does not run it and says why. Without it, a bug shows everywhere.

``EDIT`` is one replacement ``(old, new)`` in the lab's ``solution.py`` (``SOURCE`` names another
file; a private one, ``_checks.py``, is a given module the solution imports; ``labkit/<module>.py``
is given code several labs share, such as ``labkit/block_table.py``, which the lab's given modules
import); ``EDITS = [(old, new), ...]`` makes several, for a mistake that cannot be made in one place.
Each ``old`` must occur exactly once in the file: when the solution changes so that it no longer
does, loading the bug fails loudly and names it. ``LAB_IMPL=bugs/<name>`` loads the solution with
the edits (:func:`labkit.testing.loader.load_impl`); ``labs bugs LAB --diff`` prints them as diffs.

Everything here reads bug files without importing them. :func:`check_gallery` runs a lab's tests
against every bug (``labs bugs`` and the maintainers' check ``tests/test_bug_gallery.py``).
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from labkit.course import warm
from labkit.course.registry import ROOT
from labkit.course.runner import LabRun, clean_env, run_in_parallel, run_lab_tests
from labkit.course.warm import WarmPool

DEFAULT_SOURCE = "solution.py"
DEVICES = ("cpu", "cuda")  # what SHOWS_ON may name: where a lab's tensors live (labkit.testing.triton_env.device)
SHARED_FOLDER = "labkit"  # SOURCE = "labkit/<module>.py": given code several labs share


class BugEditError(ValueError):
    """A bug's edit no longer matches the file it edits (or the bug file is malformed)."""


@dataclass
class Bug:
    name: str  # LAB_IMPL=bugs/<name>
    path: Path
    doc: str | None  # the module docstring
    caught_by: list[str] | None  # the CAUGHT_BY list; None when absent or not a list of strings
    edits: list[tuple[str, str]] = field(default_factory=list)
    source: str = DEFAULT_SOURCE  # the file the edits apply to: of the lab folder, or labkit/<module>.py
    problem: str = ""  # why the file could not be read
    shows_on: tuple[str, ...] = ()  # SHOWS_ON: the devices ("cpu", "cuda") where the mistake shows; () everywhere

    @property
    def shared(self) -> bool:
        """Whether the edit is in given code several labs share (``labkit/<module>.py``)."""
        return self.source.startswith(SHARED_FOLDER + "/")

    def source_path(self, lab_dir: Path) -> Path:
        return ROOT / self.source if self.shared else Path(lab_dir) / self.source

    @property
    def summary(self) -> str:
        """The docstring's first sentence, whole (its first paragraph when that holds one sentence):
        a summary that wraps onto a second line of the file is still one summary."""
        paragraph = " ".join((self.doc or "").strip().split("\n\n")[0].split())
        # A sentence ends at ". " before a capital ("... seq_len. Symptom: ..."), not inside "0.22.1" or "x.y".
        return re.split(r"(?<=[.!?])\s+(?=[A-Z])", paragraph, maxsplit=1)[0]


def _top_level_values(tree: ast.Module) -> dict[str, object]:
    """The module's top-level ``NAME = <literal>`` assignments (names in capitals only)."""
    values = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name.isupper():
                try:
                    values[name] = ast.literal_eval(node.value)
                except ValueError:
                    values[name] = None
    return values


def _edit_pairs(value, what: str) -> list[tuple[str, str]]:
    pairs = [value] if what == "EDIT" else value
    if not isinstance(pairs, (list, tuple)) or not pairs:
        raise BugEditError(f"{what} must be {'(old, new)' if what == 'EDIT' else 'a list of (old, new)'}")
    out = []
    for pair in pairs:
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2 and all(isinstance(s, str) for s in pair)):
            raise BugEditError(f"{what}: each edit is a pair of strings (old, new), got {pair!r}")
        if not pair[0] or pair[0] == pair[1]:
            raise BugEditError(f"{what}: an edit must replace some text by different text, got {pair!r}")
        out.append((pair[0], pair[1]))
    return out


def is_bug_file(path: Path) -> bool:
    """Whether ``path`` is a gallery bug: a file under ``bugs/`` that defines ``EDIT`` or ``EDITS``."""
    path = Path(path)
    if path.parent.name != "bugs":
        return False
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return False
    return bool({"EDIT", "EDITS"} & set(_top_level_values(tree)))


def read_bug(path: Path) -> Bug:
    """The bug in ``path``, read without running it; ``problem`` says what is malformed."""
    path = Path(path)
    name = path.stem
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError) as err:
        return Bug(name, path, None, None, problem=f"cannot read: {err}")
    values = _top_level_values(tree)
    caught_by = values.get("CAUGHT_BY")
    if not (isinstance(caught_by, (list, tuple)) and all(isinstance(v, str) for v in caught_by)):
        caught_by = None
    bug = Bug(name, path, ast.get_docstring(tree), list(caught_by) if caught_by is not None else None)
    try:
        if "EDIT" in values and "EDITS" in values:
            raise BugEditError("define EDIT or EDITS, not both")
        if "EDIT" in values or "EDITS" in values:
            what = "EDIT" if "EDIT" in values else "EDITS"
            bug.edits = _edit_pairs(values[what], what)
        else:
            raise BugEditError("no EDIT = (old, new): a bug is an edit of the solution")
        source = values.get("SOURCE", DEFAULT_SOURCE)
        folder, _, _ = source.rpartition("/") if isinstance(source, str) else ("", "", "")
        if not isinstance(source, str) or folder not in ("", "going-further", SHARED_FOLDER) \
                or not source.endswith(".py") or (folder == SHARED_FOLDER and not (ROOT / source).is_file()):
            raise BugEditError(f"SOURCE must name a .py file of the lab folder, its going-further/, or a module of "
                               f"{SHARED_FOLDER}/ that given code imports, got {source!r}")
        bug.source = source
        shows_on = values.get("SHOWS_ON", DEVICES)
        if not (isinstance(shows_on, (list, tuple)) and shows_on and all(d in DEVICES for d in shows_on)):
            raise BugEditError(f"SHOWS_ON must list some of {list(DEVICES)}, got {shows_on!r}")
        bug.shows_on = () if "SHOWS_ON" not in values else tuple(shows_on)
    except BugEditError as err:
        bug.problem = str(err)
    return bug


def apply_edits(text: str, bug: Bug) -> str:
    """``text`` (the bug's source file) with the bug's edits made; BugEditError when an edit's old
    text does not occur exactly once (the solution changed since the bug was written)."""
    if bug.problem:
        raise BugEditError(f"bugs/{bug.name}.py: {bug.problem}")
    for old, new in bug.edits:
        count = text.count(old)
        if count != 1:
            first = next((line.strip() for line in old.splitlines() if line.strip()), old)
            raise BugEditError(
                f"bugs/{bug.name}.py: the text its edit replaces ({first!r}...) occurs {count} times in "
                f"{bug.source}, not once: {bug.source} changed since the bug was written; update its EDIT"
            )
        text = text.replace(old, new)
    return text


def diff(lab_dir: Path, bug: Bug, context: int = 3) -> str:
    """The bug as a unified diff of its source file."""
    before = bug.source_path(lab_dir).read_text(encoding="utf-8")
    after = apply_edits(before, bug)
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        f"{bug.source}", f"bugs/{bug.name}.py", n=context))


def gallery(lab_dir: str | Path) -> list[str]:
    """The bug names of a lab (``LAB_IMPL=bugs/<name>``), sorted."""
    folder = Path(lab_dir) / "bugs"
    return sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")) if folder.is_dir() else []


def bugs_of(lab_dir: Path) -> list[Bug]:
    return [read_bug(Path(lab_dir) / "bugs" / f"{name}.py") for name in gallery(lab_dir)]


def test_functions(lab_dir: Path) -> list[str]:
    """The test functions of ``test_lab.py`` (top level and in classes), read without importing."""
    tree = ast.parse((Path(lab_dir) / "test_lab.py").read_text(encoding="utf-8"))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and re.match(r"test", node.name):
            names.append(node.name)
    return names


# --------------------------------------------------------------------------- running the gallery


@dataclass
class BugCheck:
    bug: Bug
    run: LabRun
    catchers: list[str] = field(default_factory=list)  # test functions that failed on it
    not_here: str = ""  # why it was not run on this machine (its SHOWS_ON names other devices)

    @property
    def caught(self) -> bool:
        return bool(self.catchers)

    def _skipped_here(self, test: str) -> bool:
        runs = [t for t in self.run.tests if t.function == test]
        return bool(runs) and all(t.outcome == "skipped" for t in runs)

    @property
    def declared_missed(self) -> list[str]:
        """CAUGHT_BY tests that did not fail on the bug (or do not exist). A test that only
        skipped on this machine (a GPU test on a CPU) is not held against the bug."""
        return [t for t in (self.bug.caught_by or []) if t not in self.catchers and not self._skipped_here(t)]

    @property
    def skip_reason(self) -> str:
        """Why the bug could not be checked here: its mistake shows only on other devices (SHOWS_ON), or
        every CAUGHT_BY test skipped (a GPU-only test on a CPU machine); "" otherwise."""
        if self.not_here:
            return self.not_here
        declared = self.bug.caught_by or []
        if self.caught or not declared or not all(self._skipped_here(t) for t in declared):
            return ""
        first = next(t for t in self.run.tests if t.function == declared[0])
        return f"its CAUGHT_BY tests skip here ({first.message})"

    @property
    def ok(self) -> bool:
        return self.caught and bool(self.bug.caught_by) and not self.declared_missed and bool(self.bug.doc)


def check_bug(lab_dir: Path, bug: Bug, timeout: float | None = 300, named_first: bool = False,
              warm: WarmPool | None = None) -> BugCheck:
    """The lab's tests run on the bug: which tests catch it.

    ``named_first`` (the maintainers' check) runs the tests its ``CAUGHT_BY`` names first, each only
    until one of its cases fails (:mod:`labkit.course.pytest_plugin`, ``LABS_NAMED_TESTS``). When
    every one of them fails, that is the verdict the whole suite would give: caught, and ``CAUGHT_BY``
    agrees. Anything else (a named test that passes or only skips, a bug that does not load, a time
    limit) is decided by the whole suite, as without ``named_first``, so that the verdict and the
    failing tests it reports are the whole suite's. A bug whose ``SHOWS_ON`` does not name this
    machine's device is not run."""
    if bug.shows_on and (here := _device_here()) not in bug.shows_on:
        return BugCheck(bug, LabRun(), not_here=f"its mistake shows only on {' and '.join(bug.shows_on)} "
                                                f"(SHOWS_ON), and the labs run on {here} here")
    if named_first and bug.caught_by and not bug.problem:
        named = _check(bug, run_lab_tests(lab_dir, impl=f"bugs/{bug.name}", timeout=timeout, warm=warm,
                                          env={"LABS_NAMED_TESTS": ",".join(bug.caught_by)}))
        if set(bug.caught_by) <= set(named.catchers):
            return named
    return _check(bug, run_lab_tests(lab_dir, impl=f"bugs/{bug.name}", timeout=timeout, warm=warm))


def _device_here() -> str:
    """Where the labs' tensors live on this machine: "cuda" with a GPU (unless Triton's interpreter is
    forced), else "cpu"."""
    from labkit.testing import triton_env

    return triton_env.device()


def _check(bug: Bug, run: LabRun) -> BugCheck:
    # A test catches the bug when it ran and failed; a failure in setup (the bug does not even
    # load: its edit no longer matches the solution) catches nothing and is reported as an error.
    catchers = list(dict.fromkeys(t.function for t in run.failures if t.when == "call"))
    broken = [t for t in run.failures if t.when != "call"]
    if broken and not run.errors:
        run.errors.append(f"{broken[0].name} could not run: {broken[0].message}")
    return BugCheck(bug, run, catchers)


def check_gallery(lab_dir: Path, jobs: int = 2, on_done: Callable[[BugCheck], None] | None = None,
                  bugs: list[Bug] | None = None) -> list[BugCheck]:
    """Run the lab's whole suite against each bug, ``jobs`` at a time; results in gallery order."""
    bugs = bugs_of(lab_dir) if bugs is None else bugs

    def one(bug):
        check = check_bug(lab_dir, bug)
        if on_done:
            on_done(check)
        return check

    return run_in_parallel(one, bugs, jobs)


def check_galleries(galleries: list[tuple[Path, Bug]], jobs: int = 2) -> list[BugCheck]:
    """The maintainers' check of many galleries at once: each ``(lab folder, bug)`` with
    ``named_first`` (:func:`check_bug`), ``jobs`` at a time across labs, each run forked from a warm
    interpreter (:mod:`labkit.course.warm`) where the system can; results in the given order."""
    if not warm.available():
        return run_in_parallel(lambda entry: check_bug(*entry, named_first=True), galleries, jobs)
    with warm.WarmPool(jobs, ROOT, clean_env(None)) as pool:
        return run_in_parallel(lambda entry: check_bug(*entry, named_first=True, warm=pool), galleries, jobs)
