"""add_request counts the blocks of every token, the last output token included.

The last sampled token's K/V is never written (generation stops as it is sampled), so a request
needs the blocks of ``len(prompt) + max_new_tokens - 1`` tokens. Symptom: a request that exactly
fills the pool is refused as if it needed one block more.
"""

CAUGHT_BY = ["test_add_request_accepts_and_refuses_at_its_edges"]

SOURCE = "_engine_base.py"  # the given engine half

EDIT = (
    "        needed = -(-(len(prompt) + max_new_tokens - 1) // self.block_size)\n",
    "        needed = -(-(len(prompt) + max_new_tokens) // self.block_size)\n",
)
