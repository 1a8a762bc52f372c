"""``labs grade``: run the instructor's tests against every student's work.

``SUBMISSIONS/<student>/<lab folder>/starter.py`` is a student's file for a lab
(the folder mirrors the repository's paths). For each student and lab:

1. Every submission is read into memory before any student code runs
   (regular files only: a symbolic link is never followed). Each run gets a
   fresh copy in a private temporary folder, checked afterwards: if its files
   changed during the run (another submission writing files), it is graded
   again, alone, and the report says so.
2. A missing ``starter.py`` is *missing*; one that does not compile is
   *syntax error* (compiled here, never run here).
3. Otherwise the repository's own ``test_lab.py`` runs in a trusted pytest
   process whose ``lab`` fixture is a :class:`labkit.grader.standin.Submission`: each
   call goes to a worker subprocess that imported the student's file (scratch
   working directory, per-call and per-lab time limits). The verdict comes
   from the instructor's assertions in the trusted process only.

Statuses: ``ok`` (every test passed), ``failed``, ``timeout`` (a call or the
lab ran past its limit), ``crashed`` (the import raised, or the worker died),
``missing``, ``syntax error``. A subprocess is not an operating-system
sandbox: see SETUP.md for what this does and does not protect against.
"""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import io
import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from labkit.course.registry import ROOT, Lab
from labkit.course.runner import LabRun, run_in_parallel, run_lab_tests

STATUSES = ("ok", "failed", "timeout", "crashed", "missing", "syntax error")
REPORT_SUFFIXES = (".csv", ".json", ".md")
WORK_FILE = "starter.py"
MAX_FILE_BYTES = 2_000_000  # a larger file in a submission is not copied
TAMPERED = "instructor files changed during grading, do not trust this report:"
STARTUP_GRACE = 20.0  # seconds on top of the lab limit before the whole test run is killed


@dataclass(frozen=True)
class Limits:
    call: float = 10.0  # seconds one call into the submission may take
    lab: float = 120.0  # seconds for one student's whole lab (import and every test)
    imports: float = 60.0  # seconds the import of the student's file may take (torch, triton...)


@dataclass
class Verdict:
    student: str
    lab: str  # the lab id, "02-06"
    passed: int
    total: int
    status: str
    first_failure: str
    seconds: float

    def row(self) -> dict:
        return asdict(self)


class GradeError(Exception):
    """Bad input to the grader (a missing folder, an unknown lab, a bad report name)."""


def students(submissions: Path) -> list[str]:
    """The student folders of ``submissions`` (hidden folders and links skipped), sorted."""
    if not submissions.is_dir():
        raise GradeError(f"{submissions}: no such folder (expected one folder per student)")
    names = sorted(p.name for p in submissions.iterdir() if p.is_dir() and not p.is_symlink()
                   and not p.name.startswith((".", "_")))
    if not names:
        raise GradeError(f"{submissions}: no student folders in it")
    return names


def check_report_path(out: Path | None) -> None:
    if out is not None and out.suffix.lower() not in REPORT_SUFFIXES:
        raise GradeError(f"--out {out}: the report must end in {', '.join(REPORT_SUFFIXES)}")


def read_submission(src: Path) -> dict[str, bytes]:
    """The regular files under ``src`` (a student's lab folder), read into memory: the snapshot.

    Symbolic links are never followed (a link to the instructor's solution is not a
    submission); caches and files over MAX_FILE_BYTES are left out."""
    files: dict[str, bytes] = {}
    if src.is_symlink() or not src.is_dir():
        return files
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if "__pycache__" in rel.parts or any(p.is_symlink() for p in [path, *path.parents] if src in p.parents):
            continue
        if path.is_file() and path.stat().st_size <= MAX_FILE_BYTES:
            files[rel.as_posix()] = path.read_bytes()
    return files


def _write_submission(files: dict[str, bytes], dest: Path) -> None:
    for rel, data in files.items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes(data)


def _unchanged(files: dict[str, bytes], dest: Path) -> bool:
    """Whether the snapshot's files in ``dest`` still hold what was submitted."""
    try:
        return all((dest / rel).read_bytes() == data for rel, data in files.items())
    except OSError:
        return False


# Names pytest itself would import (or read settings from) if they sat in the lab folder it runs:
# a student's file with one of these names must never reach the trusted process's folder.
_PYTEST_NAMES = ("conftest.py", "__init__.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml")
# Instructor files of a lab folder that the mirror leaves out: the answers and the bug gallery.
_NOT_MIRRORED = ("solution.py", WORK_FILE, "bugs", "__pycache__", "bench-logs")


def _student_modules(files: dict[str, bytes]) -> dict[str, bytes]:
    """The student's top-level Python modules that may sit in the mirrored lab folder: none that
    pytest would load itself, none named like an installed module (a ``numpy.py`` stays out)."""
    return {
        rel: data for rel, data in files.items()
        if "/" not in rel and rel.endswith(".py") and rel not in _PYTEST_NAMES
        and not rel.startswith("test_") and not rel.endswith("_test.py")
        and rel[:-3].isidentifier() and (rel == WORK_FILE or importlib.util.find_spec(rel[:-3]) is None)
    }


def _mirror(lab: Lab, root: Path, files: dict[str, bytes]) -> Path:
    """A stand-in repository under ``root`` in which ``lab``'s folder holds the student's work.

    Everything but that folder links to the real repository (``labkit``, ``conftest.py``,
    ``pyproject.toml``); the folder itself is a copy of the instructor's files, minus the
    solution and the bug gallery, plus the student's ``starter.py`` (and helper modules).
    The tests run there exactly as ``LAB_IMPL=starter pytest`` runs in a student's
    checkout, so a test that starts its own Python process (lab 04-06's 2**31-element
    cache) loads the student's file in that process. The tests' own ``lab`` fixture still
    gets the worker stand-in: nothing imports the file in the trusted process.
    """
    root.mkdir(parents=True)
    for name in ("labkit", "conftest.py", "pyproject.toml"):
        (root / name).symlink_to(ROOT / name)
    lab_dir = root / lab.folder
    lab_dir.mkdir(parents=True)
    for path in lab.path.iterdir():
        if path.name in _NOT_MIRRORED:
            continue
        if path.is_dir():
            shutil.copytree(path, lab_dir / path.name, ignore=shutil.ignore_patterns("__pycache__", "*.log"))
        elif path.is_file():
            shutil.copyfile(path, lab_dir / path.name)
    for rel, data in _student_modules(files).items():
        if not (lab_dir / rel).exists():  # the instructor's files (test_lab.py, lab.py...) win
            (lab_dir / rel).write_bytes(data)
    return lab_dir


def _syntax_error(file: Path) -> str | None:
    """A one-line description of why ``file`` does not compile, or None. Compiling runs nothing."""
    try:
        compile(file.read_bytes(), str(file.name), "exec", dont_inherit=True)
    except SyntaxError as err:
        return f"line {err.lineno}: {err.msg}"
    except (ValueError, UnicodeDecodeError) as err:
        return str(err).splitlines()[0]
    return None


def _fingerprint(labs: Iterable[Lab]) -> dict[str, str]:
    """Hashes of the files the verdicts rest on: the tests, the conftest, labkit."""
    files = [ROOT / "conftest.py", *sorted((ROOT / "labkit").rglob("*.py"))]
    files += [lab.path / "test_lab.py" for lab in labs]
    return {str(f.relative_to(ROOT)): hashlib.sha256(f.read_bytes()).hexdigest() for f in files if f.is_file()}


def verdict_from_run(student: str, lab: Lab, run: LabRun) -> Verdict:
    incidents = [i.get("kind") for t in run.tests for i in t.incidents]
    if run.all_passed:
        status = "ok"
    elif run.timed_out or "timeout" in incidents:
        status = "timeout"
    elif "crashed" in incidents:
        status = "crashed"
    else:
        status = "failed"
    first = run.first_problem()
    if status == "timeout" and not first:
        first = "the lab's time limit was reached"
    skipped = sum(t.outcome == "skipped" for t in run.tests)
    total = max(run.total, (run.collected or 0) - skipped)  # tests never reached count as not passed
    return Verdict(student, lab.id, run.passed, total, status, first, round(run.seconds, 1))


def grade_one(student: str, lab: Lab, work_file: Path | None, limits: Limits, mirror: Path | None = None) -> Verdict:
    """One student's verdict on one lab; ``work_file`` is the snapshot (None: missing), which
    the worker imports; ``mirror`` is the lab folder of a stand-in repository (see ``_mirror``)
    to run the tests in, the repository's own lab folder by default."""
    if work_file is None or not work_file.is_file():
        return Verdict(student, lab.id, 0, 0, "missing", f"no {lab.folder}/{WORK_FILE}", 0.0)
    error = _syntax_error(work_file)
    if error:
        return Verdict(student, lab.id, 0, 0, "syntax error", error, 0.0)
    env = {
        "LABS_SUBMISSION": str(work_file),
        "LABS_CALL_TIMEOUT": str(limits.call),
        "LABS_IMPORT_TIMEOUT": str(limits.imports),
        "LABS_DEADLINE": str(time.time() + limits.lab),
        "LABS_TRITON": "1" if "triton" in lab.tags else "0",
    }
    # LAB_IMPL=starter: what a process started by a test loads (the mirror's starter.py);
    # the tests' lab fixture itself is the worker stand-in. The mirror has no solution.py.
    lab_dir = mirror or lab.path
    run = run_lab_tests(lab_dir, impl="starter", env=env, timeout=limits.lab + STARTUP_GRACE,
                        cwd=lab_dir.parents[2], pytest_args=("-p", "labkit.grader.pytest_plugin"))
    return verdict_from_run(student, lab, run)


def grade(
    submissions: Path,
    labs: list[Lab],
    limits: Limits = Limits(),
    jobs: int = 2,
    on_verdict: Callable[[Verdict], None] | None = None,
) -> tuple[list[Verdict], list[str]]:
    """Grade every student on every lab. Returns the verdicts (student, then lab
    order) and warnings (labs not in the repository yet, changed instructor files)."""
    names = students(Path(submissions))
    warnings = []
    ready = []
    for lab in labs:
        if (lab.path / "test_lab.py").is_file():
            ready.append(lab)
        else:
            warnings.append(f"lab {lab.id} is not in the repository yet ({lab.folder}/test_lab.py): not graded")
    before = _fingerprint(ready)
    verdicts: dict[tuple[str, str], Verdict] = {}
    # Every submission is read into memory before any student code runs; each run gets
    # a fresh copy in a private folder, checked afterwards against what was submitted.
    snapshots = {(s, lab.id): read_submission(Path(submissions) / s / lab.folder) for s in names for lab in ready}
    with tempfile.TemporaryDirectory(prefix="labs-grade-") as tmp:  # mode 0700

        def task(key, attempt=0):
            student, lab = key
            files = snapshots[student, lab.id]
            run_dir = Path(tmp) / f"{names.index(student):04d}-{lab.id}-{attempt}"
            dest = run_dir / "submission" / lab.folder
            intact = True
            try:
                _write_submission(files, dest)
                work = dest / WORK_FILE if WORK_FILE in files else None
                mirror = _mirror(lab, run_dir / "repository", files) if work else None
                verdict = grade_one(student, lab, work, limits, mirror)
                intact = _unchanged(files, dest) and (mirror is None or _unchanged(_student_modules(files), mirror))
            except Exception as err:  # the grader's own failure: report it, keep going
                verdict = Verdict(student, lab.id, 0, 0, "crashed", f"grader error: {type(err).__name__}: {err}", 0.0)
            if on_verdict and (intact or attempt):
                on_verdict(verdict)
            return verdict, intact

        keys = [(s, lab) for s in names for lab in ready]
        again = []
        for key, (verdict, intact) in zip(keys, run_in_parallel(task, keys, jobs), strict=True):
            verdicts[key[0], key[1].id] = verdict
            if not intact:
                again.append(key)
        for key in again:  # its files changed under it (another submission writing files?): once more, alone
            verdict, intact = task(key, attempt=1)
            verdicts[key[0], key[1].id] = verdict
            warnings.append(f"{key[0]}, lab {key[1].id}: the submitted files changed while being graded; graded "
                            "again alone" + ("" if intact else ", and they changed again: check this one by hand"))
    after = _fingerprint(ready)
    changed = sorted(k for k in before if before[k] != after.get(k))
    if changed:
        warnings.append(f"{TAMPERED} " + ", ".join(changed))
    # A missing or unparsable file scores 0 of the lab's tests, as counted in the runs that did happen.
    counts = {}
    for v in verdicts.values():
        counts[v.lab] = max(counts.get(v.lab, 0), v.total)
    for v in verdicts.values():
        if v.status in ("missing", "syntax error"):
            v.total = counts.get(v.lab, 0)
    return [verdicts[s, lab.id] for s in names for lab in ready], warnings


def render_report(verdicts: list[Verdict], suffix: str, warnings: list[str] = ()) -> str:
    """The report as CSV, JSON or Markdown (``suffix``: ".csv", ".json", ".md")."""
    suffix = suffix.lower()
    if suffix == ".json":
        return json.dumps({"results": [v.row() for v in verdicts], "warnings": list(warnings)}, indent=2) + "\n"
    columns = ["student", "lab", "passed", "total", "status", "first_failure", "seconds"]
    if suffix == ".csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for v in verdicts:
            writer.writerow(v.row())
        return buf.getvalue()
    if suffix == ".md":
        lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        for v in verdicts:
            cells = [str(v.row()[c]).replace("|", "\\|") for c in columns]
            lines.append("| " + " | ".join(cells) + " |")
        lines += [f"\n> warning: {w}" for w in warnings]
        return "\n".join(lines) + "\n"
    raise GradeError(f"unknown report format {suffix!r}")


def write_report(verdicts: list[Verdict], out: Path, warnings: list[str] = ()) -> None:
    check_report_path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_report(verdicts, out.suffix, warnings), encoding="utf-8")
