"""touch walks its argument twice, so an iterator of blocks is touched not at all.

The null-block check runs through ``blocks`` first; when the caller passes a generator or
``reversed(table)``, the check uses it up and the loop that counts the holders sees nothing.
Symptom: after touch(iterator), the blocks are still in the free queue with ref_cnt 0, and the
next allocation hands out a block that a request is reading.
"""

CAUGHT_BY = ["test_touch_takes_any_iterable"]

EDIT = (
    "        blocks = list(blocks)\n"
    "        if any(block.is_null for block in blocks):\n",
    "        if any(block.is_null for block in blocks):  # blocks may be an iterator: this uses it up\n",
)
