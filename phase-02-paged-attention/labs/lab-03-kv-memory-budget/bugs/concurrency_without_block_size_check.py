"""max_concurrency does not check block_size.

Symptom: max_concurrency(100, 0, 100) raises ZeroDivisionError instead of a ValueError naming
block_size.
"""

CAUGHT_BY = ["test_every_bad_input_is_refused_by_name"]

EDIT = (
    '    A request takes whole blocks: ``ceil(max_model_len / block_size)`` of them."""\n'
    "    block_size = _check_block_size(block_size)\n",
    '    A request takes whole blocks: ``ceil(max_model_len / block_size)`` of them."""\n',
)
