"""The given step no longer checks the queues after schedule, only after update_from_output.

A schedule that leaves a request in two queues (or with the wrong status, or holding blocks it gave
back) goes on to build a batch, run the model and update the request before anything notices.
Symptom: the EngineStateError names "after update_from_output", a phase later than the mistake, and
the step has already changed the request it describes.
"""

CAUGHT_BY = ["test_a_schedule_that_leaves_a_request_in_two_queues_stops_the_step"]

SOURCE = "_engine_base.py"  # the given half of the engine

EDIT = (
    "        self._check_queues(phase, after_update=False)\n",
    "        pass  # the queues checked after the update only\n",
)
