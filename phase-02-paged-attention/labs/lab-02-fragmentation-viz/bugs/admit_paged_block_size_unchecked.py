"""admit_paged leaves the block size to blocks_needed, which never runs when there is no request.

Symptom: admit_paged([], 8, 0) returns 0 instead of raising a ValueError naming block_size; with a
request, the same block size is refused.
"""

CAUGHT_BY = ["test_each_bad_argument_is_named"]

EDIT = (
    '    block_size = _check_positive("block_size", block_size)  # here, not only in blocks_needed: there may be no '
    'request\n',
    "",
)
