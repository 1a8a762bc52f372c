"""generate looks up each prompt's limit in a max_new_tokens dict only when it queues that prompt.

A dict without a limit for some prompt raises a bare KeyError (naming neither the argument nor what is
wrong) once the prompts before it are queued.
"""

CAUGHT_BY = ["test_generate_refuses_a_bad_batch_and_queues_none_of_it"]

SOURCE = "_engine_base.py"

EDIT = (
    "            if missing:\n"
    "                raise ValueError(f\"max_new_tokens is a dict without a limit for the requests {missing}\")\n",
    "",
)
