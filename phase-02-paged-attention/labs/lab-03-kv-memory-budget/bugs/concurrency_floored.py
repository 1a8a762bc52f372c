"""max_concurrency divides with // and returns a whole number of requests.

vLLM logs the concurrency as a fraction ("Maximum concurrency for 8,192 tokens per request:
54.50x"): half a request's worth of blocks still serves shorter requests. Floor division also
returns an int where the API promises a float. Symptom: 54 where 54.5 is expected.
"""

CAUGHT_BY = ["test_max_concurrency", "test_the_whole_budget_of_an_h100"]

EDIT = (
    "    return num_blocks / blocks_per_request\n",
    "    return num_blocks // blocks_per_request  # whole requests only\n",
)
