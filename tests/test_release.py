"""``labs release``: the class edition of the course (labkit/course/release.py, labkit/course/edition.py).

One edition is written for the module, releasing the references of labs 02-01 and 02-05. The fast
checks read it: no text of a reference it has not released (each function body of those
solutions, normalised, and every distinctive new text of their galleries' edits), no dead link, the
README rewritten, a release that adds a reference in one command. The maintainer checks run it:
its ``pytest`` (the starters fail through their NotImplementedError; a released reference serves
the labs that build on it; a lab that builds on an unreleased one says so), ``labs check``, the site,
and a submission made from it, graded by ``labs grade`` from this repository.
"""

from __future__ import annotations

import ast
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from labkit.cli import main
from labkit.course import bugs, edition, registry, release
from labkit.grader import sandbox
from labkit.testing import loader

ROOT = registry.ROOT
RELEASED = ("02-01", "02-05")
# Labs whose edition pytest runs: the two released ones, one more building on a released reference
# (02-02 on 02-01), one on an unreleased reference (04-03 on 02-06, a Triton lab).
RUN_LABS = ("02-01", "02-02", "02-05", "04-03")
# The README's sections that only the edition has (labkit/course/edition_readme.md).
NEW_README_SECTIONS = {"## This edition of the course"}


@pytest.fixture(scope="module")
def edition_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("edition") / "class"
    release.release(out, RELEASED)
    return out


def _run(args: list[str], cwd: Path, timeout: float = 900, **env) -> subprocess.CompletedProcess:
    """A command in ``cwd`` with this interpreter, LAB_IMPL unset (or as ``env`` says)."""
    environ = {k: v for k, v in os.environ.items() if k not in ("LAB_IMPL", "PYTHONPATH")}
    return subprocess.run(args, cwd=cwd, env={**environ, **env}, capture_output=True, text=True, timeout=timeout)


# --------------------------------------------------------------------------- no solution text


def _squash(text: str, comments: bool = False) -> str:
    """Text without any space, tab or newline, so that a copy matches however it was reformatted; and
    without comments (``#`` to the end of the line, wherever it stands) unless ``comments``. Both
    sides of a search go through it alike."""
    return "".join((text if comments else re.sub(r"#[^\n]*", "", text)).split())


def _bodies(path: Path) -> list[tuple[str, str, list[str]]]:
    """Each function of ``path`` (methods and kernels too): (name, its body without its docstring,
    squashed; the body's non-empty lines, squashed)."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines(keepends=True)
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        body = node.body
        if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and \
                isinstance(body[0].value.value, str):
            body = body[1:]
        if body:
            text = "".join(lines[body[0].lineno - 1: body[-1].end_lineno])
            out.append((node.name, _squash(text), [line for line in map(_squash, text.splitlines()) if line]))
    return out


def _edition_texts(out: Path, comments: bool = False) -> dict[str, str]:
    """Every text file of the edition, squashed (``comments`` as for :func:`_squash`)."""
    texts = {}
    for path in out.rglob("*"):
        if path.is_file() and ".git" not in path.parts and "__pycache__" not in path.parts:
            try:
                texts[path.relative_to(out).as_posix()] = _squash(path.read_text(encoding="utf-8"), comments)
            except UnicodeDecodeError:
                continue
    return texts


def _handed_out(lab, comments: bool = False) -> str:
    """What the lab itself hands the learner in code, squashed: its starter and given modules. A body
    or an edit found there is not the reference's to keep back (a given helper both files define)."""
    files = [lab.path / "starter.py", *sorted(lab.path.glob("_*.py"))]
    return _squash("".join(f.read_text(encoding="utf-8") for f in files), comments)


def _added(old: str, new: str) -> str:
    """The lines an edit adds: ``new`` without the lines it shares with ``old`` at its start and end
    (an edit that appends an import to a kept line adds only the import)."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    while a and b and a[0] == b[0]:
        a, b = a[1:], b[1:]
    while a and b and a[-1] == b[-1]:
        a, b = a[:-1], b[:-1]
    return "".join(b)


def test_an_edition_holds_no_reference_it_has_not_released(edition_dir):
    """Searched in every text file of the edition, for every lab whose reference it does not hold:
    each function body of its solution.py and of its going-further kernels, comments left out (whole,
    and every run of three of its lines, so that a partial copy shows too), and the lines each edit
    of its gallery adds, comment included, where they are distinctive (20 characters or more, not in
    the code the lab hands out). Neither a body the lab hands out itself (a given helper in starter and
    solution alike) nor a single line of a solution is searched: a hint or a README may quote one on
    purpose, and a test's docstring names the mistake it catches. The bug files, the solutions and
    the going-further kernels themselves are not in the edition at all."""
    found = []
    for comments in (False, True):
        texts = _edition_texts(edition_dir, comments)
        corpus = "\n".join(texts.values())

        def where(needle: str, texts=texts, corpus=corpus) -> list[str]:
            return [] if needle not in corpus else [rel for rel, text in texts.items() if needle in text]

        for lab in registry.LABS:
            if lab.id in RELEASED:
                continue
            given = _handed_out(lab, comments)
            if not comments:
                kernels = [lab.path / f"{impl}.py" for impl in loader.available_impls(lab.path)
                           if impl.startswith("going-further/")]
                for source in [lab.path / "solution.py", *kernels]:
                    for name, body, lines in _bodies(source):
                        for piece in [body] + ["".join(lines[i:i + 3]) for i in range(len(lines) - 2)]:
                            if len(piece) >= 40 and piece not in given and where(piece):
                                found.append(f"{lab.id} {source.name}:{name}: {piece[:80]}... in {where(piece)}")
                                break
            else:
                for bug in bugs.bugs_of(lab.path):
                    for old, new in bug.edits:
                        text = _squash(_added(old, new), comments=True)
                        if len(text) >= 20 and text not in given and where(text):
                            found.append(f"{lab.id} bugs/{bug.name}: {text[:80]} in {where(text)}")
    assert not found, "the edition holds text of references it has not released:\n" + "\n".join(found)

    for lab in registry.LABS:
        held = lab.id in RELEASED
        for name in ("solution.py", "bugs"):
            assert (edition_dir / lab.folder / name).exists() == held, (
                f"{lab.folder}/{name} {'missing from' if held else 'in'} an edition that "
                f"{'releases' if held else 'does not release'} lab {lab.id}")


def test_every_file_of_the_course_has_its_place():
    """The rules of release.part_of on the files they exist for; a going-further file nobody declared
    goes with the reference (the safe side)."""
    lab = {lab.id: lab.folder for lab in registry.LABS}
    expected = {
        f"{lab['02-06']}/starter.py": ("course", None),
        f"{lab['02-06']}/_checks.py": ("course", None),
        f"{lab['02-06']}/solution.py": ("reference", "02-06"),
        f"{lab['02-06']}/bugs/no_scale.py": ("reference", "02-06"),
        f"{lab['04-06']}/going-further/hopper_decode.py": ("reference", "04-06"),
        f"{lab['04-06']}/going-further/tune.py": ("reference", "04-06"),
        f"{lab['04-06']}/going-further/a-new-note.md": ("reference", "04-06"),
        f"{lab['04-06']}/going-further/tuning-diary.md": ("course", None),
        f"{lab['04-06']}/results.md": ("course", None),
        f"{lab['04-02']}/test_bench.py": ("maintainers", None),
        f"{lab['99-02']}/_gpu_engine_base.py": ("course", None),
        "tests/test_labkit.py": ("course", None),
        "tests/test_repo.py": ("maintainers", None),
        "tests/fixtures/make_hostile.py": ("maintainers", None),
        "CONTRIBUTING.md": ("maintainers", None),
        ".ci/run": ("maintainers", None),
        "labkit/grader/grade.py": ("course", None),
        "labkit/course/edition_readme.md": ("maintainers", None),
        "phase-04-attention-backends/tutorials/roofline_check.py": ("course", None),
    }
    assert {rel: release.part_of(rel) for rel in expected} == expected


def test_an_edition_links_only_to_what_it_holds(edition_dir):
    """Every relative link of every page of the edition leads to a file or folder of the edition: a
    link to something left out became its text, a section moved into the README was re-based."""
    dead = []
    for page in edition_dir.rglob("*.md"):
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
                continue
            if not (page.parent / target.split("#")[0]).exists():
                dead.append(f"{page.relative_to(edition_dir)} -> {target}")
    assert not dead, "dead links in the edition:\n" + "\n".join(dead)


def test_the_edition_speaks_to_students(edition_dir):
    """Its README's sections are the course's, with those of labkit/course/edition_readme.md in their
    place (every heading there replaces one of the README's, but the new ones named here); its
    SETUP.md has none of the instructors' sections; there is no CONTRIBUTING.md."""
    readme = (edition_dir / "README.md").read_text(encoding="utf-8")
    overlay = (ROOT / release.REWRITTEN["README.md"]).read_text(encoding="utf-8")
    course_headings = {line for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
                       if line.startswith("## ")}
    rewritten = {line for line in overlay.splitlines() if line.startswith("## ")}
    assert rewritten - course_headings == NEW_README_SECTIONS, "edition_readme.md's headings must be README.md's"
    for heading in rewritten:
        section = overlay.split(heading + "\n", 1)[1].split("\n## ", 1)[0].strip()
        assert section.split("\n", 1)[0] in readme, f"the edition's README lacks its own {heading}"
    assert "### Grading a class" not in readme and "`solution.py`, the reference |" not in readme
    setup = (edition_dir / "SETUP.md").read_text(encoding="utf-8")
    for heading in release.LEFT_OUT["SETUP.md"]:
        assert heading in (ROOT / "SETUP.md").read_text(encoding="utf-8") and heading not in setup
    assert not (edition_dir / "CONTRIBUTING.md").exists() and not (edition_dir / ".ci").exists()


def test_an_edition_runs_the_starter_and_the_released_references(edition_dir):
    """Inside the edition, LAB_IMPL defaults to the starter, and load_reference loads a released
    reference's solution.py and an unreleased one's starter.py."""
    probe = ("from labkit.testing import loader\n"
             "import labkit\n"
             "print(loader.impl_name())\n"
             "print(labkit.load_reference('02-01').__file__)\n"
             "print(labkit.load_reference('02-06').__file__)\n")
    run = _run([sys.executable, "-c", probe], cwd=edition_dir)
    assert run.returncode == 0, run.stderr
    impl, released, unreleased = run.stdout.split()
    assert impl == "starter"
    assert Path(released) == edition_dir / registry.get("02-01").folder / "solution.py"
    assert Path(unreleased) == edition_dir / registry.get("02-06").folder / "starter.py"


def test_releasing_a_reference_later_is_one_command(edition_dir, tmp_path):
    """``labs release OUT --release-solutions 02-06`` on an edition adds lab 02-06's reference to those
    its manifest lists, replaces the files the last release wrote (one it wrote and the course no
    longer has is gone), and leaves what it did not write (.git, a file of the class's own)."""
    out = tmp_path / "class"
    shutil.copytree(edition_dir, out)
    (out / ".git").mkdir()
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (out / "CLASS.md").write_text("Office hours: Tuesdays.\n")
    stale = "phase-02-paged-attention/labs/lab-01-block-allocator/old-notes.md"
    (out / stale).write_text("left over from an earlier release\n")
    manifest = json.loads((out / edition.MANIFEST).read_text())
    manifest["files"].append(stale)
    (out / edition.MANIFEST).write_text(json.dumps(manifest))

    run = _run([sys.executable, "-m", "labkit.cli", "release", str(out), "--release-solutions", "02-06"], cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert edition.read(out).released == ("02-01", "02-05", "02-06")
    assert (out / registry.get("02-06").folder / "solution.py").is_file()
    assert (out / registry.get("02-06").folder / "bugs" / "no_scale.py").is_file()
    assert (out / registry.get("02-01").folder / "solution.py").is_file()
    assert not (out / stale).exists()
    assert (out / "CLASS.md").read_text() == "Office hours: Tuesdays.\n" and (out / ".git" / "HEAD").is_file()
    assert "reference solutions released: 02-01, 02-05, 02-06" in " ".join(run.stdout.split())


def test_release_writes_only_into_a_folder_of_its_own(tmp_path, capsys):
    """A folder that holds other files (no edition.json) and the course's own tree are refused with a
    message, and nothing is written."""
    (tmp_path / "notes.txt").write_text("mine\n")
    for out, words in ((tmp_path, "no edition.json"), (ROOT / "build" / "edition", "inside the course's repository")):
        assert main(["release", str(out)]) == 2
        assert words in " ".join(capsys.readouterr().err.split())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    assert not (ROOT / "build" / "edition").exists()


# --------------------------------------------------------------------------- running an edition (slow)


@pytest.mark.maintainer
def test_an_editions_pytest_fails_on_the_starters_and_says_what_it_runs(edition_dir, tmp_path):
    """The edition's plain ``pytest`` on a few labs: its header names the starter and the released
    references, and the labs that build on an unreleased one; every lab test fails through the
    starter's NotImplementedError (released references serve 02-02 and 02-05; 04-03 runs on the student's
    own 02-06); the checks of labkit pass. A released reference passes its lab's tests there."""
    folders = [registry.get(lab_id).folder for lab_id in RUN_LABS]
    report = tmp_path / "report.xml"
    # --tb=line: the report's message names the error all the same, and a failure's longer traceback
    # costs a parse of its whole test file (most of this run's time, on the starters).
    run = _run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--tb=line", f"--junitxml={report}",
                *folders, "tests"], cwd=edition_dir)
    header = " ".join(run.stdout.split())
    assert "labs: LAB_IMPL=starter (your work, this class edition's default; reference solutions released: " \
           "02-01, 02-05)" in header, run.stdout[:2000]
    assert "labs: 04-03 builds on 02-06, whose reference is not released yet: it runs on your own starter.py" \
           in header, run.stdout[:2000]
    assert "labs: 02-05 builds" not in header and "labs: 02-02 builds" not in header
    wrong, ran = [], 0
    for case in ET.parse(report).getroot().iter("testcase"):
        outcome = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        if outcome is not None and outcome.tag == "skipped":
            continue
        ran += 1
        text = "" if outcome is None else outcome.get("message", "") + (outcome.text or "")
        in_lab = case.get("classname", "").startswith("phase-")
        if in_lab and "NotImplementedError" not in text or not in_lab and outcome is not None:
            wrong.append(f"{case.get('classname')}::{case.get('name')}: {text[:300] or 'passed'}")
    assert ran > 100 and not wrong, "\n".join(wrong)

    # Lab 02-05's reference, released, passes its tests on lab 02-01's released reference (a starter of
    # 02-01 would raise NotImplementedError in every one).
    run = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", registry.get("02-05").folder],
               cwd=edition_dir, LAB_IMPL="solution")
    assert run.returncode == 0, run.stdout[-3000:]


@pytest.mark.maintainer
def test_labs_check_in_an_edition_tests_the_starters(edition_dir):
    """``labs check`` with no --impl tests the starters there, says so, and names a lab that builds on
    an unreleased reference under its board."""
    run = _run([sys.executable, "-m", "labkit.cli", "check", "04-03"], cwd=edition_dir, COLUMNS="200")
    text = " ".join(run.stdout.split())
    assert run.returncode == 1, run.stdout + run.stderr
    assert "labs check: your work (starter.py) (this class edition's default: no --impl, no LAB_IMPL)" in text
    assert "04-03 builds on 02-06, whose reference is not released yet" in text
    assert "NotImplementedError" in text and "reference solutions, not your work" not in text


@pytest.mark.maintainer
def test_the_site_builds_from_an_edition_without_solution_pages(edition_dir, tmp_path):
    """``python -m labkit.docs build`` (strict) succeeds in the edition; no page shows a solution or a bug."""
    pytest.importorskip("mkdocs", reason="needs the docs extra: pip install -e '.[docs]'")
    run = _run([sys.executable, "-m", "labkit.docs", "build", "--out", str(tmp_path / "site")], cwd=edition_dir)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    pages = [p.relative_to(tmp_path).as_posix() for p in (tmp_path / "site").rglob("*")]
    assert any(p.endswith("starter.py.html") for p in pages)
    assert not [p for p in pages if "solution.py" in p or "/bugs/" in p or "hopper_decode" in p]


@pytest.mark.maintainer
@pytest.mark.skipif(sandbox.bwrap() is None, reason=sandbox.INSTALL)
def test_a_submission_from_an_edition_grades_with_labs_grade(edition_dir, tmp_path):
    """A student hands in lab 02-05's folder of the edition, its starter.py replaced by the reference's
    text: ``labs grade`` from this repository grades it ok, every test passed (lab 02-01's reference
    staged for it, as for any submission)."""
    lab = registry.get("02-05")
    shutil.copytree(edition_dir / lab.folder, tmp_path / "class" / "alice" / lab.folder)
    shutil.copyfile(lab.path / "solution.py", tmp_path / "class" / "alice" / lab.folder / "starter.py")
    out = tmp_path / "report.csv"
    run = _run([sys.executable, "-m", "labkit.cli", "grade", str(tmp_path / "class"), "--labs", lab.id,
                "--out", str(out)], cwd=ROOT)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rows = {row["student"]: row for row in csv.DictReader(out.open())}
    assert rows["alice"]["status"] == "ok" and rows["alice"]["passed"] == rows["alice"]["total"] != "0", rows
