"""BlockPool refuses a pool of one block, as if it needed a block besides the null block.

The size check reads num_gpu_blocks < 2 where the contract is "a positive int". A pool of 1 holds
the null block alone and hands nothing out, but it is a pool (an engine whose memory holds one
block, a test of an empty queue). Symptom: BlockPool(1) raises ValueError.
"""

CAUGHT_BY = ["test_null_block_is_reserved"]

EDIT = (
    "        if not isinstance(num_gpu_blocks, int) or num_gpu_blocks < 1:\n",
    "        if not isinstance(num_gpu_blocks, int) or num_gpu_blocks < 2:  # block 0 plus one to hand out\n",
)
