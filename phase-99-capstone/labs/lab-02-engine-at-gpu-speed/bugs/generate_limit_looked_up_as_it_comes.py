"""The given generate looks each prompt's limit up only when it reaches that prompt.

A dict of limits that misses a later prompt's id is found out after the prompts before it were
queued, and the lookup fails with a bare KeyError, which the take-back of a refused batch (it answers
ValueErrors) lets through. Symptom: a KeyError naming the id, not a ValueError naming
``max_new_tokens``, and the earlier prompts left in the waiting queue.
"""

CAUGHT_BY = ["test_generate_refuses_a_bad_batch_and_queues_none_of_it"]

SOURCE = "_gpu_engine_base.py"  # the given half of the engine

EDIT = (
    "        if isinstance(max_new_tokens, dict):\n"
    "            missing = [request_id for request_id in prompts if request_id not in max_new_tokens]\n"
    "            if missing:\n"
    "                raise ValueError(f\"max_new_tokens has no limit for the request ids {missing!r}\")\n",
    "",
)
