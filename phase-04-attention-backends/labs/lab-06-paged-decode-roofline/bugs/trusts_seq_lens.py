"""The kernels trust seq_lens: no cut to the table's capacity, in the partition kernel nor in the reduce.

On a CPU the given check refuses a length past the table, and every test with valid lengths passes.
On a GPU nothing checks the values (that would cost a synchronization per call), and a length
larger than the table, from a bug anywhere upstream, sends the kernel walking into the next row's
block ids and whatever blocks they name. Symptom: with the host check out of the way, NaN (the
next row points at poison) or another sequence's tokens.
"""

CAUGHT_BY = ["test_never_reads_past_the_block_table"]

EDITS = [
    (
        "    seq_len = tl.minimum(tl.load(seq_lens_ptr + seq), max_blocks * BLOCK_SIZE)\n",
        "    seq_len = tl.load(seq_lens_ptr + seq)  # trusted\n",
    ),
    (
        "    num_splits = tl.minimum(tl.cdiv(seq_len, partition_size), max_splits)\n",
        "    num_splits = tl.cdiv(seq_len, partition_size)  # trusted\n",
    ),
]
