"""The example class and the hostile class are written at test time from the labs' current files
(tests/fixtures/make_class.py, tests/fixtures/make_hostile.py): every edit must still apply, and every
file but the one meant not to must compile. A fast maintainer check (``pytest -m maintainer``) that names
the student whose edit broke when a lab's file changes, before the slow grading tests run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
import make_class  # noqa: E402
import make_hostile  # noqa: E402

pytestmark = pytest.mark.maintainer
BROKEN_ON_PURPOSE = {"carol/phase-02-paged-attention/labs/lab-06-paged-attention-numpy/starter.py"}


def _compiles(path: Path) -> bool:
    try:
        compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
    except SyntaxError:
        return False
    return True


def _through_a_link(root: Path, rel: str) -> bool:
    """Whether a folder on the way from ``root`` to ``rel`` is a symbolic link."""
    folder = root
    for part in Path(rel).parts[:-1]:
        folder = folder / part
        if folder.is_symlink():
            return True
    return False


def test_the_example_class_is_written_from_the_labs_files(tmp_path):
    make_class.write(tmp_path)
    files = {p.relative_to(tmp_path).as_posix(): p for p in tmp_path.rglob("starter.py")}
    assert set(files) == {sub.rel_path for sub in make_class.CLASS_LIST}
    assert {rel for rel, path in files.items() if not _compiles(path)} == BROKEN_ON_PURPOSE


def test_the_hostile_class_is_written_from_the_labs_files(tmp_path):
    students = make_hostile.CLASS_LIST + make_hostile.MEMORY_LIST
    make_hostile.write(tmp_path, students)
    files = {p.relative_to(tmp_path).as_posix(): p for p in tmp_path.rglob("starter.py")}
    # The students whose folders are links to a classmate's (b01-b04): their starter.py is the
    # classmate's, reached through the link, which a walk that follows no link does not enter.
    linked = {s.rel_path for s in students if _through_a_link(tmp_path, s.rel_path)}
    assert linked and all((tmp_path / rel).is_file() for rel in linked), "a link student's file is not reached"
    assert set(files) == {s.rel_path for s in students} - linked, "two students write the same file"
    # The compile bombs are not compiled here (one takes 700 MiB to compile, the other is deeper than
    # the compiler's recursion limit): the grader's capped compile check grades them a syntax error.
    bombs = {s.rel_path for s in students if (s.attack or "").startswith("compile-")}
    assert len(bombs) == 2
    assert [rel for rel, path in files.items() if rel not in bombs and not _compiles(path)] == []
    assert "block.reset_hash()" not in make_hostile.control_text(), "the control bug's edit applies"
