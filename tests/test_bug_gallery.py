"""The classic-bug gallery, checked (``pytest -m maintainer``; .ci/run runs it).

Every lab has a gallery; every bug in it has a docstring and a ``CAUGHT_BY``
list naming tests of its lab; and every bug fails its lab's tests, the
``CAUGHT_BY`` ones included. Each bug runs in its own pytest subprocess
(``LAB_IMPL=bugs/<name>``), two at a time; a lab's gallery runs once, the
first time one of its bugs is checked.
"""

from __future__ import annotations

import pytest

from labkit.course import bugs as gallery
from labkit.course import registry

pytestmark = pytest.mark.maintainer

WRITTEN = [lab for lab in registry.LABS if (lab.path / "test_lab.py").is_file()]
BUGS = [(lab, bug) for lab in WRITTEN for bug in gallery.bugs_of(lab.path)]


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
    tests = set(gallery.test_functions(lab.path))
    unknown = [t for t in bug.caught_by if t not in tests]
    assert not unknown, f"{where}: CAUGHT_BY names tests that {lab.folder}/test_lab.py does not define: {unknown}"


@pytest.fixture(scope="module")
def gallery_runs():
    """The lab's gallery checks, computed on first use: {(lab id, bug name): BugCheck}."""
    done: dict = {}

    def get(lab, bug):
        if (lab.id, bug.name) not in done:
            for check in gallery.check_gallery(lab.path, jobs=2):
                done[lab.id, check.bug.name] = check
        return done[lab.id, bug.name]

    return get


@pytest.mark.parametrize(("entry", "bug"), BUGS, ids=_id)
def test_bug_fails_its_labs_tests(gallery_runs, entry, bug):
    lab = entry
    check = gallery_runs(lab, bug)
    how = f"LAB_IMPL=bugs/{bug.name} pytest {lab.folder}"
    assert not check.run.timed_out, f"{how}: stopped at its time limit"
    if check.skip_reason:  # e.g. a bug only a GPU test can see, on a CPU machine
        pytest.skip(f"{how}: {check.skip_reason}")
    assert check.caught, f"{how}: every test passes, the bug is not caught" + (
        f" ({check.run.errors[0]})" if check.run.errors else "")
    assert not check.declared_missed, (
        f"{how}: CAUGHT_BY lists {check.declared_missed}, which did not fail; the failing tests are {check.catchers}"
    )
