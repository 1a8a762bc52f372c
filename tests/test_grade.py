"""Tests of ``labs grade``: the wire format, the worker stand-in, the statuses, the reports.

The fast ones run in the default ``pytest``; grading the example class in
``tests/fixtures/class`` (one pytest run per student and lab) is a maintainer
check (``pytest -m maintainer``).
"""

from __future__ import annotations

import csv
import io
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from labkit.course import registry
from labkit.grader import grade
from labkit.grader import standin as remote

CLASS = Path(__file__).parent / "fixtures" / "class"


# --------------------------------------------------------------------------- the wire format


def _round_trip(value):
    return remote.decode(remote.loads(remote.dumps(remote.encode(value))))


def test_plain_data_and_arrays_cross_unchanged():
    rng = np.random.default_rng(0)
    value = {
        "ints": (1, -2, True, None),
        "float": 0.25,
        "text": ["a", b"b"],
        "f64": rng.standard_normal((3, 4)),
        "f16": rng.standard_normal(5).astype(np.float16),
        "i32": np.arange(6, dtype=np.int32).reshape(2, 3),
        "scalar": np.float32(1.5),
        "empty": np.zeros((0, 4)),
        "dtype": np.dtype(np.int64),
        "dtype_class": np.float32,
    }
    back = _round_trip(value)
    assert back.keys() == value.keys()
    for key in ("f64", "f16", "i32", "empty"):
        assert back[key].dtype == value[key].dtype and np.array_equal(back[key], value[key])
    assert back["ints"] == (1, -2, True, None) and type(back["ints"][2]) is bool
    assert back["scalar"] == np.float32(1.5) and back["scalar"].dtype == np.float32
    assert back["dtype"] == np.dtype(np.int64) and back["dtype_class"] == np.dtype(np.float32)


def test_read_only_arrays_stay_read_only():
    frozen = np.arange(4.0)
    frozen.flags.writeable = False
    assert not _round_trip(frozen).flags.writeable


def test_torch_tensors_cross_with_dtype_and_device():
    torch = pytest.importorskip("torch")
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.int64, torch.bool):
        t = (torch.arange(12) % 3).to(dtype).reshape(3, 4)
        back = _round_trip(t)
        assert back.dtype == dtype and torch.equal(back, t)
    meta = _round_trip(torch.empty(2, 3, device="meta"))
    assert meta.device.type == "meta" and meta.shape == (2, 3)
    assert _round_trip(torch.float16) is torch.float16


def test_records_and_named_tuples_keep_their_fields():
    import collections
    import dataclasses

    @dataclasses.dataclass
    class Budget:
        total_bytes: int
        fits: bool

    Summary = collections.namedtuple("Summary", "m denom acc")
    budget = _round_trip(Budget(2336, True))
    assert budget.total_bytes == 2336 and budget.fits is True
    summary = _round_trip(Summary(1.0, 2.0, np.ones(3)))
    assert summary.m == 1.0 and summary.denom == 2.0 and np.array_equal(summary.acc, np.ones(3))


@pytest.mark.parametrize("value", [object(), np.array([object()]), lambda: 0, {1, 2}], ids=str)
def test_anything_else_is_refused_with_a_type_error(value):
    with pytest.raises(TypeError, match="cannot be passed"):
        remote.encode(value)


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_the_trusted_side_unpickles_no_code():
    # Whatever a worker writes on the pipe, nothing runs here: every global lookup is refused.
    with pytest.raises(remote.ProtocolError, match="refused"):
        remote.loads(pickle.dumps(_Evil()))
    with pytest.raises(remote.ProtocolError):
        remote.decode(("nd", "O", (1,), b"\0" * 8, True))  # an object array
    with pytest.raises(remote.ProtocolError):
        remote.decode(("dc", "__class__", []))
    with pytest.raises(remote.ProtocolError):  # no 4 TB allocation on the worker's word
        remote.decode(("pt", "float32", (10**6, 10**6), "cpu", b""))


# --------------------------------------------------------------------------- the worker stand-in


def _module(tmp_path, source):
    file = tmp_path / "starter.py"
    file.write_text(source)
    return file


SOURCE = """
import os
import numpy as np

SCALE = 2

def double(x):
    return x * SCALE

def fill(cache, value):
    cache[...] = value      # in place, like write_kv

def bump(a):
    a += 1                  # in place, and returned: the caller gets its own array back
    return a

def picky(n):
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return n

def hang():
    while True:
        pass

def die():
    os._exit(3)

def leave():
    raise SystemExit(0)
"""


def test_submission_forwards_calls_and_copies_in_place_changes_back(tmp_path):
    incidents = []
    sub = remote.Submission(_module(tmp_path, SOURCE), call_timeout=5,
                            on_incident=lambda kind, message: incidents.append(kind))
    try:
        assert sub.SCALE == 2
        np.testing.assert_array_equal(sub.double(np.arange(3)), [0, 2, 4])
        cache = np.zeros((2, 3))
        assert sub.fill(cache, 7.0) is None
        assert (cache == 7.0).all(), "an in-place change in the worker must reach the caller's array"
        assert sub.bump(cache) is cache and (cache == 8.0).all()
        with pytest.raises(ValueError, match="n must be >= 0"):
            sub.picky(-1)
        assert not hasattr(sub, "os"), "modules the submission imports are not part of its API"
    finally:
        sub.close()
    assert incidents == []


def test_a_hang_times_out_and_a_crash_is_reported_then_the_next_call_works(tmp_path):
    incidents = []
    sub = remote.Submission(_module(tmp_path, SOURCE), call_timeout=1.0,
                            on_incident=lambda kind, message: incidents.append(kind))
    try:
        start = time.monotonic()
        with pytest.raises(remote.SubmissionTimeout, match=r"hang\(\) did not return within 1.0 s"):
            sub.hang()
        assert time.monotonic() - start < 5
        with pytest.raises(remote.SubmissionCrashed, match="exited with code 3"):
            sub.die()
        with pytest.raises(remote.SubmissionCrashed, match="SystemExit"):
            sub.leave()
        assert sub.picky(4) == 4  # a fresh worker
    finally:
        sub.close()
    assert incidents == ["timeout", "crashed", "crashed"]


def test_timeouts_and_crashes_are_not_exceptions_a_test_could_swallow():
    # pytest.raises(Exception) in a lab's bad-input test must not turn a hang into a pass.
    assert not issubclass(remote.SubmissionTimeout, Exception)
    assert not issubclass(remote.SubmissionCrashed, Exception)


def test_the_lab_deadline_stops_every_later_call(tmp_path):
    sub = remote.Submission(_module(tmp_path, SOURCE), call_timeout=30, deadline=time.time() + 1.5)
    try:
        with pytest.raises(remote.SubmissionTimeout, match="the lab's time limit"):
            sub.hang()
        with pytest.raises(remote.SubmissionTimeout, match="the lab's time limit was reached"):
            sub.picky(1)
    finally:
        sub.close()


KERNEL = """
import triton
import triton.language as tl


@triton.jit
def add_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)
"""


@pytest.mark.triton
def test_a_kernel_launch_runs_in_the_worker_and_fills_the_callers_tensor(tmp_path):
    from labkit.testing import triton_env

    torch, _ = triton_env.require_torch_and_triton()
    sub = remote.Submission(_module(tmp_path, KERNEL), triton=True, call_timeout=60)
    try:
        x = torch.arange(10, dtype=torch.float32, device=triton_env.device())
        out = torch.zeros_like(x)
        sub.add_one[(3,)](x, out, 10, BLOCK=4)
        assert torch.equal(out, x + 1)
    finally:
        sub.close()


# --------------------------------------------------------------------------- statuses without running anything


def _lab(lab_id="02-06"):
    return registry.get(lab_id)


def test_missing_syntax_error_and_links_are_decided_without_running_code(tmp_path):
    lab = _lab()
    folder = lambda student: tmp_path / student / lab.folder  # noqa: E731
    folder("carol").mkdir(parents=True)
    (folder("carol") / "starter.py").write_text("def build_slot_mapping(:\n")
    folder("mallory").mkdir(parents=True)
    (folder("mallory") / "starter.py").symlink_to(lab.path / "solution.py")  # the instructor's solution
    (tmp_path / "nobody").mkdir()
    if not (lab.path / "test_lab.py").is_file():
        pytest.skip(f"lab {lab.id} is not written yet")
    verdicts, warnings = grade.grade(tmp_path, [lab])
    by_student = {v.student: v for v in verdicts}
    assert by_student["carol"].status == "syntax error" and "line 1" in by_student["carol"].first_failure
    assert by_student["mallory"].status == "missing", "a symbolic link is never followed"
    assert by_student["nobody"].status == "missing"
    assert all(v.passed == 0 for v in verdicts) and warnings == []


def test_files_changed_during_a_run_are_restored_and_graded_again(tmp_path, monkeypatch):
    lab = _lab()
    if not (lab.path / "test_lab.py").is_file():
        pytest.skip(f"lab {lab.id} is not written yet")
    for student in ("alice", "victim"):
        (tmp_path / student / lab.folder).mkdir(parents=True)
        (tmp_path / student / lab.folder / "starter.py").write_text("X = 1\n")
    seen = []

    def fake_grade_one(student, lab, work_file, limits, mirror=None):
        # What another submission could do during this one's run: overwrite its file.
        seen.append((student, work_file.read_text()))
        if student == "victim" and [name for name, _ in seen].count("victim") == 1:
            work_file.write_text("raise SystemExit('sabotaged')\n")
        return grade.Verdict(student, lab.id, 1, 1, "ok", "", 0.0)

    monkeypatch.setattr(grade, "grade_one", fake_grade_one)
    verdicts, warnings = grade.grade(tmp_path, [lab], jobs=1)
    assert sorted(seen) == [("alice", "X = 1\n"), ("victim", "X = 1\n"), ("victim", "X = 1\n")]
    assert [v.status for v in verdicts] == ["ok", "ok"]
    assert len(warnings) == 1 and warnings[0].startswith("victim, lab 02-06: the submitted files changed")
    assert "check this one by hand" not in warnings[0]  # the second run kept its files
    (tmp_path / "alice" / lab.folder / "starter.py").write_text("X = 2\n")  # the submissions themselves: untouched
    assert (tmp_path / "victim" / lab.folder / "starter.py").read_text() == "X = 1\n"


def test_the_mirror_holds_the_students_work_and_nothing_pytest_would_load(tmp_path):
    lab = _lab()
    if not (lab.path / "test_lab.py").is_file():
        pytest.skip(f"lab {lab.id} is not written yet")
    files = {"starter.py": b"X = 1\n", "helpers.py": b"Y = 2\n", "numpy.py": b"", "conftest.py": b"",
             "test_lab.py": b"def test_nothing(): pass\n", "pytest.ini": b"[pytest]\n", "__init__.py": b""}
    mirror = grade._mirror(lab, tmp_path / "repo", files)
    assert (mirror / "starter.py").read_bytes() == b"X = 1\n" and (mirror / "helpers.py").is_file()
    assert (mirror / "test_lab.py").read_bytes() == (lab.path / "test_lab.py").read_bytes(), "the instructor's tests"
    for name in ("numpy.py", "conftest.py", "pytest.ini", "__init__.py", "solution.py", "bugs"):
        assert not (mirror / name).exists(), name
    assert (tmp_path / "repo" / "labkit").resolve() == registry.ROOT / "labkit"


def test_bad_input_is_a_grade_error(tmp_path):
    with pytest.raises(grade.GradeError, match="no such folder"):
        grade.students(tmp_path / "nope")
    with pytest.raises(grade.GradeError, match="no student folders"):
        grade.students(tmp_path)
    with pytest.raises(grade.GradeError, match=r"\.csv, \.json, \.md"):
        grade.check_report_path(Path("report.xlsx"))


def test_reports_in_three_formats():
    verdicts = [grade.Verdict("alice", "02-06", 33, 33, "ok", "", 1.0),
                grade.Verdict("bob", "02-06", 12, 33, "failed", "test_x: AssertionError: a | b", 2.0)]
    rows = list(csv.DictReader(io.StringIO(grade.render_report(verdicts, ".csv"))))
    assert rows[1]["status"] == "failed" and rows[1]["passed"] == "12" and rows[1]["first_failure"].endswith("a | b")
    data = json.loads(grade.render_report(verdicts, ".json", ["a warning"]))
    assert data["results"][0]["student"] == "alice" and data["warnings"] == ["a warning"]
    md = grade.render_report(verdicts, ".md")
    assert "| bob | 02-06 | 12 | 33 | failed | test_x: AssertionError: a \\| b | 2.0 |" in md


# --------------------------------------------------------------------------- the example class (slow)

EXPECTED = {
    # (student, lab): (status, passed is "all", "none" or "some")
    ("alice", "02-06"): ("ok", "all"),
    ("alice", "04-04"): ("ok", "all"),
    ("alice", "02-04"): ("ok", "all"),
    ("bob", "02-06"): ("failed", "some"),
    ("bob", "04-04"): ("failed", "none"),
    ("carol", "02-06"): ("syntax error", "none"),
    ("carol", "04-04"): ("ok", "all"),
    ("dave", "02-06"): ("timeout", "some"),
    ("dave", "04-04"): ("timeout", "none"),
    ("erin", "02-06"): ("crashed", "some"),
    ("erin", "04-04"): ("crashed", "none"),
    ("frank", "02-06"): ("failed", "none"),
    ("grace", "02-06"): ("ok", "all"),
}
LIMITS = grade.Limits(call=8.0, lab=60.0, imports=30.0)


@pytest.mark.maintainer
def test_the_example_class_is_graded_right_within_the_time_limits(tmp_path):
    labs = [registry.get(i) for i in ("02-06", "04-04", "02-04")]
    missing = [lab.id for lab in labs if not (lab.path / "test_lab.py").is_file()]
    assert not missing, f"labs {missing} are not written yet"
    before = _tree(CLASS)
    start = time.monotonic()
    verdicts, warnings = grade.grade(CLASS, labs, LIMITS, jobs=2)
    elapsed = time.monotonic() - start

    got = {(v.student, v.lab): v for v in verdicts}
    for key, verdict in got.items():
        status, passed = EXPECTED.get(key, ("missing", "none"))
        assert verdict.status == status, f"{key}: {verdict}"
        assert verdict.total > 0, f"{key}: the lab's test count is unknown: {verdict}"
        expected_passed = {"all": verdict.total, "none": 0}.get(passed)
        if expected_passed is None:
            assert 0 < verdict.passed < verdict.total, f"{key}: {verdict}"
        else:
            assert verdict.passed == expected_passed, f"{key}: {verdict}"
    assert "SubmissionTimeout" in got["dave", "02-06"].first_failure
    assert "ModuleNotFoundError" in got["erin", "04-04"].first_failure
    assert warnings == []
    ran = [v for v in verdicts if v.status not in ("missing", "syntax error")]
    assert elapsed < LIMITS.lab * len(ran), f"{elapsed:.0f} s for {len(ran)} runs"
    # frank's files (a conftest.py, a results file) landed in his scratch and snapshot folders only.
    assert _tree(CLASS) == before
    assert not (Path.cwd() / "results.jsonl").exists()


def _tree(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*")
            if p.is_file() and ".ruff_cache" not in p.parts and "__pycache__" not in p.parts}


@pytest.mark.maintainer
def test_labs_grade_writes_the_report(tmp_path):
    for student in ("alice", "carol", "frank"):
        shutil.copytree(CLASS / student, tmp_path / "class" / student)
    out = tmp_path / "report.csv"
    run = subprocess.run([sys.executable, "-m", "labkit.cli", "grade", str(tmp_path / "class"), "--labs", "02-06",
                          "--call-timeout", "5", "--lab-timeout", "60", "--out", str(out)],
                         capture_output=True, text=True, cwd=registry.ROOT, timeout=600)
    assert run.returncode == 0, run.stderr
    rows = {r["student"]: r for r in csv.DictReader(out.open())}
    assert rows["alice"]["status"] == "ok" and rows["alice"]["passed"] == rows["alice"]["total"]
    assert rows["frank"]["status"] == "failed" and rows["frank"]["passed"] == "0"
    assert rows["carol"]["status"] == "syntax error" and rows["carol"]["total"] == rows["alice"]["total"]


# --------------------------------------------------------------------------- the grader agrees with pytest (slow)

SPECIAL_BUGS = {"04-01": ["two_pass_gather"], "04-04": ["merge_in_place", "drops_remainder_keys"]}


def _standalone(lab, bug) -> str | None:
    """The bug as a student would hand it in: the solution with the broken function(s) after it, or,
    for a bug written as an edit (EDIT/EDITS), the solution with the edit made. None for a bug that
    needs its lab folder (load_sibling, a helper module of bugs/, an edit of another file)."""
    from labkit.course import bugs as gallery

    if bug.edits:
        if bug.source != gallery.DEFAULT_SOURCE:
            return None
        return gallery.apply_edits((lab.path / bug.source).read_text(), bug)
    text = bug.path.read_text()
    if "load_sibling" in text or re.search(r"^from _\w+ import", text, re.M):
        return None
    text = re.sub(r"^from __future__ import annotations\n", "", text, flags=re.M)
    text = re.sub(r"^from labkit\.bugs import solution_with\n", "", text, flags=re.M)
    text = re.sub(r"^globals\(\)\.update\(solution_with\(.*?\)\)\n?", "", text, flags=re.M | re.S)
    return (lab.path / "solution.py").read_text() + "\n\n# the classic mistake\n" + text


def _agreement_cases():
    from labkit.course import bugs as gallery

    cases = []
    for lab in registry.LABS:
        if not (lab.path / "test_lab.py").is_file():
            continue
        bugs = [b for b in gallery.bugs_of(lab.path) if _standalone(lab, b) is not None]
        chosen = bugs[:2] + [b for b in bugs[2:] if b.name in SPECIAL_BUGS.get(lab.id, ())]
        cases += [(lab, bug) for bug in chosen]
    return cases


@pytest.mark.maintainer
def test_the_grader_agrees_with_pytest_on_the_bug_galleries(tmp_path):
    """Bugs from every lab's gallery, handed in as students' files: the grader's count of passed
    tests is pytest's count under LAB_IMPL=bugs/<name>."""
    from labkit.course.runner import run_lab_tests

    cases = _agreement_cases()
    assert cases
    for lab, bug in cases:
        folder = tmp_path / "class" / f"{lab.id}-{bug.name}" / lab.folder
        folder.mkdir(parents=True)
        (folder / "starter.py").write_text(_standalone(lab, bug))
    verdicts, warnings = grade.grade(tmp_path / "class", sorted({lab for lab, _ in cases}, key=lambda x: x.id),
                                     grade.Limits(call=60, lab=300, imports=60), jobs=2)
    got = {v.student: v for v in verdicts if v.status != "missing"}
    wrong = []
    for lab, bug in cases:
        run = run_lab_tests(lab.path, impl=f"bugs/{bug.name}")
        verdict = got[f"{lab.id}-{bug.name}"]
        # A bug caught only by GPU tests passes everything on a CPU: then "ok" is the agreement.
        status = "failed" if run.passed < run.total else "ok"
        if (verdict.passed, verdict.total) != (run.passed, run.total) or verdict.status != status:
            wrong.append(f"{lab.id} {bug.name}: pytest {run.passed}/{run.total}, grader {verdict}")
    assert not wrong, "\n".join(wrong)
