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


def test_the_example_class_is_written_from_the_labs_files(tmp_path):
    make_class.write(tmp_path)
    files = {p.relative_to(tmp_path).as_posix(): p for p in tmp_path.rglob("starter.py")}
    assert set(files) == {sub.rel_path for sub in make_class.CLASS_LIST}
    assert {rel for rel, path in files.items() if not _compiles(path)} == BROKEN_ON_PURPOSE


def test_the_hostile_class_is_written_from_the_labs_files(tmp_path):
    students = make_hostile.CLASS_LIST + make_hostile.MEMORY_LIST
    make_hostile.write(tmp_path, students)
    files = {p.relative_to(tmp_path).as_posix(): p for p in tmp_path.rglob("starter.py")}
    assert set(files) == {s.rel_path for s in students}, "two students write the same file"
    assert [rel for rel, path in files.items() if not _compiles(path)] == []
    assert "block.reset_hash()" not in make_hostile.control_text(), "the control bug's edit applies"
