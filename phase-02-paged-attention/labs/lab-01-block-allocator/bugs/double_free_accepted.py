"""free_blocks() never refuses a double free: it checks that ref_cnt is not negative, which it never is yet.

A request freed twice (an abort racing a finish) drives ref_cnt negative; the block's next owner
then touches it to 0 and it looks free while held, or a shared block reaches 0 while its other
holder still reads it. Symptom: freeing a free block raises nothing and its ref_cnt becomes -1.
"""

CAUGHT_BY = ["test_bad_input_is_a_clear_error_and_changes_nothing"]

EDIT = (
    "            if times_freed[block.block_id] > block.ref_cnt:\n",
    "            if block.ref_cnt < 0:  # checked before the decrement: never true\n",
)
