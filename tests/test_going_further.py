"""Kernels that go past a lab (``going-further/<name>.py``) are held to the lab's own tests: they
promise its API, so every test of the lab must pass on them, here and on any GPU the maintainers run
this on (``pytest -m maintainer tests/test_going_further.py``)."""

from __future__ import annotations

import pytest

from labkit.course import registry
from labkit.course.runner import run_lab_tests
from labkit.testing import loader

pytestmark = pytest.mark.maintainer

FURTHER = [(lab, impl) for lab in registry.LABS for impl in loader.available_impls(lab.path)
           if impl.startswith("going-further/")]


@pytest.mark.parametrize(("lab", "impl"), FURTHER, ids=[f"{lab.id}:{impl}" for lab, impl in FURTHER])
def test_a_going_further_kernel_passes_its_labs_tests(lab, impl):
    run = run_lab_tests(lab.path, impl=impl, timeout=1200)
    assert run.all_passed, (
        f"lab {lab.id}, LAB_IMPL={impl}: {run.passed} of {run.total} tests passed; "
        f"first problem: {run.first_problem()}")
