"""Lab 04-04 starter: flash-decoding's split-and-merge, in numpy float64.

Your work: the four functions below, in order (README steps 1 to 4). Run
``labs check 04-04 --impl starter`` or
``LAB_IMPL=starter pytest -q phase-04-attention-backends/labs/lab-04-flash-decoding-partitions``.

Attention of one query over a set of keys compresses to a summary ``(m, denom, acc)``:

    m     = max_i s_i                      s_i = q . k_i / sqrt(d)
    denom = sum_i exp(s_i - m)
    acc   = sum_i exp(s_i - m) * v_i       (a vector, NOT divided by denom)

The summary of zero keys is ``(-inf, 0.0, zeros(dv))``, ``dv`` the values' width. Given: the
identity ``_identity`` at the bottom, and the input checks, imported from ``_merge_checks.py``
(``_as_query_keys_values``, ``_as_summary``, ``_check_same_length``, ``_check_merge_fits``,
``_check_num_partitions``). The checks are already called at the top of each function: keep those
calls, so bad input gets a clear message.
"""

from __future__ import annotations

import numpy as np
from _merge_checks import (  # noqa: F401  (given: the input checks, in _merge_checks.py; keep their calls)
    _as_query_keys_values,
    _as_summary,
    _check_merge_fits,
    _check_num_partitions,
    _check_same_length,
)

Summary = tuple[float, float, np.ndarray]  # (m, denom, acc)


def attend_partial(q, k, v) -> Summary:
    """The summary ``(m, denom, acc)`` of the attention of ``q [d]`` over keys ``k [n, d]`` and values
    ``v [n, dv]``, as defined above: ``m`` and ``denom`` numbers, ``acc`` a float64 vector ``[dv]``
    that is not divided by ``denom``.

    Zero keys give the merge's identity ``(-inf, 0.0, zeros(dv))``. Finite for scores far outside
    ``exp``'s range (+-1000). Modifies no input.
    """
    q, k, v = _as_query_keys_values(q, k, v)
    raise NotImplementedError(
        "attend_partial: not implemented yet (README step 1: return (m, denom, acc) of the scores "
        "q . k / sqrt(d), without dividing acc by denom; zero keys give (-inf, 0.0, zeros(dv)), dv the values' width)"
    )


def merge_two(a: Summary, b: Summary) -> Summary:
    """The summary of the union of two disjoint key sets of one query, from the summary of each.

    Equal (to rounding) to ``attend_partial`` over the union; the same for ``(a, b)`` and ``(b, a)``.
    Merging with the identity changes nothing, and two identities give the identity, never NaN.
    Finite however large the maxima; two summaries whose ``acc`` (or ``denom``) add up past float64's
    range are a ValueError from the given ``_check_merge_fits``, never an inf. An empty summary
    (``denom`` 0: no key) merges as nothing, whatever its ``m`` holds (``-inf``, or ``+inf`` as
    FlashAttention-2 reports an empty partial): the given ``_as_summary`` hands it over as the
    identity, and refuses a summary holding NaN with a ValueError. Returns a new summary: ``a`` and
    ``b`` are not modified, and the result shares no array with them.
    """
    m_a, denom_a, acc_a = _as_summary(a, "merge_two: a")
    m_b, denom_b, acc_b = _as_summary(b, "merge_two: b")
    _check_same_length(acc_a, acc_b)
    _check_merge_fits(denom_a, acc_a, denom_b, acc_b)
    raise NotImplementedError(
        "merge_two: not implemented yet (README step 2: rescale both sides to the shared max "
        "and add; two identities must give the identity, not NaN)"
    )


def merge_partials(partials) -> np.ndarray:
    """Attention output, a float64 array ``[dv]``, from the summaries of disjoint key sets of one
    query (in any order): the output over all their keys together.

    No key at all (only identities) gives zeros, never NaN; an empty list has no ``dv`` to read and
    gives a 0-d zero (``np.zeros(())``), which numpy broadcasts to any shape. Every summary goes
    through ``_as_summary``, the first one too (``merge_two`` checks those it is given): an empty one
    counts as nothing, one holding NaN is a ValueError. Modifies no input.
    """
    raise NotImplementedError(
        "merge_partials: not implemented yet (README step 3: merge all the summaries with merge_two, "
        "then divide acc by denom once; zeros when denom is 0)"
    )


def partitioned_attention(q, k, v, num_partitions: int) -> np.ndarray:
    """Attention of ``q [d]`` over ``k [n, d]``, ``v [n, dv]`` the flash-decoding way: the keys cut
    into ``num_partitions`` contiguous chunks as ``np.array_split`` cuts them, ``attend_partial``
    called once on each non-empty chunk, the summaries merged.

    Returns a float64 array ``[dv]`` equal to dense attention (to rounding) for any partition count,
    more partitions than keys included (any count: only ``n`` chunks can be non-empty, so cut no
    more); ``zeros(dv)`` when ``n`` is 0. Modifies no input.
    """
    q, k, v = _as_query_keys_values(q, k, v)
    _check_num_partitions(num_partitions)
    raise NotImplementedError(
        "partitioned_attention: not implemented yet (README step 4: np.array_split k and v into at most n chunks, "
        "attend_partial on each non-empty chunk, merge_partials; zero keys give zeros(dv), dv the values' width)"
    )


# ----------------------------------------------------------------------------------------
# Given: the identity (the input checks are in _merge_checks.py).


def _identity(d: int) -> Summary:
    """The summary of zero keys: merging it with anything changes nothing."""
    return -np.inf, 0.0, np.zeros(d)
