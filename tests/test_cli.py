"""Tests of the ``labs`` command line: bad input gets a message and exit status 2, never a traceback.

Running every lab's tests (``labs check``) is a maintainer check.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from labkit import cli
from labkit.cli import commands as cli_main
from labkit.course import hints as hints_mod
from labkit.course import registry


def _fake_lab(tmp_path, hints: str | None = None, exists: bool = True) -> registry.Lab:
    folder = tmp_path / "phase-09-fake" / "labs" / "lab-01-fake"
    if exists:
        folder.mkdir(parents=True)
        if hints is not None:
            (folder / "hints.md").write_text(hints)
    return registry.Lab("09-01", "phase-09-fake", str(folder), "A fake lab", "nothing", ("cpu",))


@pytest.fixture
def with_fake_lab(monkeypatch, tmp_path):
    """Register one more lab (in tmp_path) for the duration of a test."""

    def add(**kwargs):
        lab = _fake_lab(tmp_path, **kwargs)
        monkeypatch.setattr(registry, "LABS", (*registry.LABS, lab))
        return lab

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return add


def _run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_help_lists_the_commands():
    run = subprocess.run([sys.executable, "-m", "labkit.cli", "--help"], capture_output=True, text=True,
                         cwd=registry.ROOT)
    assert run.returncode == 0
    for command in ("list", "check", "hint", "bugs", "grade"):
        assert command in run.stdout


def test_list_shows_every_lab(capsys):
    code, out, _ = _run(capsys, "list")
    assert code == 0
    for lab in registry.LABS:
        assert lab.id in out


@pytest.mark.parametrize("argv", [["check", "07-07"], ["hint", "nope"], ["bugs", "9-9"], ["hint", "02-06", "--", "x"]])
def test_an_unknown_lab_is_a_usage_error(capsys, argv):
    if argv[-1] == "x":
        with pytest.raises(SystemExit) as exit_info:  # argparse: N must be a number
            cli.main(argv)
        assert exit_info.value.code == 2
        return
    code, _, err = _run(capsys, *argv)
    assert code == 2
    assert "no lab" in err and "02-06" in err and "Traceback" not in err


def test_a_lab_can_be_named_by_its_folder():
    lab = registry.LABS[0]
    assert cli_main.resolve_lab(lab.folder) == lab
    assert cli_main.resolve_lab("2-6") == registry.get("02-06")
    assert cli_main.resolve_lab("99-1") == cli_main.resolve_lab("99-01") == registry.get("99-01")


def test_a_missing_folder_is_named(capsys, with_fake_lab):
    with_fake_lab(exists=False)
    code, _, err = _run(capsys, "hint", "09-01")
    assert code == 2 and "not in this checkout yet" in err
    code, _, err = _run(capsys, "bugs", "09-01")
    assert code == 2 and "not in this checkout yet" in err
    code, out, _ = _run(capsys, "check", "09-01")
    assert code == 1 and "not in this checkout yet" in out


def test_hints_one_at_a_time(capsys, with_fake_lab):
    with_fake_lab(hints="# Hints\n\n## Hint 1\n\nLook at the block table.\n\n## Hint 2: closer\n\nslot = b * B + o\n")
    code, out, _ = _run(capsys, "hint", "09-01")
    assert code == 0 and "Look at the block table" in out and "slot" not in out and "hint 2" in out
    code, out, _ = _run(capsys, "hint", "09-01")  # the next one
    assert code == 0 and "slot = b * B + o" in out and "last hint" in out
    code, out, _ = _run(capsys, "hint", "09-01", "1")
    assert code == 0 and "Look at the block table" in out
    code, _, err = _run(capsys, "hint", "09-01", "3")
    assert code == 2 and "hints 1 to 2" in err


def test_hints_file_without_sections(capsys, with_fake_lab):
    with_fake_lab(hints="Nothing here.\n")
    code, _, err = _run(capsys, "hint", "09-01")
    assert code == 2 and "Hint 1" in err


def test_parse_hints_keeps_order_and_titles():
    hints = hints_mod.parse_hints("intro\n## Hint 1\na\n## Hint 2 (the formula)\nb\n### detail\nc\n")
    assert hints == [("Hint 1", "a"), ("Hint 2 (the formula)", "b\n### detail\nc")]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["grade", "{tmp}/class", "--out", "report.xlsx"], "must end in .csv, .json, .md"),
        (["grade", "{tmp}/nowhere"], "no such folder"),
        (["grade", "{tmp}/class", "--labs", "08-08"], "no lab '08-08'"),
        (["grade", "{tmp}/class", "--call-timeout", "0"], "positive"),
    ],
)
def test_grade_rejects_bad_input_before_running_anything(capsys, tmp_path, argv, message):
    (tmp_path / "class" / "alice").mkdir(parents=True)
    code, _, err = _run(capsys, *[a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert code == 2 and message in " ".join(err.split()) and "Traceback" not in err


@pytest.mark.maintainer
def test_check_starter_fails_every_lab_and_the_solutions_pass():
    """``labs check --impl starter`` shows each lab at 0/N with the starter's message; ``labs check`` all passing."""
    starter = subprocess.run([sys.executable, "-m", "labkit.cli", "check", "--impl", "starter"],
                             capture_output=True, text=True, cwd=registry.ROOT, env=_wide(), timeout=900)
    assert starter.returncode == 1, starter.stdout + starter.stderr
    for lab in registry.LABS:
        row = next((line for line in starter.stdout.splitlines() if line.strip("│ ").startswith(lab.id)), "")
        assert re.search(r"\b0/[1-9]\d*\b", row), f"lab {lab.id}: {row!r}"
        assert "NotImplementedError" in row, f"lab {lab.id}: {row!r}"
    solution = subprocess.run([sys.executable, "-m", "labkit.cli", "check"], capture_output=True, text=True,
                              cwd=registry.ROOT, env=_wide(), timeout=900)
    assert solution.returncode == 0, solution.stdout + solution.stderr


def _wide() -> dict:
    import os

    return {**os.environ, "COLUMNS": "400"}  # one board row per lab


@pytest.mark.maintainer
@pytest.mark.parametrize("entry", registry.LABS, ids=lambda lab: lab.id)
def test_every_lab_has_hints_numbered_from_one(entry):
    """``labs hint LAB N`` needs ``## Hint 1``, ``## Hint 2``, ... in order, each with text."""
    hints = entry.path / "hints.md"
    assert hints.is_file(), f"{entry.folder}/hints.md does not exist"
    parsed = hints_mod.parse_hints(hints.read_text(encoding="utf-8"))
    numbers = [int(title.split()[1]) for title, _ in parsed]
    assert numbers == list(range(1, len(parsed) + 1)) and numbers, f"{entry.folder}/hints.md: hints {numbers}"
    assert all(body for _, body in parsed), f"{entry.folder}/hints.md: an empty hint"


FAKE_LAB = {
    "solution.py": "def double(x):\n    return 2 * x\n",
    "starter.py": "def double(x):\n    raise NotImplementedError('double: not implemented yet (README step 1)')\n",
    "test_lab.py": (
        "def test_double(lab):\n    assert lab.double(3) == 6\n\n\n"
        "def test_double_zero(lab):\n    assert lab.double(0) == 0\n"
    ),
    "bugs/adds.py": (
        '"""Adds instead of multiplying: x + 2. Symptom: right only at x = 2."""\n\n'
        "CAUGHT_BY = ['test_double', 'test_double_zero']\n\n"
        "EDIT = ('    return 2 * x\\n', '    return x + 2\\n')\n"
    ),
    "bugs/squares.py": (
        '"""Squares at zero... right at 0 only, which test_double_zero cannot tell apart."""\n\n'
        "CAUGHT_BY = ['test_double_zero']\n\n"
        "EDIT = ('    return 2 * x\\n', '    return x * x if x == 0 else 2 * x\\n')\n"
    ),
}
FAKE_CONFTEST = """
import pytest

from labkit.testing import loader


@pytest.fixture(scope="module")
def lab(request):
    return loader.load_impl(request.path.parent)
"""


@pytest.mark.maintainer
def test_bugs_and_check_on_a_small_lab(capsys, with_fake_lab, tmp_path, monkeypatch):
    lab = with_fake_lab()
    for name, text in FAKE_LAB.items():
        (lab.path / name).parent.mkdir(parents=True, exist_ok=True)
        (lab.path / name).write_text(text)
    (lab.path / "conftest.py").write_text(FAKE_CONFTEST)  # the fake lab lives outside the repository
    monkeypatch.setenv("COLUMNS", "300")

    code, out, _ = _run(capsys, "bugs", "09-01")
    assert code == 1, out  # squares is not caught
    adds = next(line for line in out.splitlines() if line.strip("│ ").startswith("adds"))
    assert "caught; CAUGHT_BY agrees" in adds
    squares = next(line for line in out.splitlines() if line.strip("│ ").startswith("squares"))
    assert "NOT CAUGHT" in squares
    assert "1 of 2 bugs caught" in out

    code, out, _ = _run(capsys, "bugs", "09-01", "--diff")
    assert code == 0 and "-    return 2 * x" in out and "+    return x + 2" in out

    code, out, _ = _run(capsys, "check", "09-01", "--impl", "starter")
    assert code == 1 and "0/2" in out and "double: not implemented yet" in out
    code, out, _ = _run(capsys, "check", "09-01")
    assert code == 0 and "2/2" in out
