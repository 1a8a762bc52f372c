"""Repository checks for the course's maintainers (``pytest -m maintainer``; .ci/run runs them)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from labkit.course import registry

pytestmark = pytest.mark.maintainer

ROOT = registry.ROOT
LAB_FILES = ("README.md", "starter.py", "solution.py", "test_lab.py")


def test_every_registered_lab_has_its_files():
    for lab in registry.LABS:
        missing = [f for f in LAB_FILES if not (lab.path / f).is_file()]
        assert not missing, f"lab {lab.id} ({lab.folder}) lacks {missing}"


def test_every_lab_folder_is_registered():
    on_disk = {p.relative_to(ROOT).as_posix() for p in ROOT.glob("phase-*/labs/lab-*") if p.is_dir()}
    registered = {lab.folder for lab in registry.LABS}
    assert on_disk - registered == set(), "lab folders missing from labkit/registry.py"


def _public_api(path: Path) -> dict[str, str]:
    """Public top-level functions and classes, with the argument lists (names and defaults) of the
    functions and of the classes' public methods and ``__init__``, read without importing."""
    api = {}

    def signature(node, name):
        args = node.args
        defaults = [None] * (len(args.args) - len(args.defaults)) + [ast.unparse(d) for d in args.defaults]
        parts = [a.arg + (f"={d}" if d else "") for a, d in zip(args.args, defaults, strict=True)]
        parts += [f"*{args.vararg.arg}"] if args.vararg else []
        parts += [a.arg for a in args.kwonlyargs]
        parts += [f"**{args.kwarg.arg}"] if args.kwarg else []
        api[name] = f"{name}({', '.join(parts)})"

    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_"):
            signature(node, node.name)
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            api[node.name] = f"class {node.name}"
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and (
                        not item.name.startswith("_") or item.name == "__init__"):
                    signature(item, f"{node.name}.{item.name}")
    return api


@pytest.mark.parametrize("lab", registry.LABS, ids=lambda lab: lab.id)
def test_starter_and_solution_expose_the_same_api(lab):
    starter, solution = _public_api(lab.path / "starter.py"), _public_api(lab.path / "solution.py")
    assert starter == solution, f"lab {lab.id}: starter {starter} vs solution {solution}"
    api = lab.declared.api
    defined = {name for name in starter if "." not in name}
    assert defined == set(api.functions) | set(api.classes), (
        f"lab {lab.id}: lab.toml's [api] functions and classes {sorted(set(api.functions) | set(api.classes))} "
        f"are not the ones starter.py defines {sorted(defined)}")


def _kernels(path: Path) -> dict[str, str]:
    """Top-level Triton kernels (``@triton.jit``, ``@jit``, ``@triton.jit(...)``), private ones included,
    with their full argument lists (annotations such as ``tl.constexpr`` and defaults), read without importing."""
    kernels = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef):
            names = [ast.unparse(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list]
            if any(name.split(".")[-1] == "jit" for name in names):
                kernels[node.name] = f"{node.name}({ast.unparse(node.args)})"
    return kernels


LABS_WITH_KERNELS = [lab for lab in registry.LABS if _kernels(lab.path / "solution.py")]


@pytest.mark.parametrize("lab", LABS_WITH_KERNELS, ids=lambda lab: lab.id)
def test_starter_and_solution_kernels_have_the_same_signatures(lab):
    """A starter whose docstring hands the learner the solution's kernels must hand over the same ones."""
    starter, solution = _kernels(lab.path / "starter.py"), _kernels(lab.path / "solution.py")
    assert starter == solution, (
        f"lab {lab.id}: the starter's Triton kernels differ from the solution's:\n"
        + "\n".join(f"  starter:  {starter.get(k, '(missing)')}\n  solution: {solution.get(k, '(missing)')}"
                    for k in sorted(set(starter) | set(solution)) if starter.get(k) != solution.get(k))
    )


def test_committed_starters_fail_every_test(tmp_path):
    """Every lab test, run against the starters as committed in git, fails with NotImplementedError."""
    archive = tmp_path / "head.tar"
    subprocess.run(["git", "archive", "--format=tar", "-o", str(archive), "HEAD"], cwd=ROOT, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "repo")  # our own HEAD: trusted content
    env = {**os.environ, "LAB_IMPL": "starter"}
    folders = [lab.folder for lab in registry.LABS]
    # Two pytest processes, every other lab each: CI's machine has two cores, one pytest uses one.
    # --tb=line: the report's message names the error all the same, and pytest's longer tracebacks parse
    # the whole test file again for each of the ~1,900 failures (most of the run's time: 97 s, 35 s without).
    reports = [tmp_path / f"report-{half}.xml" for half in (0, 1)]
    runs = [subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=line",
                              f"--junitxml={report}", *folders[half::2]], cwd=tmp_path / "repo", env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for half, report in enumerate(reports)]
    try:
        for run in runs:
            run.wait(timeout=900)
    finally:
        for run in runs:  # a run past its time is stopped, not left behind
            run.kill()
    cases = [case for report in reports for case in ET.parse(report).getroot().iter("testcase")]
    wrong = []
    ran = 0
    for case in cases:
        outcome = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        if outcome is not None and outcome.tag == "skipped":
            continue
        ran += 1
        text = "" if outcome is None else (outcome.get("message", "") + (outcome.text or ""))
        if outcome is None or "NotImplementedError" not in text:
            wrong.append(f"{case.get('classname')}::{case.get('name')}: {'passed' if outcome is None else text[:200]}")
    assert ran > 0, "no lab test ran against the starters"
    assert not wrong, "tests that do not fail through the starter's NotImplementedError:\n" + "\n".join(wrong)


def test_phase_readmes_list_their_labs_in_study_order():
    for phase in registry.PHASES:
        text = (ROOT / phase / "README.md").read_text()
        ids = [lab.id for lab in registry.LABS if lab.phase == phase]
        positions = [text.find(f"lab-{lab_id.split('-')[1]}") for lab_id in ids]
        assert -1 not in positions, f"{phase}/README.md does not name every lab of {ids}"
        assert positions == sorted(positions), f"{phase}/README.md lists {ids} out of study order"



def test_readme_links_every_phase():
    """The labs are listed by the phase READMEs, so README.md must lead to each of them."""
    text = (ROOT / "README.md").read_text()
    missing = [phase for phase in registry.PHASES if f"]({phase}/README.md)" not in text]
    assert not missing, f"README.md does not link the README of {missing}: a reader could not find their labs"

def _markdown_files():
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / p for p in out if not p.startswith("tests/fixtures/")]


def test_relative_links_point_at_files_that_exist():
    dead = []
    for md in _markdown_files():
        if not md.exists():
            continue
        for target in re.findall(r"\]\(([^)\s]+)\)", md.read_text()):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = (md.parent / target.split("#")[0]).resolve()
            if not path.exists():
                dead.append(f"{md.relative_to(ROOT)} -> {target}")
    assert not dead, "dead relative links:\n" + "\n".join(dead)


def test_no_prose_repeats_a_source_document():
    tool = ROOT.parent / "shared" / "tools" / "seed_overlap.py"
    if not tool.is_file():
        pytest.skip("../shared/tools/seed_overlap.py is not beside this checkout")
    run = subprocess.run([sys.executable, str(tool), "--repo", str(ROOT)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:]
