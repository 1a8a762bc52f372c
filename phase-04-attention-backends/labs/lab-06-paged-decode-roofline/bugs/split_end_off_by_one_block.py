"""Split boundaries off by one block: each split stops one block before the next one starts.

Symptom: right with one split; with several, the last block of every split but the last is
never read.
"""

CAUGHT_BY = ["test_split_summaries_match_reference", "test_every_split_count_gives_the_same_answer"]

EDIT = (
    "    end = tl.minimum(start + partition_size, seq_len)\n",
    "    end = tl.minimum(start + partition_size - BLOCK_SIZE, seq_len)  # one block short\n",
)
