"""reduce_shared_memory_bytes and largest_partition_size skip the checks of their own arguments.

A negative max_seq_len gives a budget, 100 threads (not whole warps) too, and largest_partition_size
with block_size 0 fails inside shared_memory_budget, naming partition_size. Symptom: answers, or a
ValueError naming another argument, instead of one naming the argument at fault.
"""

CAUGHT_BY = ["test_budget_rejects_bad_input"]

EDITS = [
    ("    if max_seq_len < 0:\n        raise ValueError(f\"max_seq_len={max_seq_len} is negative\")\n", ""),
    ("    num_threads = _check_positive(\"num_threads\", num_threads)\n    if num_threads % WARP_SIZE:\n"
     "        raise ValueError(f\"num_threads={num_threads} must be a multiple of the warp size {WARP_SIZE}\")\n"
     "    max_num_partitions", "    max_num_partitions"),
    ("    block_size = _check_positive(\"block_size\", block_size)\n    smallest =", "    smallest ="),
]
