"""Tests of the ``labs`` command line: bad input gets a message and exit status 2, never a traceback.

Running every lab's tests (``labs check``) is a maintainer check.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys

import pytest
from rich.console import Console

from labkit import cli
from labkit.cli import check as cli_check
from labkit.cli import commands as cli_main
from labkit.cli import common as cli_common
from labkit.cli import gallery as cli_gallery
from labkit.course import bugs as bugs_mod
from labkit.course import hints as hints_mod
from labkit.course import registry, runner


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


def _run_at(monkeypatch, width: int, *argv) -> tuple[int, str]:
    """Run the command with its output ``width`` columns wide, as plain text (no colours)."""
    out = io.StringIO()
    monkeypatch.setattr(cli_common, "console", Console(file=out, width=width, color_system=None, force_terminal=False))
    code = cli.main(list(argv))
    return code, out.getvalue()


def _words_whole(text: str, out: str) -> list[str]:
    """The words of ``text`` that do not appear whole in ``out`` (a word folded across two lines)."""
    tokens = set(re.split(r"[\s│┃|]+", out))
    return [word for word in text.split() if word not in tokens]


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


@pytest.mark.parametrize("columns", [80, 120])
def test_list_shows_every_folder_whole(columns):
    """``COLUMNS=80 labs list`` (and 120): every folder on one line, whole, and no word of a title
    cut: a path folded mid-word cannot be copied. Catches a table whose folder column folds."""
    run = subprocess.run([sys.executable, "-m", "labkit.cli", "list"], capture_output=True, text=True,
                         cwd=registry.ROOT, env={**_env_without_columns(), "COLUMNS": str(columns)})
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert max(len(line) for line in lines) <= columns, run.stdout
    for lab in registry.LABS:
        assert any(lab.folder in line for line in lines), f"{lab.folder} is not whole on one line:\n{run.stdout}"
        assert not _words_whole(lab.title, run.stdout), f"{lab.title!r} cut:\n{run.stdout}"


@pytest.mark.parametrize("width", [60, 80, 100, 120, 140, 200])
def test_list_is_a_table_only_where_it_fits(monkeypatch, width):
    """A table where folders fit whole beside the other columns (a wide terminal), two lines per lab
    otherwise; either way no folder and no word of a title is cut, and no line but a folder longer
    than the terminal is wider than it."""
    code, out = _run_at(monkeypatch, width, "list")
    assert code == 0
    if width <= 100:
        assert "┃ folder" not in out, out
    if width >= 200:
        assert "┃ folder" in out, out
    folders = [lab.folder for lab in registry.LABS]
    for lab in registry.LABS:
        assert any(lab.folder in line for line in out.splitlines()), out
        assert not _words_whole(lab.title, out), out
    assert all(len(line) <= width for line in out.splitlines() if not any(f in line for f in folders)), out


def _env_without_columns() -> dict:
    import os

    return {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}


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


def _fake_run(*failures: tuple[str, str], passed: int = 3) -> runner.LabRun:
    """A finished run of ``passed`` passing tests and then ``failures`` (test name, message)."""
    run = runner.LabRun(returncode=1 if failures else 0)
    run.tests = [runner.TestResult(f"t::test_ok{i}", f"test_ok{i}", "passed") for i in range(passed)]
    run.tests += [runner.TestResult(f"t::{name}", name, "failed", message=message.splitlines()[0], detail=message)
                  for name, message in failures]
    return run


@pytest.fixture
def canned_check(monkeypatch):
    """``labs check`` without running pytest: every lab's run is the one given."""

    def use(run: runner.LabRun):
        monkeypatch.setattr(runner, "run_lab_tests", lambda *args, **kwargs: run)

    monkeypatch.delenv("LAB_IMPL", raising=False)
    return use


def _flat(out: str, column: int | None = None) -> str:
    """The output with the board's rules and line breaks folded away, to search phrases that wrap;
    ``column``: only that column of a table's rows."""
    if column is not None:
        out = "\n".join(line.split("│")[column + 1] for line in out.splitlines() if line.startswith("│"))
    return " ".join(re.sub(r"[│┃┏┓┗┛┡┩└┘━─┳┻╇┴┬]", " ", out).split())


@pytest.mark.parametrize("columns", [80, 120])
def test_check_says_loudly_when_it_ran_the_reference(monkeypatch, canned_check, columns):
    """A learner who forgets --impl starter sees every lab green: the heading and a line under the
    board say these are the reference solutions, not their work, and how to test their own."""
    canned_check(_fake_run())
    code, out = _run_at(monkeypatch, columns, "check", "02-06")
    flat = _flat(out)
    assert code == 0
    assert flat.startswith("labs check: the reference solutions (solution.py), not your work"), out
    assert "(the default: no --impl, no LAB_IMPL)" in flat
    assert "These are the reference solutions, not your work: add --impl starter" in flat


def test_check_names_the_implementation_it_ran(monkeypatch, canned_check):
    """--impl starter says "your work"; LAB_IMPL from the environment says where it came from; a bug
    says it is the reference with one mistake; none of them claims to be the reference."""
    canned_check(_fake_run())
    code, out = _run_at(monkeypatch, 100, "check", "02-06", "--impl", "starter")
    assert "labs check: your work (starter.py) (from --impl)" in _flat(out) and "reference" not in out
    monkeypatch.setenv("LAB_IMPL", "bugs/no_scale")
    code, out = _run_at(monkeypatch, 100, "check", "02-06")
    assert "bugs/no_scale (the reference solution with one classic mistake) (from LAB_IMPL in your " \
           "environment)" in _flat(out)
    assert "not your work" not in out


LONG_CLOSE = (
    "AssertionError: paged_attention over a partial last block (nan poison, table [2, 4, 1]): 64 of 64 values "
    "differ by more than atol=1e-12; 64 non-finite value(s) (NaN/inf); first at head 0, dim 0\n"
    "  there: got nan, expected 0.405741\n"
    "  heads that differ: 0, 1, 2, 3 (of 4)"
)
REGEX = (
    "AssertionError: Regex pattern did not match.\n"
    "  Expected regex: 'acc'\n"
    "  Actual message: 'operands could not be broadcast together with shapes (16,) (4,)'"
)


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("message", [LONG_CLOSE, REGEX], ids=["assert_close", "raises-match"])
def test_board_wraps_the_first_failure_and_keeps_its_key_part(monkeypatch, canned_check, columns, message):
    """The first failure keeps its test name and every useful line of its message, wrapped, never
    cut: the tail of assert_close's first line (where the arrays differ), its "there: got ...,
    expected ..." line, and the expected pattern and actual message of a pytest.raises that did not
    match (its first line alone says nothing). Catches the old board's cut at 200 characters."""
    canned_check(_fake_run(("test_partial_tail_block_is_masked[nan-no-padding]", message)))
    code, out = _run_at(monkeypatch, columns, "check", "02-06", "--impl", "starter")
    assert code == 1
    flat = _flat(out)
    assert "3/4 test_partial_tail_block_is_masked[nan-no-padding]: " + message.splitlines()[0] in flat, out
    for line in message.splitlines()[1:]:
        assert line.strip() in flat, out
    assert all(len(line) <= columns for line in out.splitlines() if "pytest -x" not in line), out
    assert "LAB_IMPL=starter pytest -x phase-02-paged-attention/labs/lab-06-paged-attention-numpy" in out


def test_failure_lines_keep_the_explanation_and_drop_pytests_advice():
    """The first line whole, then its indented explanation; pytest's rewritten ``assert`` after the
    test's own message and its "Use -v" advice are left out; only a monstrous line is cut."""
    assert cli_check.failure_lines(LONG_CLOSE) == [
        LONG_CLOSE.splitlines()[0], "  there: got nan, expected 0.405741", "  heads that differ: 0, 1, 2, 3 (of 4)"]
    assert cli_check.failure_lines("AssertionError: merge_two: m is 3, expected 4\nassert 3 == 4\n  +  where 3 = f()") \
        == ["AssertionError: merge_two: m is 3, expected 4"]
    diff = "assert [1, 2] == [1, 3]\n  \n  At index 1 diff: 2 != 3\n  Use -v to get more diff"
    assert cli_check.failure_lines(diff) \
        == ["assert [1, 2] == [1, 3]", "  At index 1 diff: 2 != 3"]
    long = "ValueError: " + "x" * 300 + " the end"
    assert cli_check.failure_lines(long) == [long]
    assert len(cli_check.failure_lines("E " + "y " * 1000)[0]) <= 600
    assert cli_check.failure_lines("") == []


def test_failure_lines_drop_the_introspection_of_internals():
    """A bare assert's introspection keeps what the values were, with functions by name, and drops the
    lines that only say which object or module a name was read from (addresses, module paths); an
    assert with a message shows the message alone. Catches a board reading
    "where <function block_bytes at 0x7f...> = <module 'solution' from '...'>.block_bytes"."""
    bare = ("assert 65536 == 4096\n"
            " +  where 65536 = <function block_bytes at 0x7f2976fd1f80>(8, 8)\n"
            " +    where <function block_bytes at 0x7f2976fd1f80> = <module 'solution' from '/x/solution.py'>"
            ".block_bytes")
    assert cli_check.failure_lines(bare) == ["assert 65536 == 4096", "  where 65536 = block_bytes(8, 8)"]
    method = ("assert 3 == 4\n +  where 3 = <bound method Pool.num_free of <solution.Pool object at 0x7f00>>()\n"
              " +  and   4 = len([1, 2, 3, 4])\n +  where 5 = <solution.Pool object at 0x7f00>.n")
    assert cli_check.failure_lines(method) == [
        "assert 3 == 4", "  where 3 = Pool.num_free()", "  and   4 = len([1, 2, 3, 4])"]
    assert cli_check.failure_lines("AssertionError: block_bytes(8, 8) is 65536, expected 4096\n" + bare) \
        == ["AssertionError: block_bytes(8, 8) is 65536, expected 4096"]


def test_a_bugs_summary_is_its_first_sentence_whole():
    """``labs bugs`` shows a bug's first sentence, even when the docstring wraps it onto a second
    line; a "Symptom:" sentence after it is left for the file. Catches a summary cut at the end of
    the docstring's first line ("... reads KV head h % num_kv_heads instead of")."""

    def summary(doc):
        return bugs_mod.Bug("b", registry.ROOT, doc, []).summary

    assert summary("Wrong GQA head mapping: h % num_kv_heads instead of\nh // (num_heads // num_kv_heads).\n\n"
                   "More.") == "Wrong GQA head mapping: h % num_kv_heads instead of h // (num_heads // num_kv_heads)."
    assert summary("No tail mask: every token is valid,\nnot up to seq_len. Symptom: right only when\n"
                   "seq_len is a multiple.") == "No tail mask: every token is valid, not up to seq_len."
    assert summary("Its v0.22.1 Impl raises. e.g. x.y stays") == "Its v0.22.1 Impl raises. e.g. x.y stays"
    assert summary(None) == "" and summary("  ") == ""


def test_a_bug_that_shows_only_on_other_devices_is_not_run_here(tmp_path, monkeypatch):
    """``SHOWS_ON = ["cuda"]`` (a mistake only a GPU's launch makes visible) is read without running the
    file; on a machine whose labs run on the CPU the bug is not run and its check says why, and on a
    GPU machine it runs as any bug does. A SHOWS_ON that names no device, or another word, is a
    malformed bug, reported as such. Catches a gallery that fails a GPU-only mistake on every CPU."""
    (tmp_path / "bugs").mkdir()

    def bug(extra):
        path = tmp_path / "bugs" / "b.py"
        path.write_text(f'"""A mistake."""\n\nCAUGHT_BY = ["test_x"]\n{extra}\nEDIT = ("a", "b")\n')
        return bugs_mod.read_bug(path)

    assert bug("").shows_on == () and not bug("").problem
    assert bug('SHOWS_ON = ["cuda"]').shows_on == ("cuda",)
    for bad in ('SHOWS_ON = ["gpu"]', "SHOWS_ON = []", 'SHOWS_ON = "cpu"', "SHOWS_ON = [[1]]"):
        assert "SHOWS_ON" in bug(bad).problem, bad

    ran = []

    def fake_run(lab_dir, impl, **kwargs):
        ran.append(impl)
        run = runner.LabRun(returncode=1)
        run.tests = [runner.TestResult("t::test_x", "test_x", "failed", "boom")]
        return run

    monkeypatch.setattr(bugs_mod, "run_lab_tests", fake_run)
    monkeypatch.setattr(bugs_mod, "_device_here", lambda: "cpu")
    check = bugs_mod.check_bug(tmp_path, bug('SHOWS_ON = ["cuda"]'))
    assert not ran and not check.caught and "only on cuda" in check.skip_reason and "cpu here" in check.skip_reason
    check = bugs_mod.check_bug(tmp_path, bug('SHOWS_ON = ["cpu"]'))
    assert ran == ["bugs/b"] and check.ok and not check.skip_reason
    monkeypatch.setattr(bugs_mod, "_device_here", lambda: "cuda")
    assert bugs_mod.check_bug(tmp_path, bug('SHOWS_ON = ["cuda"]')).ok and len(ran) == 2


GALLERIES = [lab for lab in registry.LABS if bugs_mod.bugs_of(lab.path)]


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("entry", GALLERIES, ids=lambda lab: lab.id)
def test_bugs_board_never_cuts_a_summary_or_a_name(monkeypatch, entry, columns):
    """``labs bugs`` at 80 and 120 columns: every bug's summary whole, and no bug or test name folded
    mid-word (a narrow terminal gets one block per bug instead of a table). The tests' verdicts are
    canned: this checks the board, not the gallery."""

    def caught_as_declared(lab_dir, jobs, bugs, on_done):
        checks = []
        for bug in bugs:
            run = runner.LabRun(returncode=1)
            run.tests = [runner.TestResult(f"t::{t}", t, "failed", "boom") for t in bug.caught_by or []]
            checks.append(bugs_mod.BugCheck(bug, run, list(bug.caught_by or [])))
        return checks

    monkeypatch.setattr(bugs_mod, "check_gallery", caught_as_declared)
    code, out = _run_at(monkeypatch, columns, "bugs", entry.id)
    assert code == 0, out
    flat = _flat(out, column=0) if "┃ bug" in out else _flat(out)
    for bug in bugs_mod.bugs_of(entry.path):
        assert bug.summary and bug.summary in flat, f"{bug.name}: {bug.summary!r} not whole in\n{out}"
        assert not _words_whole(" ".join([bug.name, *(bug.caught_by or [])]), out), out
        for test in bug.caught_by or []:  # the tick stays with its test
            assert any(f"{test} ✓" in line for line in out.splitlines()), f"{test} ✓ split:\n{out}"
    assert all(len(line) <= columns for line in out.splitlines()), out


def test_compact_bugs_board_keeps_each_tick_with_its_test(monkeypatch):
    """On a narrow terminal each bug is a block; at no width does a line break fall between a test
    and its ✓ (which says that the bug's CAUGHT_BY lists it), nor inside a test's name."""
    marked = ["test_attend_partial_returns_the_unnormalized_triple ✓", "test_one_partition_is_just_attention ✓",
              "test_any_partition_count_matches_dense ✓", "test_extreme_scores_do_not_overflow", "test_x ✓"]
    rows = [("attend_partial_normalizes", "attend_partial returns acc / denom, and the merge divides again.", marked,
             "[green]caught; CAUGHT_BY agrees[/]")]
    for width in range(56, 101):
        out = io.StringIO()
        monkeypatch.setattr(cli_common, "console", Console(file=out, width=width, color_system=None))
        cli_gallery._bugs_compact(rows, width)
        lines = out.getvalue().splitlines()
        for test in marked:
            assert any(test in line for line in lines), f"width {width}: {test!r} split:\n{out.getvalue()}"


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
    """``labs check --impl starter`` shows each lab it runs at 0/N with the starter's message; ``labs check
    LAB`` on a reference passes. Three labs of different kinds (plain Python, numpy, a Triton kernel) show the
    board: that every test of every lab fails on its committed starter is
    tests/test_repo.py::test_committed_starters_fail_every_test, and that every reference passes every
    test is the README's ``pytest``, CI's second stage."""
    shown = [registry.get(lab_id) for lab_id in ("02-01", "04-04", "02-04")]
    starter = subprocess.run([sys.executable, "-m", "labkit.cli", "check", *(lab.id for lab in shown),
                              "--impl", "starter"],
                             capture_output=True, text=True, cwd=registry.ROOT, env=_wide(), timeout=900)
    assert starter.returncode == 1, starter.stdout + starter.stderr
    for lab in shown:
        row = next((line for line in starter.stdout.splitlines() if line.strip("│ ").startswith(lab.id)), "")
        assert re.search(r"\b0/[1-9]\d*\b", row), f"lab {lab.id}: {row!r}"
        assert "NotImplementedError" in row, f"lab {lab.id}: {row!r}"
    solution = subprocess.run([sys.executable, "-m", "labkit.cli", "check", "02-01", "04-04"], capture_output=True,
                              text=True, cwd=registry.ROOT, env=_wide(), timeout=900)
    assert solution.returncode == 0, solution.stdout + solution.stderr
    for lab_id in ("02-01", "04-04"):
        row = next((line for line in solution.stdout.splitlines() if line.strip("│ ").startswith(lab_id)), "")
        assert re.search(r"\b(\d+)/\1\b", row), f"lab {lab_id}: {row!r}"


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
        "import numpy as np\n\nimport labkit\n\n\n"
        "def test_double(lab):\n"
        "    labkit.assert_close(np.array([[lab.double(3)]]), np.array([[6.0]]), atol=0, axes=('row', 'col'),\n"
        "                        what='double(3), ' + ', '.join(['a long description of the case'] * 8))\n\n\n"
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

    # The whole message travels from the test run to the board (the plugin's "detail"): at 80 columns
    # the tail of a long first line and assert_close's "there" line are both on the board.
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = _run(capsys, "check", "09-01", "--impl", "bugs/adds")
    flat = _flat(out)
    assert code == 1 and "0/2 test_double: AssertionError: double(3), a long description" in flat, out
    assert "a long description of the case: 1 of 1 values differ by more than atol=0; max |Δ| = 1 at row 0, col 0" \
        in flat, out
    assert "there: got 5, expected 6" in flat, out

def test_grade_refuses_without_bubblewrap_and_names_the_install(capsys, tmp_path, monkeypatch):
    from labkit.grader import sandbox

    (tmp_path / "class" / "alice").mkdir(parents=True)
    monkeypatch.setattr(sandbox, "bwrap", lambda: None)
    code, _, err = _run(capsys, "grade", str(tmp_path / "class"), "--labs", "02-06")
    assert code == 2 and "apt-get install bubblewrap" in " ".join(err.split()) and "--no-sandbox" in err


def test_grade_without_a_sandbox_says_so_in_the_report(capsys, tmp_path):
    lab = registry.get("02-06")
    folder = tmp_path / "class" / "carol" / lab.folder
    folder.mkdir(parents=True)
    (folder / "starter.py").write_text("def broken(:\n")  # a syntax error: decided without running anything
    out = tmp_path / "report.json"
    code, _, err = _run(capsys, "grade", str(tmp_path / "class"), "--labs", "02-06", "--no-sandbox", "--out", str(out))
    assert code == 0 and "WITHOUT a sandbox" in " ".join(err.split())
    import json

    assert any("WITHOUT a sandbox" in w for w in json.loads(out.read_text())["warnings"])
