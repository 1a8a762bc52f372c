"""The switch between implementations, for every lab at once.

``LAB_IMPL`` names the module of each lab folder that the tests exercise:
``solution`` (default; ``starter`` in a class edition that ``labs release`` wrote), ``starter``,
a student's copy (``LAB_IMPL=alice`` for ``alice.py``) or a bug of the gallery
(``LAB_IMPL=bugs/no_correction``).
Tests receive it as the ``lab`` fixture: ``lab.paged_attention(...)``.

Read top to bottom: the record each run keeps of a lab's whole suite on its reference (for the
maintainers' checks), where Triton runs (decided before the first test module that may import it,
and said after the collection), the run's header (in a class edition, with the labs that build on
a reference not released yet), then one hook per job at collection (an unknown ``LAB_IMPL``, the
maintainers' checks, GPU tests without a GPU), a write into a read-only input named as such, then
the fixture.
"""

from __future__ import annotations

import pytest

from labkit.course import edition, registry
from labkit.testing import loader, triton_env

# Each lab's suite, when a run goes through all of it on the reference, is kept for the maintainers'
# checks that need that run again (labkit/course/suite_record.py).
pytest_plugins = ["labkit.course.suite_record"]

# Where Triton runs: decided once, before the first test module that may import it (Triton reads
# TRITON_INTERPRET when it is imported). Deciding imports torch, seconds on a small machine, so the
# test modules of the labs that need neither torch nor Triton (tagged python or cpu) do not decide:
# a run of those labs alone never imports torch.
_TRITON_LINE = pytest.StashKey[str]()
_HAS_CUDA = pytest.StashKey[bool]()


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path, parent):
    lab = registry.lab_for_path(module_path)
    if _TRITON_LINE not in parent.config.stash and (lab is None or lab.uses_torch):
        parent.config.stash[_TRITON_LINE] = triton_env.describe()


def pytest_report_header(config):
    impl = loader.impl_name()
    if edition.current() is not None:  # a class edition: the student's work unless LAB_IMPL says otherwise
        released = ", ".join(edition.current().released) or "none yet"
        mode = "your work, this class edition's default" if impl == "starter" else "a class edition"
        note = f" ({mode}; reference solutions released: {released})"
    else:
        note = " (the reference solutions; LAB_IMPL=starter tests your own work)" if impl == "solution" else ""
    return [f"labs: LAB_IMPL={impl}{note}"]


def pytest_report_collectionfinish(config, items):
    """In a class edition, the labs of this run that build on a reference not released yet, and what
    they run on instead (:mod:`labkit.course.edition`)."""
    labs = [registry.lab_for_path(folder) for folder in sorted({item.path.parent for item in items})]
    triton = [config.stash[_TRITON_LINE]] if _TRITON_LINE in config.stash else []
    return triton + [f"labs: {line}" for line in edition.notes([lab for lab in labs if lab is not None])]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """An unknown LAB_IMPL is a usage error naming what each lab folder has, before any test runs."""
    impl = loader.impl_name()
    problems = []
    for lab_dir in sorted({item.path.parent for item in items if item.path.name == "test_lab.py"}):
        try:
            loader.impl_path(lab_dir, impl)
        except loader.ImplNotFoundError as err:
            problems.append(str(err))
    if problems:
        raise pytest.UsageError("\n".join(problems))


class _MaintainerChecks:
    """Maintainer checks are slow and not for learners: they run only when -m names them
    (`pytest -m maintainer`), whatever other -m expression a learner passes."""

    def pytest_collection_modifyitems(self, config, items):
        if "maintainer" in (config.option.markexpr or ""):
            return
        dropped = [item for item in items if item.get_closest_marker("maintainer")]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [item for item in items if not item.get_closest_marker("maintainer")]


def pytest_runtest_setup(item):
    """GPU tests skip, with the reason, on a machine without CUDA; in a class edition, so do those of a
    lab whose given module comes with an earlier lab's reference, not released yet."""
    if item.get_closest_marker("gpu") and not item.config.stash.setdefault(_HAS_CUDA, triton_env.cuda_available()):
        pytest.skip("needs a CUDA GPU (torch.cuda.is_available() is False)")
    lab = registry.lab_for_path(item.path) if edition.current() is not None else None
    for name, owner in edition.held_back(lab) if lab is not None else ():
        pytest.skip(f"needs lab {owner}'s reference, not released yet in this class edition: the lab's given "
                    f"module {name} holds {owner}'s answers and comes with it")


# numpy's words for a write into an array whose flags.writeable is False.
_READ_ONLY = ("output array is read-only", "assignment destination is read-only")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A write into an input that a test handed over read-only fails as what it is: numpy's bare
    ValueError reads as if the test were at fault."""
    try:
        return (yield)
    except ValueError as err:
        if not any(words in str(err) for words in _READ_ONLY):
            raise
        raise AssertionError(
            f"{err}: the code under test wrote into one of its inputs, which the tests hand over read-only "
            "(flags.writeable = False) so that the expectation cannot change; compute into a new array"
        ) from err


def pytest_sessionstart(session):
    session.config.pluginmanager.register(_MaintainerChecks(), "labs_maintainer_checks")


@pytest.fixture(scope="module")
def lab(request):
    """The implementation under test of this test file's lab (see LAB_IMPL)."""
    return loader.under_test(request.path.parent)
