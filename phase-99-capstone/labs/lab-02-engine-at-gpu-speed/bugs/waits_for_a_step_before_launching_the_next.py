"""The host waits for step N and hands its tokens over before it launches step N+1.

The tokens are right and every token arrives in the call after its step, as it should; but the host
schedules, prepares and launches step N+1 only once step N has finished, so the device idles for all
that host time: the overlap that step 4 is for is gone. The stream's log shows the wait for step N
before step N+1's launches.
"""

CAUGHT_BY = ["test_the_host_runs_one_step_ahead", "test_preempted_requests_keep_the_token_on_its_way"]

EDIT = (
    "        scheduler_output = self.schedule()\n        launched = None\n",
    "        if self.async_scheduling and self.in_flight is not None:  # read the step in flight first\n"
    "            done, model_output = self.in_flight\n"
    "            model_output.ready.synchronize()\n"
    "            self.update_from_output(done, model_output)\n"
    "            self.in_flight = None\n"
    "        scheduler_output = self.schedule()\n        launched = None\n",
)
