"""The layout uses world_size, stripe and block_size as the caller passed them, not the Python ints
the given checks hand back.

numpy mixes an int64 array with a uint64 number by going to float64 (no integer type holds both).
Symptom: for a numpy uint64 world size, stripe or block size, every rank and local position comes
back as float64 (wrong past 2**53: position 2**62 + 1 becomes 2**62), and shard_slot_mapping's
float local blocks cannot index the tables (numpy's IndexError).
"""

CAUGHT_BY = ["test_layout_takes_counts_of_any_integer_type"]

EDITS = [
    (
        '    world_size = _check_count("world_size", world_size)  # a Python int: a numpy uint64 would make float64\n'
        '    stripe = _check_count("stripe", stripe)\n    stripe_index',
        '    _check_count("world_size", world_size)\n    _check_count("stripe", stripe)\n    stripe_index',
    ),
    (
        '    world_size = _check_count("world_size", world_size)\n    stripe = _check_count("stripe", stripe)\n'
        "    _check_round(",
        '    _check_count("world_size", world_size)\n    _check_count("stripe", stripe)\n    _check_round(',
    ),
    (
        '    block_size = _check_count("block_size", block_size)\n',
        '    _check_count("block_size", block_size)\n',
    ),
]
