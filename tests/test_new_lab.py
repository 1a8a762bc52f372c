"""A new lab is its folder and one line in its phase README: the course's lists, checks, site and
grader take the rest from its ``lab.toml``. Shown on a copy of the repository with a small lab added
(02-07, how many blocks a sequence holds), run there as a maintainer would run it.

The copy leaves out one thing CONTRIBUTING.md asks of a new lab besides: a mention in its phase's
``CHEATSHEET.md``, prose that the site's checks hold (``test_each_cheatsheet_covers_the_labs_of_its_phase``)
and that a browser is needed to check, so it is not run here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from labkit.course import registry
from labkit.grader import sandbox

pytestmark = pytest.mark.maintainer

FOLDER = "phase-02-paged-attention/labs/lab-07-blocks-per-sequence"

LAB = {
    "lab.toml": '''\
id = "02-07"
title = "Blocks per sequence"
builds = "the number of KV-cache blocks that seq_len tokens fill"
tags = ["python"]
needs = ["02-01"]
references = []
given = []

[api]
functions = ["blocks_needed"]
classes = []
constants = []
reexports = []

[labkit]
''',
    "README.md": '''\
# Lab 02-07: blocks per sequence

How many blocks of `block_size` tokens a sequence of `seq_len` tokens fills: a partly filled last
block is a whole block.

## Steps

1. `blocks_needed(seq_len, block_size)`: the count, rounded up.
''',
    "starter.py": '''\
"""Lab 02-07, your work: how many blocks a sequence fills (README step 1)."""


def blocks_needed(seq_len: int, block_size: int) -> int:
    """The blocks of ``block_size`` tokens that ``seq_len`` tokens fill, a partly filled last one included."""
    raise NotImplementedError("blocks_needed: not implemented yet (README step 1: round up)")
''',
    "solution.py": '''\
"""Lab 02-07, the reference: how many blocks a sequence fills."""


def blocks_needed(seq_len: int, block_size: int) -> int:
    """The blocks of ``block_size`` tokens that ``seq_len`` tokens fill, a partly filled last one included."""
    return -(-seq_len // block_size)
''',
    "test_lab.py": '''\
"""Lab 02-07 tests: each count against one made token by token."""

import pytest


def _blocks_token_by_token(seq_len: int, block_size: int) -> int:
    return sum(1 for t in range(seq_len) if t % block_size == 0)  # token t opens a block


@pytest.mark.parametrize("block_size", [1, 7, 16])
def test_blocks_needed(lab, block_size):
    for seq_len in range(50):
        want = _blocks_token_by_token(seq_len, block_size)
        got = lab.blocks_needed(seq_len, block_size)
        assert got == want, f"blocks_needed({seq_len}, {block_size}) = {got}, want {want}"
''',
    "hints.md": '''\
# Lab 02-07 hints

## Hint 1

Integer division rounds down, and the last block may be partly filled.
''',
    "bugs/rounded_down.py": '''\
"""The count rounded down: a partly filled last block is not counted."""

CAUGHT_BY = ["test_blocks_needed"]

EDIT = (
    "    return -(-seq_len // block_size)\\n",
    "    return seq_len // block_size\\n",
)
''',
    "survivors.toml": "# Lab 02-07: the mutants that no test kills (labs mutate 02-07).\n",
}
README_LINE = ("6. [Lab 02-07: blocks per sequence](labs/lab-07-blocks-per-sequence/): how many blocks "
               "`seq_len` tokens fill.\n")


def _copy_repository(dest: Path) -> None:
    """The files git tracks and the new ones it does not ignore, as the working tree has them."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=registry.ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = registry.ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).write_bytes(source.read_bytes())


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """A copy of the repository with lab 02-07 added: its folder, and one line in the phase README,
    where study order puts it (after 02-06, before 02-04)."""
    root = tmp_path_factory.mktemp("course")
    _copy_repository(root)
    for name, text in LAB.items():
        (root / FOLDER / name).parent.mkdir(parents=True, exist_ok=True)
        (root / FOLDER / name).write_text(text)
    readme = root / "phase-02-paged-attention" / "README.md"
    text = readme.read_text()
    anchor = "6. [Lab 02-04"
    assert text.count(anchor) == 1, "the phase README's list changed: update README_LINE's place"
    readme.write_text(text.replace(anchor, README_LINE + anchor))
    return root


def _run(course: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {name: value for name, value in os.environ.items() if name != "LAB_IMPL"}
    environment.update({"PYTHONPATH": str(course), **(env or {})})
    return subprocess.run([sys.executable, *args], cwd=course, env=environment, capture_output=True, text=True,
                          timeout=900)


def test_the_course_lists_it_in_study_order(course):
    listed = _run(course, "-m", "labkit.cli", "list")
    assert listed.returncode == 0, listed.stderr
    ids = [word for word in listed.stdout.split() if len(word) == 5 and word[2] == "-" and word[:2].isdigit()]
    assert ids.index("02-07") == ids.index("02-06") + 1, listed.stdout


def test_the_repositorys_checks_and_the_labs_tests_pass(course):
    checks = _run(course, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_repo.py",
                  "tests/test_declarations.py", FOLDER)
    assert checks.returncode == 0, checks.stdout[-3000:]
    starter = _run(course, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=line", FOLDER,
                   env={"LAB_IMPL": "starter"})
    assert "3 failed" in starter.stdout and "NotImplementedError: blocks_needed" in starter.stdout, starter.stdout


def test_its_gallery_and_mutants_are_checked(course):
    checks = _run(course, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "maintainer",
                  "tests/test_bug_gallery.py", "tests/test_mutation.py", "-k", "02-07")
    assert checks.returncode == 0 and " passed" in checks.stdout, checks.stdout[-3000:]


def test_the_site_has_its_pages_and_the_map_links_them(course, tmp_path):
    built = _run(course, "-m", "labkit.docs", "build", "--out", str(tmp_path / "docs"))
    assert built.returncode == 0, built.stderr[-3000:]
    site = tmp_path / "docs" / "site"
    assert (site / FOLDER / "index.html").is_file() and (site / FOLDER / "hints.html").is_file()
    assert "lab-07-blocks-per-sequence" in (site / "index.html").read_text(), "the home page's lab map"


@pytest.mark.skipif(sandbox.bwrap() is None, reason=sandbox.INSTALL)
def test_labs_grade_grades_it(course, tmp_path):
    submitted = tmp_path / "class" / "ann" / FOLDER
    submitted.mkdir(parents=True)
    (submitted / "starter.py").write_text(LAB["solution.py"])
    graded = _run(course, "-m", "labkit.cli", "grade", str(tmp_path / "class"), "--labs", "02-07",
                  "--out", str(tmp_path / "report.csv"))
    assert graded.returncode == 0, graded.stderr[-3000:]
    report = (tmp_path / "report.csv").read_text()
    assert "ann,02-07,3,3,ok" in report.replace(" ", ""), report
