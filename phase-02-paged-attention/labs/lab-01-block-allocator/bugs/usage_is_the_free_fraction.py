"""get_usage() returns the fraction of blocks that are free instead of the fraction in use.

The scheduler's KV-cache usage metric (vLLM logs it as "GPU KV cache usage") would read 90% on an
idle engine. Symptom: a fresh pool of 10 reports 0.9.
"""

CAUGHT_BY = ["test_usage_counts_the_null_block_as_used"]

EDIT = (
    "        return 1.0 - self.get_num_free_blocks() / self.num_gpu_blocks\n",
    "        return self.get_num_free_blocks() / self.num_gpu_blocks\n",
)
