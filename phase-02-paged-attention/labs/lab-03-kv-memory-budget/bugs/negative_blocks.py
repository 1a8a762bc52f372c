"""A negative budget gives a negative block count.

Floor division of a negative number rounds away from zero: -1 GiB // 2 MiB = -512. Symptom: a
pool of -512 blocks instead of a clear "no memory for the cache".
"""

CAUGHT_BY = ["test_num_gpu_blocks_is_never_negative"]

EDIT = (
    '    return max(available_memory // page_size_bytes(config, block_size, cache_dtype) // num_layers, 0)\n',
    '    return available_memory // page_size_bytes(config, block_size, cache_dtype) // num_layers\n',
)
