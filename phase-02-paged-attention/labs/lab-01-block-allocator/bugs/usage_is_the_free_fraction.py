"""get_usage() returns the fraction of blocks that are free instead of the fraction in use.

The scheduler's KV-cache usage metric (vLLM logs it as "GPU KV cache usage") would read 100% on an
idle engine. Symptom: a fresh pool of 10 reports 1.0.
"""

CAUGHT_BY = ["test_usage_leaves_out_the_null_block"]

EDIT = (
    "        return 1.0 - self.get_num_free_blocks() / usable\n",
    "        return self.get_num_free_blocks() / usable\n",
)
