"""Mutation testing, checked: each lab's survivors list cannot drift from what its tests kill.

A lab is under mutation testing once it has a ``survivors.toml`` (:mod:`labkit.course.survivors`).
For each such lab, ``pytest -m maintainer`` (.ci/run runs this file as a stage of its own):

- reads the list: every entry well formed, with its reason, and naming a mutant the operators
  still make (an entry whose edit no longer applies is stale);
- runs a sample of the lab's mutants (``labs mutate``'s machinery: each a forked pytest run of the
  lab's tests, stopped at the first failure) and fails on a survivor the list does not name, and on
  a listed survivor that a test now kills.

The sample is ``LABS_MUTATION_SAMPLE`` mutants per lab (default below), drawn with a fixed seed, so
that CI runs the same mutants every time; ``LABS_MUTATION_SAMPLE=all`` runs every mutant of every
lab (tens of minutes: CONTRIBUTING.md, "Mutation testing", has the figures).

The first tests need no test run: the operators on small sources of their own.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import textwrap

import pytest

from labkit.course import mutants, mutate, registry, runner, suite_record, survivors
from labkit.testing import loader, triton_env

# Mutants per lab in CI (CONTRIBUTING.md, "Continuous integration", has the stage's time on 2 cores).
DEFAULT_SAMPLE = 4
SEED = 0
JOBS = min(8, max(2, os.cpu_count() or 2))

WRITTEN = [lab for lab in registry.LABS if (lab.path / "test_lab.py").is_file()]


def _sample_size() -> int | None:
    value = os.environ.get("LABS_MUTATION_SAMPLE", "").strip().lower()
    if value == "all":
        return None
    return int(value) if value else DEFAULT_SAMPLE


def _id(lab):
    return lab.id


@functools.cache
def _lab_mutants(lab_dir) -> tuple[mutants.Mutant, ...]:
    """A lab's mutants, made once a session (four checks read them; all labs' take some 5 s to make)."""
    return tuple(mutants.lab_mutants(lab_dir))


def _mutants_of(text: str) -> list[mutants.Mutant]:
    return mutants.file_mutants(textwrap.dedent(text), "solution.py")


# --------------------------------------------------------------------------- the operators


@pytest.mark.parametrize("entry", [pytest.param(registry.get("04-01"), id="quick-04-01"),
                                   *(pytest.param(lab, marks=pytest.mark.maintainer, id=lab.id) for lab in WRITTEN)])
def test_each_mutant_is_one_edit_of_whole_lines_that_occur_once(entry):
    """Every mutant's old text is whole lines found exactly once in its file, its new text parses in
    its place, and (file, old, new) names one mutant: one lab in the default run, every lab among the
    maintainers' checks. Catches an edit the gallery's loader would refuse, or two mutants the
    survivors list could not tell apart."""
    for lab in [entry]:
        made = _lab_mutants(lab.path)
        assert len({m.key for m in made}) == len(made), f"lab {lab.id}: two mutants make the same edit"
        for m in made:
            text = (lab.path / m.source).read_text(encoding="utf-8")
            assert text.count(m.old) == 1 and m.old.endswith("\n"), (lab.id, m)
            start = text.index(m.old)
            assert start == 0 or text[start - 1] == "\n", (lab.id, m)
            ast.parse(_statement_around(text, start, start + len(m.old)).replace(m.old, m.new))


def _statement_around(text: str, start: int, end: int) -> str:
    """The top-level statement of ``text`` (decorators included) that holds characters ``start`` to
    ``end``, whole lines; all of ``text`` when none holds them all. Whether an edit parses is decided
    there: the grammar reads each top-level statement apart, and parsing a large file once per mutant
    was most of this check's time."""
    first, last = text.count("\n", 0, start) + 1, text.count("\n", 0, end - 1) + 1
    for node in _top_level(text):
        begin = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        if begin <= first and last <= node.end_lineno:
            return "".join(text.splitlines(keepends=True)[begin - 1:node.end_lineno])
    return text


@functools.cache
def _top_level(text: str) -> list[ast.stmt]:
    return ast.parse(text).body


def test_the_operators_make_the_classic_mistakes():
    """One mutant of each operator on a small function (an off-by-one, a sign, a forgotten update, a
    missing check...). Catches an operator that makes nothing, or the wrong edit."""
    made = _mutants_of('''
        def f(xs, n, scale=2):
            if n < 0:
                raise ValueError(f"n={n + 1} is negative")
            total = 0
            m = -np.inf
            for i in range(len(xs)):
                total += xs[i] * scale
                m = max(m, xs[i])
            if not xs and n == 0:
                return None
            return np.sum(xs[1:n], axis=0) - total / n
        ''')
    edits = {(m.operator, m.new.strip()) for m in made}
    expected = [
        ("compare: < to <=", "if n <= 0:"),
        ("check removed", "if False:"),
        ("constant: 0 to 1", "total = 1"),
        ("-inf: -np.inf to 0.0", "m = 0.0"),
        ("range bound: end + 1", "for i in range(len(xs) + 1):"),
        ("arithmetic: += to -=", "total -= xs[i] * scale"),
        ("arithmetic: * to /", "total += xs[i] / scale"),
        ("statement removed", "pass"),
        ("min/max: max to min", "m = min(m, xs[i])"),
        ("not: removed", "if xs and n == 0:"),
        ("and/or: and to or", "if not xs or n == 0:"),
        ("slice bound: hi - 1", "return np.sum(xs[1:n - 1], axis=0) - total / n"),
        ("argument dropped: axis=", "return np.sum(xs[1:n]) - total / n"),
        ("return value: None", "return None"),
        ("arithmetic: - to +", "return np.sum(xs[1:n], axis=0) + total / n"),
    ]
    missing = [e for e in expected if e not in edits]
    assert not missing, f"missing {missing}; made {sorted(edits)}"


def test_no_mutant_in_docstrings_messages_or_demos():
    """Docstrings, strings, f-strings, raise statements, assert messages, annotations, decorators and
    a ``__main__`` block are not mutated. Catches mutants of words, which no test should pin."""
    made = _mutants_of('''
        """Module docstring: 1 + 2."""

        @functools.cache
        def f(x: int = 3) -> int:
            """Returns x + 1."""
            assert x, f"x={x - 1}"
            if x > 9:
                raise ValueError(f"x={x + 1} is past {9 - 1}")
            return x

        if __name__ == "__main__":
            print(f(1 + 1))
        ''')
    assert {m.operator for m in made} == {"constant: 3 to 4", "constant: 3 to 2", "compare: > to >=",
                                         "constant: 9 to 10", "constant: 9 to 8", "check removed",
                                         "return value: None"}, [(m.operator, m.new) for m in made]


def test_an_edit_is_widened_until_it_is_unique():
    """A line that occurs twice is named with the line before it (or after), so that the edit applies
    to one place. Catches an edit that the loader would refuse as ambiguous."""
    made = _mutants_of('''
        def f(a):
            x = a + 1
            return x

        def g(a):
            x = a + 1
            return -x
        ''')
    plus = [m for m in made if m.operator == "arithmetic: + to -"]
    assert len(plus) == 2 and all(m.old.count("\n") == 2 for m in plus), plus
    assert plus[0].old.startswith("def f(a):") and plus[1].old.startswith("def g(a):"), plus


def test_given_modules_are_the_ones_the_solution_imports():
    """A lab's given modules are the ``_*.py`` files its solution imports, directly or not; a test's
    helper (02-01's ``_hash_child.py``) is not one. Catches mutants of files no mutant run loads."""
    assert mutants.given_modules(registry.get("99-01").path) == ["_engine_base.py", "_runner.py"]
    assert mutants.given_modules(registry.get("02-01").path) == []


def test_a_sample_is_the_same_on_every_machine():
    made = list(range(100))
    assert mutate.sample(made, 5, seed=3) == mutate.sample(made, 5, seed=3) == sorted(mutate.sample(made, 5, 3))
    assert mutate.sample(made, 5, seed=3) != mutate.sample(made, 5, seed=4)
    assert mutate.sample(made, None) == made == mutate.sample(made, 500)


@pytest.mark.maintainer
@pytest.mark.parametrize("lab", WRITTEN, ids=lambda lab: lab.id)
def test_cis_sample_is_within_the_larger_one_it_replaced(lab):
    """CI's sample of DEFAULT_SAMPLE mutants is among the 8 it used to draw (CONTRIBUTING.md, "Mutation
    testing"): the smaller sample cannot meet a survivor that the larger one did not list."""
    made = _lab_mutants(lab.path)
    assert set(mutate.sample(made, DEFAULT_SAMPLE, SEED)) <= set(mutate.sample(made, 8, SEED))


def test_a_survivors_entry_reads_back_as_written(tmp_path):
    """An entry written by ``labs mutate --record`` (its why then filled in) reads back to the same
    edit, whatever characters it holds; an entry without a reason is refused."""
    old, new = '    x = "a\\tb" + \'é\'  # \x7f\n', "    pass\n"
    (tmp_path / survivors.FILE).write_text(survivors.header("00-00") + survivors.entry("solution.py", old, new))
    with pytest.raises(survivors.SurvivorsError, match="why"):
        survivors.read(tmp_path)
    (tmp_path / survivors.FILE).write_text(survivors.header("00-00")
                                           + survivors.entry("solution.py", old, new, "because", gpu_only=True))
    assert survivors.read(tmp_path) == [survivors.Survivor("solution.py", old, new, "because", True)]


def test_compare_finds_new_survivors_and_stale_entries():
    """A survivor not listed is new; a listed one that a test killed, or that no mutant makes any more,
    is stale (one that only ran out of time is not); a GPU-only entry is expected to survive only
    without a GPU."""
    a, b, c = (mutants.Mutant("solution.py", f"{x} = 1\n", "pass\n", 1, "statement removed") for x in "abc")
    gone = survivors.Survivor("solution.py", "d = 1\n", "pass\n", "gone")
    listed = [survivors.Survivor(*a.key, "why a"), survivors.Survivor(*b.key, "why b"), gone,
              survivors.Survivor(*c.key, "only a GPU test reaches it", gpu_only=True)]
    verdicts = [mutate.Verdict(a, mutate.SURVIVED), mutate.Verdict(b, mutate.KILLED, "test_b: wrong"),
                mutate.Verdict(c, mutate.SURVIVED)]
    cpu = mutate.compare(verdicts, [a, b, c], listed, has_gpu=False)
    assert [v.mutant for v in cpu.new] == [] and [e.why for e, _ in cpu.stale] == ["gone", "why b"]
    gpu = mutate.compare(verdicts, [a, b, c], listed, has_gpu=True)
    assert [v.mutant for v in gpu.new] == [c]
    assert [v.mutant for v, _ in mutate.compare(verdicts[:1], [a], listed[:1], False).listed] == [a]
    # A listed survivor that ran out of time on busy cores is no proof that a test kills it.
    slow = mutate.compare([mutate.Verdict(a, mutate.TIMEOUT, "still running after 34 s")], [a], listed[:1], False)
    assert not slow.stale and [v.mutant for v, _ in slow.listed] == [a], slow


# --------------------------------------------------------------------------- running mutants


SMALL = registry.get("04-01")


@pytest.mark.maintainer
def test_a_mutant_runs_as_the_solution_with_its_edit():
    """``LAB_IMPL=mutant`` loads the solution with the edit of ``LABS_MUTANT``: a wrong running max is
    killed by a test, an edit that changes nothing a test can see survives, a loop that never ends is
    stopped at the time limit and counted as killed. Catches a runner that tests the solution itself
    (every mutant would survive) or reads a crash as a survivor."""
    made = {m.new.strip(): m for m in mutants.lab_mutants(SMALL.path)}
    wrong = made["m_new = min(m, s.max())"]
    same = made["scores = k @ q / np.sqrt(q.shape[-1])  # [n]"]
    hangs = mutants.Mutant("solution.py", "    for start in range(0, seq_len, block_size):\n",
                           "    import time; time.sleep(60)\n    for start in range(0, seq_len, block_size):\n",
                           1, "a sleep")
    verdicts = [mutate.run_mutant(SMALL.path, m, timeout=t) for m, t in ((wrong, 120), (same, 120), (hangs, 8))]
    assert [v.status for v in verdicts] == [mutate.KILLED, mutate.SURVIVED, mutate.TIMEOUT], verdicts
    assert verdicts[0].detail.startswith("test_"), verdicts[0]


def test_lab_impl_mutant_needs_its_edit(monkeypatch):
    """Without ``LABS_MUTANT``, or with an edit meant for another lab, ``LAB_IMPL=mutant`` is refused
    with a message, never the solution loaded in silence."""
    monkeypatch.delenv(loader.MUTANT_ENV, raising=False)
    with pytest.raises(loader.ImplNotFoundError, match="labs mutate"):
        loader.impl_path(SMALL.path, loader.MUTANT_IMPL)
    other = registry.get("02-06").path
    monkeypatch.setenv(loader.MUTANT_ENV, json.dumps({"lab": str(other), "source": "solution.py",
                                                      "old": "x", "new": "y"}))
    with pytest.raises(loader.ImplNotFoundError, match="not a file of"):
        loader.impl_path(SMALL.path, loader.MUTANT_IMPL)


# --------------------------------------------------------------------------- each lab's list


def _listed(lab):
    try:
        found = survivors.read(lab.path)
    except survivors.SurvivorsError as err:
        pytest.fail(str(err))
    if found is None:
        pytest.skip(f"lab {lab.id} is not under mutation testing yet: `labs mutate {lab.id} --record` starts "
                    f"its survivors.toml")
    return found


@pytest.mark.maintainer
@pytest.mark.parametrize("entry", WRITTEN, ids=_id)
def test_survivors_list_names_mutants_that_exist(entry):
    """Each entry of the lab's list is well formed, says why, and names a mutant the operators still
    make (its file and edit). Catches a list that drifted from the solution: an entry for a line
    that changed or went."""
    lab = entry
    listed = _listed(lab)
    made = {m.key for m in _lab_mutants(lab.path)}
    stale = [s for s in listed if s.key not in made]
    assert not stale, f"{lab.folder}/survivors.toml: entries whose edit no mutant makes any more: " + "; ".join(
        f"{s.source}: {s.old.strip()!r} -> {s.new.strip()!r}" for s in stale)


@pytest.fixture(scope="module")
def sampled_runs(request):
    """The verdicts of every lab this session checks, computed at first use, runs from all labs
    sharing the cores: {lab id: (the sample's verdicts, every mutant of the lab)}."""
    labs = [item.callspec.params["entry"] for item in request.session.items
            if getattr(item, "originalname", "") == "test_no_unlisted_survivor"]
    labs = [lab for lab in labs if survivors.path(lab.path).is_file()]
    made = {lab.id: _lab_mutants(lab.path) for lab in labs}
    chosen = {lab.id: mutate.sample(made[lab.id], _sample_size(), SEED) for lab in labs}
    # The baselines: the default run's, where this checkout's `pytest` kept it (labkit/course/suite_record.py;
    # CI runs the README's `pytest` first), else a run of the lab's suite now.
    kept = {lab.id: suite_record.recorded(getattr(request.config, "cache", None), lab) for lab in labs}
    with (mutate.warm_pool(JOBS, labs) or _no_pool()) as pool:
        missing = [lab for lab in labs if kept[lab.id] is None]
        bases = kept | dict(zip((lab.id for lab in missing),
                                runner.run_in_parallel(lambda lab: mutate.baseline(lab.path, pool), missing, JOBS),
                                strict=True))
        limits = {lab.id: mutate.time_limit(bases[lab.id].seconds) for lab in labs}
        for lab in labs:
            assert bases[lab.id].all_passed, f"lab {lab.id}: the solution's tests fail: {bases[lab.id].first_problem()}"
        todo = [(lab, m) for lab in labs for m in chosen[lab.id]]
        verdicts = runner.run_in_parallel(lambda job: mutate.run_mutant(job[0].path, job[1], limits[job[0].id], pool),
                                          todo, JOBS)
    out = {lab.id: ([], made[lab.id]) for lab in labs}
    for (lab, _), verdict in zip(todo, verdicts, strict=True):
        out[lab.id][0].append(verdict)
    return out


class _no_pool:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


@pytest.mark.maintainer
@pytest.mark.parametrize("entry", WRITTEN, ids=_id)
def test_no_unlisted_survivor(sampled_runs, entry):
    """The lab's sampled mutants: every one killed, or listed in survivors.toml with why; every listed
    one drawn still survives. Catches a change to the solution or the tests that lets a wrong
    version pass (a new survivor), and a list that keeps an entry a test now kills."""
    lab = entry
    listed = _listed(lab)
    verdicts, made = sampled_runs[lab.id]
    errors = [v for v in verdicts if v.status == mutate.ERROR]
    assert not errors, f"lab {lab.id}: mutants that could not run: " + "; ".join(
        f"{v.mutant.where}: {v.detail}" for v in errors)
    found = mutate.compare(verdicts, made, listed, triton_env.cuda_available())
    problems = [f"new survivor {v.mutant.where} ({v.mutant.operator}):\n{v.mutant.diff()}" for v in found.new]
    problems += [f"stale entry {s.source}: {s.old.strip()!r} -> {s.new.strip()!r}: {why}" for s, why in found.stale]
    assert not problems, (f"lab {lab.id} (`labs mutate {lab.id}` shows them all; write the test that kills a "
                          f"survivor, or list it with why in {lab.folder}/survivors.toml):\n" + "\n".join(problems))


# --------------------------------------------------------------------------------------------------- the command


FAKE_SOLUTION = '''def double(x):
    return 2 * x


def clamp(x):
    if x < 0:
        return 0
    return x
'''
FAKE_TESTS = '''def test_double(lab):
    assert lab.double(3) == 6


def test_clamp(lab):
    assert lab.clamp(-3) == 0 and lab.clamp(5) == 5
'''
FAKE_CONFTEST = '''import pytest

from labkit.testing import loader


@pytest.fixture(scope="module")
def lab(request):
    return loader.load_impl(request.path.parent)
'''


@pytest.mark.maintainer
def test_labs_mutate_on_a_small_lab(capsys, monkeypatch, tmp_path):
    """``labs mutate`` end to end on a lab of two functions whose tests miss clamp's edges: it reports
    the survivors with their diffs and exits 1, ``--record`` listing them with an empty why, which the
    next run refuses (exit 2) until it is written; then every survivor is listed and the run exits 0;
    an entry whose line changed is stale, whatever the sample (exit 1). Catches a command that hides a
    survivor, accepts a list without reasons, or never sees a stale entry."""
    from labkit import cli

    folder = tmp_path / "phase-09-fake" / "labs" / "lab-01-fake"
    folder.mkdir(parents=True)
    for name, text in {"solution.py": FAKE_SOLUTION, "starter.py": FAKE_SOLUTION, "test_lab.py": FAKE_TESTS,
                       "conftest.py": FAKE_CONFTEST}.items():
        (folder / name).write_text(text)
    lab = registry.Lab("09-01", "phase-09-fake", str(folder), "A fake lab", "nothing", ("cpu",))
    monkeypatch.setattr(registry, "LABS", (*registry.LABS, lab))
    monkeypatch.setenv("COLUMNS", "200")

    def run(*argv):
        code = cli.main(["mutate", "09-01", *argv])
        return code, capsys.readouterr()

    code, (out, _) = run("--record")
    survived = sorted(line.split()[3:] for line in out.splitlines() if line.startswith("NEW SURVIVOR"))
    assert code == 1 and survived == [["compare:", "<", "to", "<="], ["constant:", "0", "to", "-1"],
                                      ["constant:", "0", "to", "1"]], out
    assert "+    if x <= 0:" in out and "3 survived (0 listed, 3 new)" in out, out
    assert survivors.path(folder).is_file(), "--record wrote no survivors.toml"
    code, (_, err) = run()
    assert code == 2 and "why" in err, err
    text = survivors.path(folder).read_text().replace('why = ""', 'why = "a reason"')
    survivors.path(folder).write_text(text)
    code, (out, _) = run("--jobs", "1")
    assert code == 0 and "3 survived (3 listed, 0 new)" in out, out

    (folder / "solution.py").write_text(FAKE_SOLUTION.replace("if x < 0:", "if x < 0:  # below the range"))
    code, (out, _) = run("--sample", "1")
    assert code == 1 and "stale entries" in out and "no mutant makes this edit" in out, out


def test_labs_mutate_refuses_bad_arguments(capsys):
    """A sample of 0 is a usage error (exit 2) before anything runs; ``--list`` runs nothing and prints
    each mutant as a diff."""
    from labkit import cli

    assert cli.main(["mutate", "04-01", "--sample", "0"]) == 2
    assert "--sample" in capsys.readouterr().err
    assert cli.main(["mutate", "04-01", "--list", "--sample", "2", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    diffs = out.count("--- solution.py") + out.count("--- _checks.py")  # 04-01's mutants: its solution's, its checks'
    assert diffs == 2 and "running 2 drawn with seed 1" in " ".join(out.split()), out
