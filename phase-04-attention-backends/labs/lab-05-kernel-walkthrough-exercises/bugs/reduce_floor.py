"""The reduce kernel's partition count taken as ``max_seq_len // partition_size``.

Symptom: a 32,769-token sequence has 65 partitions, not 64: the last one's max logit and
exp sum would be written past the shared buffer.
"""

CAUGHT_BY = ["test_reduce_kernel_budget"]

EDIT = (
    '    max_num_partitions = -(-max_seq_len // partition_size)\n',
    '    max_num_partitions = max_seq_len // partition_size  # BUG: floor\n',
)
