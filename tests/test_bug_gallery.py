"""The classic-bug gallery, checked (``pytest -m maintainer``; .ci/run runs it).

Every lab has a gallery; every bug in it has a docstring and a ``CAUGHT_BY``
list naming tests of its lab; and every bug fails its lab's tests, each test
its ``CAUGHT_BY`` names among them. Each bug runs in its own pytest process
(``LAB_IMPL=bugs/<name>``), forked on Linux from a warm interpreter
(:mod:`labkit.course.warm`), one per core, all the selected bugs the first time
one is checked. A bug runs the tests its ``CAUGHT_BY`` names first, each until
one of its cases fails; only when one of them does not fail does the whole
suite run, for the verdict and the list of tests that do fail
(:func:`labkit.course.bugs.check_bug`). The last two tests check that this
machinery keeps the verdicts of a plain run of the whole suite.
"""

from __future__ import annotations

import dataclasses
import functools
import os

import pytest

from labkit.course import bugs as gallery
from labkit.course import registry, runner, warm

pytestmark = pytest.mark.maintainer

WRITTEN = [lab for lab in registry.LABS if (lab.path / "test_lab.py").is_file()]
BUGS = [(lab, bug) for lab in WRITTEN for bug in gallery.bugs_of(lab.path)]
# Test runs at a time: one per core (a CI machine has two), at most eight.
JOBS = min(8, max(2, os.cpu_count() or 2))


def _id(value):
    return value.id if isinstance(value, registry.Lab) else value.name


# (Parameters are not named "lab": that name is the root conftest's fixture of the implementation under test.)
@pytest.mark.parametrize("entry", registry.LABS, ids=_id)
def test_every_lab_has_a_gallery(entry):
    lab = entry
    assert (lab.path / "test_lab.py").is_file(), f"lab {lab.id}: {lab.folder}/test_lab.py does not exist"
    assert gallery.bugs_of(lab.path), f"lab {lab.id}: {lab.folder}/bugs/ holds no bug"


@pytest.mark.parametrize(("entry", "bug"), BUGS, ids=_id)
def test_bug_is_documented(entry, bug):
    lab = entry
    where = f"{lab.folder}/bugs/{bug.name}.py"
    assert not bug.problem, f"{where}: {bug.problem}"
    assert bug.doc and bug.doc.strip(), f"{where}: no docstring saying what is wrong and its symptom"
    assert bug.caught_by, f"{where}: no CAUGHT_BY = [<test names>] list"
    tests = _test_functions(lab.path)
    unknown = [t for t in bug.caught_by if t not in tests]
    assert not unknown, f"{where}: CAUGHT_BY names tests that {lab.folder}/test_lab.py does not define: {unknown}"


@functools.cache
def _test_functions(lab_dir) -> set[str]:
    """A lab's test functions, read once (parsing a large test_lab.py for each of its bugs was a minute
    of the galleries' stage on CI's machine)."""
    return set(gallery.test_functions(lab_dir))


@pytest.fixture(scope="module")
def gallery_runs(request):
    """The gallery checks of every bug this session runs test_bug_fails_its_labs_tests for, computed
    at first use, several at a time across labs: {(lab id, bug name): BugCheck}.

    Under pytest-xdist (``-n``) each worker collects every test but runs only those it is handed, one
    at a time: there the check runs per bug, when its test does (checking every selected bug in every
    worker ran each bug once per worker)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return _OneAtATime()
    selected = [item.callspec.params for item in request.session.items
                if getattr(item, "originalname", "") == "test_bug_fails_its_labs_tests"]
    checks = gallery.check_galleries([(p["entry"].path, p["bug"]) for p in selected], jobs=JOBS)
    return {(p["entry"].id, p["bug"].name): check for p, check in zip(selected, checks, strict=True)}


class _OneAtATime(dict):
    """The gallery checks as a worker of pytest-xdist needs them: each bug's, checked when asked for."""

    def __missing__(self, key):
        lab_id, name = key
        lab, bug = next((lab, bug) for lab, bug in BUGS if lab.id == lab_id and bug.name == name)
        return gallery.check_bug(lab.path, bug, named_first=True)


@pytest.mark.parametrize(("entry", "bug"), BUGS, ids=_id)
def test_bug_fails_its_labs_tests(gallery_runs, entry, bug):
    lab = entry
    check = gallery_runs[lab.id, bug.name]
    how = f"LAB_IMPL=bugs/{bug.name} pytest {lab.folder}"
    assert not check.run.timed_out, f"{how}: stopped at its time limit"
    if check.skip_reason:  # e.g. a bug only a GPU test can see, on a CPU machine
        pytest.skip(f"{how}: {check.skip_reason}")
    assert check.caught, f"{how}: every test passes, the bug is not caught" + (
        f" ({check.run.errors[0]})" if check.run.errors else "")
    assert not check.declared_missed, (
        f"{how}: CAUGHT_BY lists {check.declared_missed}, which did not fail; the failing tests are {check.catchers}"
    )


# The machinery of the quick check, on one small lab: its verdicts must be the whole suite's.
SMALL = registry.get("02-05")


def _outcomes(run):
    return sorted((t.name, t.outcome, t.when) for t in run.tests)


@pytest.mark.skipif(not warm.available(), reason="warm starts are for Linux")
def test_a_warm_run_is_a_fresh_run():
    """A run forked from a warm interpreter records what a new interpreter records, test by test (a
    plain lab's whole suite; a Triton lab's named tests, Triton imported by the server), and its time
    limit still stops it (its whole process group). Catches a fork that inherits the server's state,
    runs Triton differently, loses the results pipe, or cannot be killed."""
    kernel = registry.get("02-04")
    kernel_bug = gallery.bugs_of(kernel.path)[0]
    runs = [(SMALL.path, gallery.bugs_of(SMALL.path)[0].name, {}),
            (kernel.path, kernel_bug.name, {"LABS_NAMED_TESTS": ",".join(kernel_bug.caught_by)})]
    with warm.WarmPool(1, registry.ROOT, runner.clean_env(None)) as pool:
        for lab_dir, bug, env in runs:
            cold = runner.run_lab_tests(lab_dir, impl=f"bugs/{bug}", env=env)
            hot = runner.run_lab_tests(lab_dir, impl=f"bugs/{bug}", env=env, warm=pool)
            assert hot.tests and _outcomes(hot) == _outcomes(cold), (hot.output, cold.output)
            assert (hot.returncode, hot.collected, hot.errors) == (cold.returncode, cold.collected, cold.errors)
        stopped = runner.run_lab_tests(SMALL.path, impl="solution", warm=pool, timeout=0.01)
        again = runner.run_lab_tests(SMALL.path, impl="solution", warm=pool)
    assert stopped.timed_out and stopped.returncode == -9, stopped
    assert again.all_passed and again.total == len(_outcomes(again)), again.output


def test_the_quick_check_keeps_the_whole_suites_verdict():
    """A bug whose CAUGHT_BY tests all fail is decided by them alone (each stops at its first failing
    case); one whose CAUGHT_BY names a test that passes on it is decided by the whole suite, which
    reports it with every test that does fail. Catches a quick check that accepts a CAUGHT_BY test that
    never failed, or reports only the tests it ran."""
    tests = gallery.test_functions(SMALL.path)
    for bug in (b for b in gallery.bugs_of(SMALL.path) if len(b.caught_by) >= 2):
        whole = gallery.check_bug(SMALL.path, bug)
        if set(tests) - set(whole.catchers):  # a bug that some test does not catch
            break
    quick = gallery.check_bug(SMALL.path, bug, named_first=True)
    assert whole.ok and quick.ok, (whole.run.output, quick.run.output)
    assert {t.function for t in quick.run.tests} == set(bug.caught_by), "only the named tests ran"
    for name in bug.caught_by:  # after its first failing case, a test's other cases skip
        cases = [t for t in quick.run.tests if t.function == name]
        assert [t.outcome for t in cases if t.outcome != "skipped"] == ["failed"], cases
    passing = next(t for t in tests if t not in whole.catchers)
    wrong = dataclasses.replace(bug, caught_by=[*bug.caught_by, passing])
    checked = gallery.check_bug(SMALL.path, wrong, named_first=True)
    assert checked.declared_missed == [passing] and checked.catchers == whole.catchers, checked
    assert not checked.ok
