"""The engine waits for the whole stream instead of the event of the step it reads.

stream.synchronize() waits for everything launched so far, the step just launched included: the host
reads the right tokens, but it waits for the device at every step, as if it were not one step ahead.
"""

CAUGHT_BY = ["test_the_host_runs_one_step_ahead"]

EDIT = (
    "            model_output.ready.synchronize()  # the tokens reach the host only once the step has run\n",
    "            self.runner.stream.synchronize()  # everything launched so far\n",
)
