"""Kernel: the correction factor is ``exp(m_new - m)`` instead of ``exp(m - m_new)``.

The history should shrink when a row's max rises; inverted, it grows. On the first key tile
``m`` is -inf and the factor is exp(+inf) = inf: 0 * inf = NaN in every row's denominator.
"""

CAUGHT_BY = ["test_kernel_one_prompt_from_scratch", "test_kernel_ragged_batch"]

EDIT = (
    "        alpha = tl.exp(m - m_new)  # rescales each row's history to its new max\n",
    "        alpha = tl.exp(m_new - m)  # BUG: inverted\n",
)
