"""get_usage divides by the usable blocks without the case of a pool that has none.

``BlockPool(1)`` holds the null block alone: no block can be handed out, and vLLM's get_usage
returns 0 there. Symptom: ZeroDivisionError from get_usage on a pool of one block.
"""

CAUGHT_BY = ["test_usage_leaves_out_the_null_block"]

EDIT = (
    "        if usable == 0:\n            return 0.0\n",
    "",
)
