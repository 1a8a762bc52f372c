"""warp_blocks checks the ranges of seq_len, warp and the partition but not that they are integers.

``seq_len=100.5`` passes ``seq_len >= 0``: its last block is ``ceil(100.5 / 16) = 7`` and
``warp_tokens`` lists a token 100 that no sequence of whole tokens has; a warp of 1.5 visits blocks
1 and 5, a partition of 0.5 starts at block 1. Symptom: answers for fractional arguments instead of
a ValueError naming them.
"""

CAUGHT_BY = ["test_warp_blocks_reject_bad_input"]

EDIT = (
    "    for name, value in ((\"seq_len\", seq_len), (\"warp\", warp), (\"partition_size\", partition_size),\n"
    "                        (\"partition\", partition)):\n"
    "        _check_integer(name, value)  # a fractional token or warp count would give fractional blocks\n",
    "",
)
