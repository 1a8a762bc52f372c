"""With async scheduling on, the engine still reads each step's output right after launching it.

The tokens are right, but the host waits for the device at every step and the device waits for the
host's scheduling of the next: nothing overlaps.
"""

CAUGHT_BY = ["test_the_host_runs_one_step_ahead"]

EDIT = (
    "        if not self.async_scheduling:  # read this very step\n",
    "        if True:  # read this very step, whatever async_scheduling says\n",
)
