"""The given step no longer checks that prepare_inputs returned a StepInputs.

Its next check reads ``inputs.input_ids`` of whatever came. Symptom: a prepare_inputs that returns
its batch as a dict fails with "AttributeError: 'dict' object has no attribute 'input_ids'", instead
of an EngineStateError naming the step, prepare_inputs and the type it returned.
"""

CAUGHT_BY = ["test_a_batch_that_is_not_a_step_inputs_stops_the_step"]

SOURCE = "_engine_base.py"  # the given half of the engine

EDIT = (
    "            self._fail(phase, f\"prepare_inputs returned {type(inputs).__name__}, expected a StepInputs\")\n",
    "            pass\n",
)
