"""usage divides the blocks in use by every block of the pool, the null block included.

The null block is never handed out: a pool of 8 blocks has 7 to give, and 3 in use is 3/7, not 1 -
4/8. Symptom: usage reads 0.5 where 0.4286 is expected (and never reaches 1 on a full pool).
"""

CAUGHT_BY = ["test_block_sizes_from_one_and_the_usage"]

SOURCE = "_manager_base.py"

EDIT = (
    "        return self.block_pool.get_usage()\n",
    "        return 1.0 - self.block_pool.get_num_free_blocks() / self.block_pool.num_gpu_blocks\n",
)
