"""The runner's input check no longer refuses an empty batch.

``check_step_inputs`` lets a ``StepInputs`` with no token and no sequence through to its slot range
check, where ``min()`` of no slot raises. Symptom: ``execute_model(StepInputs())`` fails with
"min() arg is an empty sequence", a ValueError that names nothing of the batch, instead of one
saying that an empty batch cannot run.
"""

CAUGHT_BY = ["test_the_runner_refuses_a_batch_that_cannot_run"]

SOURCE = "_runner.py"  # the given model runner

EDIT = (
    "    if n == 0 or s == 0:\n",
    "    if False:\n",
)
