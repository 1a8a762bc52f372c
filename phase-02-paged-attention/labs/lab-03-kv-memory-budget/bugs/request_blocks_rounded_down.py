"""max_concurrency counts a request's blocks with floor division: a partial last block is free.

A request of 8193 tokens needs 513 blocks of 16, not 512; and a request shorter than a block takes
one block, not zero (which divides by zero). Symptom: 54.5 for 8193 tokens where 27904 / 513 is
expected, ZeroDivisionError for 1 token.
"""

CAUGHT_BY = ["test_max_concurrency"]

EDIT = (
    "    blocks_per_request = -(-max_model_len // block_size)\n",
    "    blocks_per_request = max_model_len // block_size  # the partial block forgotten\n",
)
