"""Lab 04-04 reference solution: flash-decoding's split-and-merge, in numpy float64.

Attention of one query over a set of keys compresses to a summary ``(m, denom, acc)``:

    m     = max_i s_i                      s_i = q . k_i / sqrt(d)
    denom = sum_i exp(s_i - m)
    acc   = sum_i exp(s_i - m) * v_i       (a vector, NOT divided by denom)

Summaries of disjoint key sets merge exactly (``merge_two``), in any order and any tree
shape, and the output is ``acc / denom`` taken once at the very end. The merge with
``(-inf, 0.0, zeros(dv))``, the summary of no keys at all (``dv`` the values' width), changes nothing: summaries form a
monoid. That is what lets a GPU split one long sequence across all of its SMs.
"""

from __future__ import annotations

import numpy as np
from _merge_checks import (  # given: the input checks, in _merge_checks.py
    _as_query_keys_values,
    _as_summary,
    _check_merge_fits,
    _check_num_partitions,
    _check_same_length,
)

Summary = tuple[float, float, np.ndarray]  # (m, denom, acc)


def attend_partial(q, k, v) -> Summary:
    """The unnormalized summary ``(m, denom, acc)`` of attention of ``q [d]`` over
    ``k [n, d]``, ``v [n, dv]``; zero keys give the merge's identity ``(-inf, 0.0, zeros(dv))``."""
    q, k, v = _as_query_keys_values(q, k, v)
    if k.shape[0] == 0:
        # No scores to take a max of: the summary of nothing, which every merge ignores.
        return _identity(v.shape[1])
    scores = k @ q / np.sqrt(q.shape[0])
    m = float(scores.max())
    # Every exponent is <= 0, so nothing overflows however large the scores are,
    # and the largest term is exactly 1, so denom >= 1.
    weights = np.exp(scores - m)
    return m, float(weights.sum()), weights @ v


def merge_two(a: Summary, b: Summary) -> Summary:
    """The summary of the union of two disjoint key sets, from the summary of each.

    Both sides are rescaled to the shared max: ``exp(m_a - m)`` and ``exp(m_b - m)``
    are at most 1, so the factors cannot overflow, however large the maxima. The sums can, where the
    two sides' ``acc`` (or ``denom``) add up past float64's range: ``_check_merge_fits`` refuses those
    with a ValueError instead of an inf that no summary holds. An empty summary (``denom`` 0) merges as
    nothing whatever its ``m`` holds, and NaN is refused: ``_as_summary`` sees to both. A new
    summary, sharing no array with ``a`` or ``b``.
    """
    m_a, denom_a, acc_a = _as_summary(a, "merge_two: a")
    m_b, denom_b, acc_b = _as_summary(b, "merge_two: b")
    _check_same_length(acc_a, acc_b)
    _check_merge_fits(denom_a, acc_a, denom_b, acc_b)
    m = max(m_a, m_b)
    if m == -np.inf:
        # Both sides summarize no keys. exp(-inf - (-inf)) would be NaN: answer directly.
        return _identity(acc_a.shape[0])
    # An identity side has m = -inf, so its factor is exp(-inf) = 0: it adds nothing.
    scale_a = np.exp(m_a - m)
    scale_b = np.exp(m_b - m)
    return m, denom_a * scale_a + denom_b * scale_b, acc_a * scale_a + acc_b * scale_b


def merge_partials(partials) -> np.ndarray:
    """Attention output ``[dv]`` from the summaries of disjoint key sets: merge them all,
    then divide by the denominator once.

    No keys at all (all identities) give zeros, never NaN. An empty list has no ``dv``
    to read; it gives a 0-d zero, which numpy broadcasts to any shape. Every summary is checked,
    the first one here and the others by ``merge_two``.
    """
    try:
        partials = list(partials)
    except TypeError:
        raise ValueError(f"merge_partials: partials must be a list of summaries, got {partials!r}") from None
    if not partials:
        return np.zeros(())
    # A left-to-right fold. Because the merge is associative and commutative, any order and
    # any tree of merges gives the same summary (up to rounding): pick what the hardware likes.
    m, denom, acc = _as_summary(partials[0], "merge_partials: partials[0]")
    for summary in partials[1:]:
        m, denom, acc = merge_two((m, denom, acc), summary)
    if denom == 0.0:
        return np.zeros_like(acc)
    return acc / denom


def partitioned_attention(q, k, v, num_partitions: int) -> np.ndarray:
    """Attention of ``q [d]`` over ``k [n, d]``, ``v [n, dv]`` the flash-decoding way: split the
    keys into ``num_partitions`` contiguous chunks (``np.array_split``), summarize each on its
    own (on a GPU: in parallel), merge the summaries. Any count is valid: only ``n`` chunks can be
    non-empty, and empty chunks are skipped; zero keys give ``zeros(dv)``."""
    q, k, v = _as_query_keys_values(q, k, v)
    _check_num_partitions(num_partitions)
    # At most one chunk per key is non-empty: splitting into more would only list empty chunks (for a
    # num_partitions of 10**12, more than memory holds). np.array_split cuts the same non-empty chunks.
    num_chunks = min(num_partitions, max(k.shape[0], 1))
    chunks = zip(np.array_split(k, num_chunks), np.array_split(v, num_chunks), strict=True)
    partials = [attend_partial(q, k_chunk, v_chunk) for k_chunk, v_chunk in chunks if len(k_chunk)]
    if not partials:  # zero keys: attention over nothing is zeros
        return np.zeros(v.shape[1])
    return merge_partials(partials)


# ----------------------------------------------------------------------------------------
# The identity (given in the starter too; the input checks are in _merge_checks.py).


def _identity(d: int) -> Summary:
    """The summary of zero keys: merging it with anything changes nothing."""
    return -np.inf, 0.0, np.zeros(d)
