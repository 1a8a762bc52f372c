"""The prompt's token ids are checked with ``__index__``, which a bool has: ``True`` becomes the token 1.

Python counts ``True`` as the int 1, and ``True.__index__()`` (what ``operator.index`` calls) is 1, so
a prompt ``[5, True, 7]`` (a mask passed for the ids, a flag in the wrong place) is served as
``[5, 1, 7]``, without a word. The shared check (``labkit.integers.as_int``) refuses a bool.
Symptom: ``add_request("r", [5, True, 7])`` queues a request, and the engine generates tokens for a
prompt nobody wrote.
"""

SOURCE = "_engine_base.py"  # the given add_request

CAUGHT_BY = ["test_numpy_integers_are_integers_and_a_bool_is_no_token_id"]

EDIT = (
    "            prompt = [as_int(t, \"prompt_token_ids: each token id\") for t in prompt_token_ids]\n",
    "            prompt = [t.__index__() for t in prompt_token_ids]  # BUG: True is taken as 1\n",
)
