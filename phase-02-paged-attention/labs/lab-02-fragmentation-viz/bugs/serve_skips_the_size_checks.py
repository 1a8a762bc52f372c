"""serve_contiguous and serve_paged do not check num_slots, max_len, num_blocks and block_size.

A float count of slots or blocks goes into the replay: capacities become floats, or lab 02-01's
pool refuses the size in its own words. Symptom: no ValueError naming num_slots (or a ValueError
naming num_gpu_blocks, an argument the caller never passed).
"""

CAUGHT_BY = ["test_each_bad_argument_is_named"]

EDITS = [
    ("    stream = _check_stream(stream)\n"
     "    num_slots, max_len = _check_positive(\"num_slots\", num_slots), _check_positive(\"max_len\", max_len)\n",
     "    stream = _check_stream(stream)\n"),
    ("    num_blocks, block_size = _check_positive(\"num_blocks\", num_blocks), _check_positive(\"block_size\", "
     "block_size)\n", ""),
]
