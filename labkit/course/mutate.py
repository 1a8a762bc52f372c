"""Mutation testing: run a lab's tests against each of its mutants, and hold the result against the
lab's list of survivors.

A mutant (:mod:`labkit.course.mutants`) runs as a bug of the gallery does: ``LAB_IMPL=mutant``
loads the solution with the mutant's edit (handed over in ``LABS_MUTANT``:
:mod:`labkit.testing.loader`), in a pytest run forked from a warm interpreter where the system can
(:mod:`labkit.course.warm`). A run stops at its first failing test (``-x``): one failure is all it
takes to kill a mutant. Each run has a time limit; a mutant that hangs (a loop that no longer ends)
is killed by it, and said to be.

Verdicts: ``killed`` (a test failed, or the mutant did not even load), ``timeout`` (killed at the
time limit), ``survived`` (every test passed), ``error`` (the run went wrong in a way that says
nothing about the mutant: pytest could not start, found no test). :func:`compare` holds survivors
against the lab's ``survivors.toml`` (:mod:`labkit.course.survivors`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from labkit.course import warm
from labkit.course.mutants import Mutant
from labkit.course.registry import ROOT
from labkit.course.runner import LabRun, clean_env, run_in_parallel, run_lab_tests
from labkit.course.survivors import Survivor
from labkit.testing.loader import MUTANT_ENV, MUTANT_IMPL

KILLED, TIMEOUT, SURVIVED, ERROR = "killed", "timeout", "survived", "error"


@dataclass
class Verdict:
    mutant: Mutant
    status: str  # KILLED, TIMEOUT, SURVIVED or ERROR
    detail: str = ""  # killed: the first failing test and its message; error: what went wrong
    seconds: float = 0.0

    @property
    def killed(self) -> bool:
        """Killed by a test, or by the time limit."""
        return self.status in (KILLED, TIMEOUT)


def sample(mutants: list[Mutant], n: int | None, seed: int = 0) -> list[Mutant]:
    """``n`` of the mutants drawn with ``seed``, in their own order (all of them when ``n`` is None or
    not smaller): the same list, ``n`` and seed give the same sample on every machine."""
    if n is None or n >= len(mutants):
        return list(mutants)
    picked = sorted(random.Random(seed).sample(range(len(mutants)), n))
    return [mutants[i] for i in picked]


def baseline(lab_dir: Path, pool: warm.WarmPool | None = None, timeout: float = 900) -> LabRun:
    """The lab's tests on its solution, as each mutant's run makes them: they must all pass, and
    their time sets the mutants' time limit (a warm run's time starts at its fork, not while it waits
    for its server to start: :func:`labkit.course.runner.run_lab_tests`)."""
    return run_lab_tests(lab_dir, impl="solution", timeout=timeout, warm=pool, pytest_args=("-x",))


def time_limit(baseline_seconds: float) -> float:
    """A mutant's time limit: several times the whole suite's, for a machine busy with other runs."""
    return max(20.0, 4 * baseline_seconds + 10)


def run_mutant(lab_dir: Path, mutant: Mutant, timeout: float, pool: warm.WarmPool | None = None) -> Verdict:
    """The lab's tests on one mutant, until the first that fails."""
    spec = {"lab": str(Path(lab_dir).resolve()), "source": mutant.source, "old": mutant.old, "new": mutant.new}
    run = run_lab_tests(lab_dir, impl=MUTANT_IMPL, env={MUTANT_ENV: json.dumps(spec)}, timeout=timeout, warm=pool,
                        pytest_args=("-x",))
    return Verdict(mutant, *_status(run, timeout), seconds=run.seconds)


def _status(run: LabRun, timeout: float) -> tuple[str, str]:
    if run.timed_out:
        return TIMEOUT, f"still running after {timeout:.0f} s: it hangs (counted as killed)"
    if run.failures:
        first = run.failures[0]
        how = "" if first.when == "call" else " (the mutant does not load)"
        return KILLED, f"{first.name}{how}: {first.message}"
    if run.returncode in (0,) and not run.errors and run.total:
        return SURVIVED, ""
    if run.returncode is not None and run.returncode < 0:  # killed by a signal: a crash is a failure
        return KILLED, f"the test process died (signal {-run.returncode})"
    return ERROR, run.errors[0] if run.errors else run.first_problem() or f"pytest exited {run.returncode}"


def run_mutants(lab_dir: Path, mutants: list[Mutant], timeout: float, jobs: int = 2,
                on_done: Callable[[Verdict], None] | None = None, pool: warm.WarmPool | None = None) -> list[Verdict]:
    """Each mutant's verdict, ``jobs`` runs at a time, in the mutants' order."""

    def one(mutant: Mutant) -> Verdict:
        verdict = run_mutant(lab_dir, mutant, timeout, pool)
        if on_done:
            on_done(verdict)
        return verdict

    return run_in_parallel(one, mutants, jobs)


def warm_pool(jobs: int, labs) -> warm.WarmPool | None:
    """Warm servers for ``jobs`` runs at a time of ``labs``' mutants, where the system has them (use as
    a context manager)."""
    if not warm.available():
        return None
    return warm.WarmPool(jobs, ROOT, clean_env(None), torch=any(lab.uses_torch for lab in labs))


# --------------------------------------------------------------------------- against the list


@dataclass
class Comparison:
    """Survivors held against the lab's list."""

    new: list[Verdict] = field(default_factory=list)  # survived, not listed: a test to write, or an entry
    listed: list[tuple[Verdict, Survivor]] = field(default_factory=list)  # survived (or GPU-only), listed
    stale: list[tuple[Survivor, str]] = field(default_factory=list)  # listed entries that are wrong now: why

    @property
    def ok(self) -> bool:
        return not self.new and not self.stale


def compare(verdicts: list[Verdict], generated: list[Mutant], listed: list[Survivor], has_gpu: bool) -> Comparison:
    """New survivors (not listed) and stale entries among ``verdicts`` (all or a sample of ``generated``).

    Every entry is checked against ``generated``: one that names no mutant the operators make (the
    file changed, its edit no longer applies) is stale. An entry whose mutant ran and a test killed is
    stale, unless it is ``gpu_only`` and this machine has a GPU (where it must be killed: surviving
    there, it is a new survivor). An entry whose mutant only ran out of time proves nothing: a survivor
    runs the whole suite, and on busy cores it can outlast a limit set from a quiet baseline, so it
    stays listed (a mutant that now truly hangs shows as stale on a quiet machine)."""
    out = Comparison()
    by_key = {s.key: s for s in listed}
    keys = {m.key for m in generated}
    for survivor in listed:
        if survivor.key not in keys:
            out.stale.append((survivor, "no mutant makes this edit any more (the file changed): remove the entry, "
                                        "or update it from labs mutate's output"))
    for verdict in verdicts:
        entry = by_key.get(verdict.mutant.key)
        if verdict.status == SURVIVED:
            if entry is None or (entry.gpu_only and has_gpu):
                out.new.append(verdict)
            else:
                out.listed.append((verdict, entry))
        elif verdict.killed and entry is not None:
            if (entry.gpu_only and has_gpu) or verdict.status == TIMEOUT:
                out.listed.append((verdict, entry))
            else:
                out.stale.append((entry, f"listed as a survivor, but killed now ({verdict.detail}): remove the entry"))
    return out


def elapsed(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"
