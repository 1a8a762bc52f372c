"""The paged count treats every block of the pool as free, block 0 included.

Lab 02-01's pool keeps block 0 as the null block and never hands it out. Symptom: 128 requests
of 32 tokens in 256 blocks of 16 instead of 127.
"""

CAUGHT_BY = ["test_admit_paged_counts_blocks_of_the_pool"]

EDIT = (
    '    pool = BlockPool(_check_positive("num_blocks", num_blocks))\n',
    '    pool = BlockPool(_check_positive("num_blocks", num_blocks) + 1)  # as if block 0 were free\n',
)
