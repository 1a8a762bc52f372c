"""add_request refuses prompt + max_new_tokens = max_model_len (``>=`` for ``>``).

A model with 256 positions can hold 256 tokens. Symptom: a ValueError naming max_model_len for a
request of exactly 256.
"""

CAUGHT_BY = ["test_add_request_accepts_and_refuses_at_its_edges"]

SOURCE = "_engine_base.py"  # the given engine half

EDIT = (
    "        if len(prompt) + max_new_tokens > self.max_model_len:\n",
    "        if len(prompt) + max_new_tokens >= self.max_model_len:\n",
)
