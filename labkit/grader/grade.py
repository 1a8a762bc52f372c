"""``labs grade``: every student's ``starter.py`` against the lab's own tests, in waves, each
submission copied into a run folder of its own and run in its sandbox. README.md in this folder has
the design."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import site
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from labkit.course.registry import ROOT, Lab
from labkit.course.runner import LabRun, run_in_parallel, run_lab_tests
from labkit.grader import limits as limits_
from labkit.grader import references, report, schedule
from labkit.grader import submissions as submission_files
from labkit.grader.limits import Place, Resources
from labkit.grader.report import Report, Verdict
from labkit.grader.sandbox import leave_session_keyring, open_up
from labkit.grader.submissions import Student, escape, identity

WORK_FILE = "starter.py"
TAMPERED = "instructor files changed during grading, do not trust this report:"
UNSANDBOXED = ("graded WITHOUT a sandbox (--no-sandbox): student code ran as the grader's user, with access to "
               "this repository, the other submissions, the network and the grader itself; do not trust this report "
               "unless you trust every submission")
STARTUP_GRACE = 20.0  # seconds on top of the lab limit before the whole test run is killed
# The trusted pytest process of one student's lab may hold this much (99-01's, the largest, allocates some
# 150 MiB once it has joined its cgroup):
# what a submission sends is bounded reply by reply, and this bounds what the tests keep of it.
TRUSTED_MEMORY = 4 << 30


@dataclass(frozen=True)
class Limits:
    call: float = 10.0  # seconds one call into the submission may take
    lab: float = 120.0  # seconds for one student's whole lab (import and every test)
    imports: float = 60.0  # seconds the import of the student's file may take (torch, triton...)


class GradeError(Exception):
    """Bad input to the grader (a missing folder, an unknown lab, a bad report name)."""


def students(submissions: Path) -> list[Student]:
    """The student folders of ``submissions`` (those named ``.*`` or ``_*`` skipped, as ``labs grade --help``
    says: a tool's, a template; a link to a folder is listed, and refused when read), sorted by name;
    GradeError when two names are one after escaping, case and Unicode normalisation
    (:func:`submissions.identity`), naming both folders."""
    if not submissions.is_dir():
        raise GradeError(f"{escape(submissions)}: no such folder (expected one folder per student)")
    found: dict[str, Student] = {}
    with os.scandir(submissions) as entries:
        for entry in entries:
            if entry.name.startswith((".", "_")) or not entry.is_dir(follow_symlinks=True):
                continue
            student = Student(escape(entry.name), entry.name)
            twin = found.setdefault(identity(entry.name), student)
            if twin is not student:
                a, b = sorted((twin.folder, student.folder))
                raise GradeError(f"{escape(submissions)}: the student folders {escape(repr(a))} and {escape(repr(b))} "
                                 "name one student (they differ only in case, in characters that do not print, or "
                                 "in Unicode normalisation): rename one, so that no report row can be taken for "
                                 "the other's")
    if not found:
        raise GradeError(f"{escape(submissions)}: no student folders in it")
    return sorted(found.values())


def copy_submission(submissions: Path, student: Student, lab: Lab, dest: Path) -> Verdict | None:
    """The student's lab folder copied into ``dest`` (readable by the sandbox's user: nobody, when
    grading as root); None when it was, else the verdict (``missing``, ``refused``) it earns."""
    try:
        submission_files.copy_lab_folder(submissions, student, lab.folder, dest)
    except submission_files.Missing:
        return Verdict(student.name, lab.id, 0, 0, "missing", f"no {lab.folder}/{WORK_FILE}", 0.0)
    except submission_files.Refused as err:
        return Verdict(student.name, lab.id, 0, 0, "refused", escape(err), 0.0)
    open_up(dest)
    return None


def _text_of(err: BaseException) -> str:
    """``str(err)``, or a note where that raises; at most 2,000 characters."""
    try:
        return str(err)[:2000]
    except Exception:
        return "(its message cannot be printed)"


# Compiling runs none of the student's code, but what it costs is the student's to choose: 2 MB of
# distinct constant expressions (``'y' * 4090 + '000001'``, one a line) took a compiling process to
# 724 MiB and 10 CPU seconds, a sum of 600,000 terms raises RecursionError. So the check runs in a
# process of its own (isolated mode, no site), which limits itself before it reads a byte. It runs
# outside any sandbox, in the grader's folder: stopped at its CPU limit (SIGXCPU dumps core) it dumped
# its memory there wherever the grader's core limit allowed, so it dumps none.
COMPILE_MEMORY = 512 << 20
COMPILE_CPU_SECONDS = 10
_COMPILE_CHECK = f"""
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({COMPILE_MEMORY}, {COMPILE_MEMORY}))
resource.setrlimit(resource.RLIMIT_CPU, ({COMPILE_CPU_SECONDS}, {COMPILE_CPU_SECONDS} + 1))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
try:
    compile(sys.stdin.buffer.read(), sys.argv[1], "exec", dont_inherit=True)
    answer = None
except SyntaxError as err:
    answer = ("line %s: " % err.lineno if err.lineno else "") + str(err.msg)
except (ValueError, UnicodeDecodeError) as err:
    answer = (str(err).splitlines() or [type(err).__name__])[0]
except RecursionError:
    answer = "nested too deeply to compile"
except MemoryError:
    answer = "too large to compile within {COMPILE_MEMORY >> 20} MiB"
sys.stdout.write(json.dumps(answer))
"""


def _syntax_error(file: Path) -> str | None:
    """A one-line description of why ``file`` does not compile, or None. Compiling runs nothing; it
    runs in a process of its own, held to :data:`COMPILE_MEMORY` and :data:`COMPILE_CPU_SECONDS`."""
    import subprocess

    try:
        done = subprocess.run([sys.executable, "-I", "-S", "-c", _COMPILE_CHECK, file.name], input=file.read_bytes(),
                              capture_output=True, timeout=6 * COMPILE_CPU_SECONDS)
        answer = json.loads(done.stdout[:4096]) if done.returncode == 0 else False
    except (subprocess.TimeoutExpired, ValueError):
        answer = False
    if answer is False or not isinstance(answer, (str, type(None))):
        return (f"could not be compiled within {COMPILE_MEMORY >> 20} MiB and {COMPILE_CPU_SECONDS} CPU seconds "
                "(a compile check runs none of its code)")
    return answer


def fingerprint(labs: Iterable[Lab]) -> dict[str, str]:
    """Hashes of the files the verdicts rest on (new files included): ``labkit/``, ``conftest.py``,
    ``pyproject.toml``, each graded lab's folder but ``solution.py`` and ``bugs/`` (grading never loads
    them), and the interpreter's start-up hooks (``*.pth``, ``sitecustomize``, ``usercustomize``)."""
    files = [ROOT / "conftest.py", ROOT / "pyproject.toml", *(ROOT / "labkit").rglob("*")]
    for lab in labs:
        files += [p for p in lab.path.rglob("*") if p.name != "solution.py"
                  and not {"bugs", "bench-logs"} & set(p.relative_to(lab.path).parts)]
    for folder in {*site.getsitepackages(), site.getusersitepackages()}:
        for pattern in ("*.pth", "sitecustomize*", "usercustomize*", "__pycache__/sitecustomize*",
                        "__pycache__/usercustomize*"):
            files += Path(folder).glob(pattern)
    return {str(f): hashlib.sha256(f.read_bytes()).hexdigest() for f in files if f.is_file()}


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
    # The first failure that explains the status: for a crash or a timeout, the first test that had one.
    why = next((t for t in run.failures if any(i.get("kind") == status for i in t.incidents)), None)
    first = f"{why.name}: {why.message}" if why is not None else run.first_problem()
    if status == "timeout" and not first:
        first = "the lab's time limit was reached"
    skipped = sum(t.outcome == "skipped" for t in run.tests)
    total = max(run.total, (run.collected or 0) - skipped)  # tests never reached count as not passed
    return Verdict(escape(student), lab.id, run.passed, total, status, escape(first), round(run.seconds, 1))


def grade_one(student: str, lab: Lab, work_file: Path | None, limits: Limits, resources: Resources | None = None,
              sandbox: bool = True, hide: tuple = (), cgroups: Place | None = None) -> Verdict:
    """One student's verdict on one lab; ``work_file`` is the snapshot (None: missing), which
    the worker imports in the student's sandbox (``hide``: more host folders to keep out of it;
    ``cgroups``: where each of its sandboxes gets its cgroup, None: nowhere)."""
    if work_file is None or not work_file.is_file():
        return Verdict(escape(student), lab.id, 0, 0, "missing", f"no {lab.folder}/{WORK_FILE}", 0.0)
    error = _syntax_error(work_file)
    if error:
        return Verdict(escape(student), lab.id, 0, 0, "syntax error", escape(error), 0.0)
    settings = {"file": str(work_file), "call": limits.call, "imports": limits.imports,
                "deadline": time.time() + limits.lab, "triton": "triton" in lab.tags, "sandbox": sandbox,
                "resources": asdict(resources or Resources()), "hide": [str(h) for h in hide],
                "references": {i: str(f) for i, f in references.needed(lab.path).items()},
                # The lab's API (the names the tests reach) and given modules (``_checks.py``...: the
                # course's copies, never the student's), as its lab.toml declares them.
                "api": lab.declared.api.kinds(), "patches": list(lab.declared.patches),
                "given": [str(f) for f in lab.declared.given_files],
                "cgroups": asdict(cgroups) if cgroups is not None else None}
    trusted = limits_.Cgroup(cgroups, Resources(memory=TRUSTED_MEMORY, processes=0), "grader") if cgroups else None
    settings["trusted_cgroup"] = trusted.procs if trusted else []  # the trusted process joins it at start
    # The trusted pytest process writes no bytecode: the fingerprint then sees any change to __pycache__.
    env = {"LABS_GRADING": json.dumps(settings), "PYTHONDONTWRITEBYTECODE": "1"}
    run = run_lab_tests(lab.path, impl="starter", env=env, timeout=limits.lab + STARTUP_GRACE, cwd=ROOT,
                        pytest_args=("-p", "labkit.grader.pytest_plugin"))
    if trusted is not None and trusted.memory_killed():
        return Verdict(escape(student), lab.id, 0, run.total or run.collected or 0, "crashed",
                       f"memory limit: the grader's process for this lab went past {TRUSTED_MEMORY / 2**30:g} GiB "
                       "holding what the submission sent", round(run.seconds, 1))
    return verdict_from_run(student, lab, run)


def grade(
    submissions: Path,
    labs: list[Lab],
    limits: Limits = Limits(),
    jobs: int = 2,
    on_verdict: Callable[[Verdict], None] | None = None,
    *,
    resources: Resources | None = None,
    sandbox: bool = True,
    out: Path | None = None,
    shard: tuple[int, int] | None = None,
    on_wait: Callable[[], None] = lambda: None,
) -> Report:
    """Grade every student (of ``shard``: K of N, when given) on every lab, in waves
    (:mod:`labkit.grader.schedule`). Returns the report: the verdicts (student, then lab order),
    warnings (labs not in the repository yet, changed instructor files, no sandbox) and the header.
    With a sandbox, this process first leaves its session keyring for a new one
    (:func:`~labkit.grader.sandbox.leave_session_keyring`).
    ``out``: the report, written before the run folders are removed (a failure to remove them is a
    warning, never a lost report). ``on_wait``: told when another grader on this machine goes first."""
    submissions = Path(submissions)
    resources = resources or Resources()
    if sandbox:  # before anything starts: no process of the run possesses the keyring this one came with
        leave_session_keyring()
    names = [s for s in students(submissions) if schedule.in_shard(s.folder, shard)]
    ready = [lab for lab in labs if (lab.path / "test_lab.py").is_file()]
    warnings = [] if sandbox else [UNSANDBOXED]
    warnings += [f"lab {lab.id} is not in the repository yet ({lab.folder}/test_lab.py): not graded"
                 for lab in labs if lab not in ready]
    waves = schedule.waves(ready)
    place, memory = limits_.find(resources)
    saved_flag, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # ours must not look like tampering
    try:
        before = fingerprint(ready)
        header = _header(before, ready, waves, limits, resources, sandbox, memory, shard)
        top = Path(tempfile.mkdtemp(prefix="labs-grade-"))
        try:
            def task(key):
                student, lab = key
                run_cgroups = None
                try:
                    # Copied now, one submission at a time: what the class hands in costs the grader
                    # disk in its run folders (capped per submission), never memory.
                    run_dir = Path(tempfile.mkdtemp(prefix=f"{lab.id}-", dir=top))
                    verdict = copy_submission(submissions, student, lab, run_dir / "files")
                    if verdict is None:
                        work = run_dir / "files" / WORK_FILE
                        # One cgroup for this run's sandboxes, removed with whatever a killed run left in it.
                        run_cgroups = place.child(f"labs-grade-{os.getpid()}-{secrets.token_hex(4)}") if place else None
                        verdict = grade_one(student.name, lab, work if work.is_file() else None, limits, resources,
                                            sandbox, hide=(submissions, top), cgroups=run_cgroups)
                        with contextlib.suppress(OSError):  # else removed with the others at the end
                            shutil.rmtree(run_dir)
                except Exception as err:  # the grader's own failure: report it, keep going
                    verdict = Verdict(student.name, lab.id, 0, 0, "crashed",
                                      escape(f"grader error: {type(err).__name__}: {_text_of(err)}"), 0.0)
                finally:
                    if run_cgroups is not None and not run_cgroups.remove():
                        warnings.append(f"could not remove the cgroup {run_cgroups.folders[0]}")
                if on_verdict:
                    on_verdict(verdict)
                return verdict

            verdicts = {}
            with schedule.machine_lock(on_wait):
                for wave in waves:  # a wave's runs all end before the next wave's start
                    keys = [(s, lab) for s in names for lab in wave]
                    verdicts.update(zip([(s.folder, lab.id) for s, lab in keys], run_in_parallel(task, keys, jobs),
                                        strict=True))
            after = fingerprint(ready)
            changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
            if changed:
                warnings.append(f"{TAMPERED} " + ", ".join(changed))
            ordered = [verdicts[s.folder, lab.id] for s in names for lab in ready]
            report.fill_totals(ordered)
            result = Report(ordered, warnings, header)
            if out is not None:
                report.write(result, out)
        finally:
            try:
                shutil.rmtree(top)
            except OSError as err:
                warnings.append(f"could not remove the grader's run folders {top}: {err}")
    finally:
        sys.dont_write_bytecode = saved_flag
    return result


def _header(files: dict[str, str], labs: list[Lab], waves: list[list[Lab]], limits: Limits, resources: Resources,
            sandbox: bool, memory: str, shard: tuple[int, int] | None) -> dict[str, str]:
    """How the class was graded, for the report's header (the same on every machine of a sharded run)."""
    inside = {str(Path(f).relative_to(ROOT)): h for f, h in files.items() if Path(f).is_relative_to(ROOT)}
    digest = hashlib.sha256(json.dumps(sorted(inside.items())).encode()).hexdigest()[:16]
    header = {
        "sandbox": "bubblewrap" if sandbox else "NONE (--no-sandbox)",
        "memory": memory if sandbox else "NOT capped (no sandbox)",
        "limits": (f"call {limits.call:g} s, import {limits.imports:g} s, lab {limits.lab:g} s; per process: "
                   f"{resources.memory / 2**30:g} GiB of address space, {resources.cpu_seconds} CPU s, "
                   f"{resources.open_files} open files; {resources.processes} processes, "
                   f"/tmp {resources.tmp_size >> 20} MiB"),
        "labs": " ".join(lab.id for lab in labs),
        "waves": " | ".join(" ".join(lab.id for lab in wave) for wave in waves),
        "instructor files": f"sha256 {digest} (labkit, conftest.py, pyproject.toml, the labs' tests)",
    }
    if shard is not None:
        header["shard"] = f"{shard[0]}/{shard[1]}"
    return header
