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
