"""get_usage divides by the blocks that can be handed out (num_gpu_blocks - 1), leaving out the null block.

The number looks tidy (0.0 for a fresh pool), but vLLM's usage counts the null block as used, of
all num_gpu_blocks blocks, and a scheduler that compares usage with a watermark then admits one
block too many. Symptom: 0.0 for a fresh pool of 10 where 0.1 is expected, 5/9 with 5 blocks held.
"""

CAUGHT_BY = ["test_usage_counts_the_null_block_as_used"]

EDIT = (
    "        return 1.0 - self.get_num_free_blocks() / self.num_gpu_blocks\n",
    "        return 1.0 - self.get_num_free_blocks() / (self.num_gpu_blocks - 1)  # the null block left out\n",
)
