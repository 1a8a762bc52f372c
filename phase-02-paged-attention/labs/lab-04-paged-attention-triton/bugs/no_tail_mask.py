"""No tail mask: every slot of the last block counts as a token of the sequence.

The empty slots of a partly filled last block (poisoned in the tests, stale keys in a real
cache) are loaded and take part in the softmax. With the tests' poison the output is far off;
with real garbage it is "almost right", which is why the gate is a max |delta| against a
reference on lengths that do not fill their last block.
"""

CAUGHT_BY = ["test_triton_matches_dense", "test_source_example_130_tokens_in_9_scattered_blocks"]

EDIT = (
    '        valid = logical * BLOCK_SIZE + slots < seq_len  # the tail block is partly empty\n',
    '        valid = slots < BLOCK_SIZE  # BUG: every slot of the block counts, the empty tail too\n',
)
