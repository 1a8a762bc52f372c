"""``total < limit`` instead of ``total <= limit``.

Symptom: a block that needs exactly the limit is refused; the limit is a maximum
the hardware grants, not a bound to stay under.
"""

from labkit.bugs import solution_with

CAUGHT_BY = ["test_smem_fits_is_inclusive"]


def smem_fits(budget, limit_bytes=49152):
    return budget.total_bytes < limit_bytes


globals().update(solution_with(__file__, smem_fits=smem_fits))
