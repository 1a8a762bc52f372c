"""The record a plain ``pytest`` run keeps of each lab's suite on its reference
(:mod:`labkit.course.suite_record`), checked: what the mutation check and the grader's agreement check
read instead of running the suite again must be what that run would give, and must not outlive a change.

A maintainer check (``pytest -m maintainer``): it starts pytest runs of a small lab.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from _pytest.cacheprovider import Cache  # pytest's own cache, read from a folder of the test's own

from labkit.course import registry, runner, suite_record

pytestmark = pytest.mark.maintainer

SMALL = registry.get("02-05")
# Loaded into every run below: one of the small lab's tests marked ungraded (the lab has none of its own).
UNGRADED = "test_lookup_changes_nothing"
MARK_ONE_UNGRADED = f'''import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if item.name == "{UNGRADED}":
            item.add_marker(pytest.mark.ungraded)
'''


def _keep(folder, *args, **env):
    """A plain ``pytest <small lab> *args`` whose cache is ``folder``; returns that cache (as pytest's
    ``config.cache`` reads it)."""
    environ = {k: v for k, v in os.environ.items() if k != "LAB_IMPL"}
    environ["PYTHONPATH"] = os.pathsep.join([str(registry.ROOT), str(folder.parent)])
    environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    done = subprocess.run([sys.executable, "-m", "pytest", str(SMALL.path), "-q", "-p", "mark_one_ungraded",
                           "-o", f"cache_dir={folder}", *args], cwd=registry.ROOT, capture_output=True, text=True,
                          env={**environ, **env}, timeout=600)
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
    return Cache(folder, _CONFIG, _ispytest=True)


_CONFIG = None  # the session's config, which pytest's Cache wants beside its folder (set by the fixtures)


@pytest.fixture(scope="module")
def kept(tmp_path_factory, pytestconfig):
    """The cache of a whole run of the small lab on its reference: ``(cache, folder of the plugin)``."""
    global _CONFIG
    _CONFIG = pytestconfig
    work = tmp_path_factory.mktemp("kept")
    (work / "mark_one_ungraded.py").write_text(MARK_ONE_UNGRADED)
    return _keep(work / "cache"), work


def _outcomes(run):
    return sorted((t.nodeid, t.name, t.outcome, t.when, t.message) for t in run.tests)


def test_a_kept_run_is_what_a_run_of_the_lab_gives(kept):
    """The record, read back, is test for test what :func:`run_lab_tests` returns for the lab's
    reference; ``graded_only``, the same less the test marked ungraded. Catches a record that loses,
    adds or renames a test, or keeps an ungraded one in the grader's count."""
    cache, work = kept
    env = {"PYTHONPATH": os.pathsep.join([str(registry.ROOT), str(work)])}
    whole = runner.run_lab_tests(SMALL.path, impl="solution", env=env, pytest_args=("-p", "mark_one_ungraded"))
    record, graded = suite_record.recorded(cache, SMALL), suite_record.recorded(cache, SMALL, graded_only=True)
    assert record is not None and graded is not None, "a whole run of the lab on its reference kept nothing"
    assert whole.all_passed and record.all_passed and record.seconds > 0
    assert _outcomes(record) == _outcomes(whole)
    assert (record.collected, record.returncode) == (whole.collected, whole.returncode)
    assert _outcomes(graded) == [o for o in _outcomes(whole) if o[1] != UNGRADED]
    assert graded.total == whole.total - 1


@pytest.mark.parametrize(("args", "env"), [(("-k", "not first_request_misses"), {}),
                                           (("-x",), {"LAB_IMPL": "starter"})],
                         ids=["a test deselected", "another implementation"])
def test_a_run_that_is_not_the_whole_reference_keeps_nothing(kept, args, env):
    """Catches a record of part of a suite (whose count would be short) and of a learner's code (whose
    failures would kill every mutant). (Without pytest's cache nothing is kept: every run that ``labs``
    starts is such a run, the galleries' and the grader's included.)"""
    _, work = kept
    assert suite_record.recorded(_keep(work / f"cache-{len(list(work.glob('cache*')))}", *args, **env), SMALL) is None


def test_a_record_is_not_read_once_what_decided_it_changed(kept, monkeypatch, tmp_path):
    """The fingerprint changes with any file of the labs or labkit, not with a bytecode cache; a
    record under another fingerprint is not read. Catches a record that outlives an edit of the lab."""
    cache, _ = kept
    assert suite_record.recorded(cache, SMALL) is not None
    monkeypatch.setattr(suite_record, "fingerprint", lambda: "something else")
    assert suite_record.recorded(cache, SMALL) is None
    monkeypatch.undo()

    root = tmp_path / "repo"
    for name in ("conftest.py", "pyproject.toml", "labkit/x.py", "phase-02-x/labs/lab-01-x/test_lab.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("a = 1\n")
    monkeypatch.setattr(registry, "ROOT", root)
    fingerprint = suite_record.fingerprint.__wrapped__
    before = fingerprint()
    (root / "phase-02-x/labs/lab-01-x/__pycache__").mkdir()
    (root / "phase-02-x/labs/lab-01-x/__pycache__/test_lab.pyc").write_bytes(b"\0")
    assert fingerprint() == before, "a bytecode cache changed the fingerprint"
    for name in ("labkit/x.py", "phase-02-x/labs/lab-01-x/test_lab.py", "conftest.py"):
        (root / name).write_text("a = 2\n")
        assert fingerprint() != before, f"an edit of {name} kept the fingerprint"
        (root / name).write_text("a = 1\n")
        assert fingerprint() == before
    (root / "phase-02-x/labs/lab-01-x/data.json").write_text("{}")
    assert fingerprint() != before, "a new file in a lab kept the fingerprint"
