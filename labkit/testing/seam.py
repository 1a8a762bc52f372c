"""Where ``labs grade`` takes the place of the implementation under test: the one seam between a
lab's tests and the grader.

``grader`` is None, except in the trusted pytest process of ``labs grade``, where
:mod:`labkit.grader.pytest_plugin` installs an object with ``lab_module(lab_dir)`` (a stand-in for
the student's file, whose calls run in the student's sandbox) and ``run_child(script, args, env,
timeout)`` (a test's child script, run in that sandbox: :mod:`labkit.testing.child`). Inside the
sandbox, the staged ``labkit`` has a file of its own in this one's place, whose ``lab_module``
imports the student's file.
"""

grader = None


def skip_here(reason: str):
    """Skip the running test because this machine cannot run it (too few GPUs, no compiler): a
    decision taken from the machine alone, never from anything the implementation under test
    returned, printed or wrote. Under ``labs grade`` it is the only skip in a test's body that takes
    the test out of the total; any other (``pytest.skip`` after reading a child's answer, say)
    counts as a test not passed, since a submission must not be able to turn its tests into skips.
    Skips decided before the test's body runs (marks, ``importorskip`` at import) always count."""
    raise _machine_skip()(reason)


_MachineSkip = None


def _machine_skip():
    """The exception :func:`skip_here` raises: pytest's skip, of a class of its own (made on first use,
    so that this module imports without pytest)."""
    global _MachineSkip
    if _MachineSkip is None:
        import pytest

        class MachineSkip(pytest.skip.Exception):
            """A skip decided from the machine alone (:func:`skip_here`)."""

        _MachineSkip = MachineSkip
    return _MachineSkip
