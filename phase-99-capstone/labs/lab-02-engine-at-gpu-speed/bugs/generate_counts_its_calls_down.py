"""The given generate counts its calls of step down instead of up.

The count never reaches max_steps. Symptom: ``generate(..., max_steps=n)`` of a run that needs more
than n steps runs to the end (or forever, for an engine that never finishes) instead of raising a
RuntimeError after n steps.
"""

CAUGHT_BY = ["test_generate_stops_after_max_steps"]

SOURCE = "_gpu_engine_base.py"  # the given half of the engine

EDIT = (
    "            calls += 1\n",
    "            calls -= 1\n",
)
