"""max_concurrency counts a request's blocks through a float: ``math.ceil(max_model_len / block_size)``.

Right for every length a model has today, wrong past 2**53 tokens, where the length itself is no
float: 2**60 + 1 becomes 2**60, which blocks of 2**30 divide exactly, so the request is counted at
2**30 blocks where it takes 2**30 + 1. A ceiling in integers, ``-(-max_model_len // block_size)``,
has no such limit. Symptom: max_concurrency(2**40, 2**30, 2**60 + 1) is 1024.0, not 1023.99999905.
"""

CAUGHT_BY = ["test_max_concurrency"]

EDIT = (
    "    blocks_per_request = -(-max_model_len // block_size)\n",
    "    blocks_per_request = math.ceil(max_model_len / block_size)\n",
)
