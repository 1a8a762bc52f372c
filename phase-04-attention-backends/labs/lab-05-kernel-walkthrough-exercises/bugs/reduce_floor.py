"""The reduce kernel's partition count taken as ``max_seq_len // partition_size``.

Symptom: a 32,769-token sequence has 65 partitions, not 64: the last one's max logit
and exp sum would be written past the shared buffer.
"""

from labkit.bugs import solution_with

CAUGHT_BY = ["test_reduce_kernel_budget"]


def reduce_shared_memory_bytes(max_seq_len, partition_size, num_threads=128):
    return 2 * (max_seq_len // partition_size) * 4 + 2 * (num_threads // 32) * 4


globals().update(solution_with(__file__, reduce_shared_memory_bytes=reduce_shared_memory_bytes))
