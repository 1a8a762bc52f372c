"""The last partition not cut at the sequence's last block.

Symptom: a 2,000-token sequence's last partition visits blocks up to 127 although only 125
exist, and a partition past the end visits a whole partition's worth: the kernel would read
block-table entries past the sequence (padding, often block 0) as if they held tokens.
"""

CAUGHT_BY = ["test_warp_blocks_match_a_brute_force_deal"]

EDIT = (
    '        end = min(start + blocks_per_partition, num_seq_blocks)\n',
    "        end = start + blocks_per_partition  # BUG: not cut at the sequence's last block\n",
)
