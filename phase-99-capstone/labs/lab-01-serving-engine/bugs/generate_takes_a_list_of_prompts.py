"""generate takes ``prompts`` without checking that it is a dict by request id.

A list of prompts (the batch without its request ids) reaches ``prompts.items()`` and fails there with
an AttributeError from inside the engine, naming neither the argument nor what it should be.
"""

CAUGHT_BY = ["test_generate_refuses_a_bad_batch_and_queues_none_of_it"]

SOURCE = "_engine_base.py"

EDIT = (
    "        if not isinstance(prompts, dict):  # a list of prompts has no request ids: say so, not AttributeError\n",
    "        if False:  # prompts not checked\n",
)
