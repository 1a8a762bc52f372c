"""free_blocks drops every reference first, then appends each listed block whose count is 0.

vLLM's own free_blocks has this shape (its callers never list a block twice). Right for distinct
blocks; but a block held twice and listed twice in one call is appended at both of its listings,
and the second append refuses it, after the counts and the queue have changed. Symptom: ValueError
"already in the free queue" for a valid free, and a pool left half freed.
"""

CAUGHT_BY = ["test_a_block_listed_twice_counts_twice"]

EDIT = (
    "            block.ref_cnt -= 1\n"
    "            if block.ref_cnt == 0:\n",
    "            block.ref_cnt -= 1\n"
    "        for block in blocks:  # a second pass: a block listed twice is appended twice\n"
    "            if block.ref_cnt == 0:\n",
)
