"""touch takes every free block out of the queue first, then counts the holders, in a second pass.

Right for a list of distinct blocks; but a block listed twice (touch([b, b]): two references in
one call) is removed from the queue at its first listing, and at its second ``remove`` finds it
gone and raises, after the first removal has happened. Symptom: ValueError "not in the free queue"
for a valid touch, and a block out of the queue with ref_cnt 0.
"""

CAUGHT_BY = ["test_a_block_listed_twice_counts_twice"]

EDIT = (
    "            if block.ref_cnt == 0:\n"
    "                self.free_block_queue.remove(block)\n"
    "            block.ref_cnt += 1\n",
    "            if block.ref_cnt == 0:\n"
    "                self.free_block_queue.remove(block)\n"
    "        for block in blocks:  # a second pass: a block listed twice was removed at its first listing\n"
    "            block.ref_cnt += 1\n",
)
