"""get_usage counts the null block as used, of all num_gpu_blocks blocks.

vLLM's BlockPool.get_usage leaves the null block out of both counts: it is never free and never
handed out, so it says nothing about how full the cache is. Symptom: 0.1 for a fresh pool of 10
where 0.0 is expected, 0.6 with 5 blocks held where 5/9 is.

History: vLLM v0.10.1 computed usage this way.
"""

CAUGHT_BY = ["test_usage_leaves_out_the_null_block"]

EDIT = (
    "        return 1.0 - self.get_num_free_blocks() / usable\n",
    "        return 1.0 - self.get_num_free_blocks() / self.num_gpu_blocks  # the null block counted as used\n",
)
