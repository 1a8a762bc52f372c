"""``total < limit`` instead of ``total <= limit``.

Symptom: a block that needs exactly the limit is refused; the limit is a maximum the
hardware grants, not a bound to stay under.
"""

CAUGHT_BY = ["test_smem_fits_is_inclusive"]

EDIT = (
    '    return budget.total_bytes <= limit_bytes\n',
    '    return budget.total_bytes < limit_bytes  # BUG: the limit itself fits\n',
)
