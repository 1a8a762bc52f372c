"""Lab 04-04 starter: flash-decoding's split-and-merge, in numpy float64.

Your work: the four functions below, in order (README steps 1 to 4). Run the tests with

    LAB_IMPL=starter pytest -q phase-04-attention-backends/labs/lab-04-flash-decoding-partitions

Attention of one query over a set of keys compresses to a summary ``(m, denom, acc)``:

    m     = max_i s_i                      s_i = q . k_i / sqrt(d)
    denom = sum_i exp(s_i - m)
    acc   = sum_i exp(s_i - m) * v_i       (a vector, NOT divided by denom)

The summary of zero keys is ``(-inf, 0.0, zeros(d))``. The input checks at the bottom are
written for you: call them first, so bad input gets a clear message.
"""

from __future__ import annotations

import numpy as np

Summary = tuple[float, float, np.ndarray]  # (m, denom, acc)


def attend_partial(q, k, v) -> Summary:
    """The unnormalized summary ``(m, denom, acc)`` of attention of ``q [d]`` over
    ``k, v [n, d]``; zero keys give the merge's identity ``(-inf, 0.0, zeros(d))``."""
    # q, k, v = _as_query_keys_values(q, k, v)
    raise NotImplementedError(
        "attend_partial: not implemented yet (README step 1: return (m, denom, acc) of the scores "
        "q . k / sqrt(d), without dividing acc by denom; zero keys give (-inf, 0.0, zeros(d)))"
    )


def merge_two(a: Summary, b: Summary) -> Summary:
    """The summary of the union of two disjoint key sets, from the summary of each."""
    # m_a, denom_a, acc_a = _as_summary(a, "merge_two: a")
    # m_b, denom_b, acc_b = _as_summary(b, "merge_two: b")
    raise NotImplementedError(
        "merge_two: not implemented yet (README step 2: rescale both sides to the shared max "
        "and add; two identities must give the identity, not NaN)"
    )


def merge_partials(partials) -> np.ndarray:
    """Attention output ``[d]`` from the summaries of disjoint key sets: merge them all,
    then divide by the denominator once. No keys at all give zeros, never NaN."""
    raise NotImplementedError(
        "merge_partials: not implemented yet (README step 3: fold the summaries with merge_two, "
        "then divide acc by denom once; zeros when denom is 0)"
    )


def partitioned_attention(q, k, v, num_partitions: int) -> np.ndarray:
    """Attention of ``q [d]`` over ``k, v [n, d]`` split into ``num_partitions`` chunks
    (``np.array_split``), each summarized on its own, then merged. Empty chunks are skipped."""
    # q, k, v = _as_query_keys_values(q, k, v)
    # _check_num_partitions(num_partitions)
    raise NotImplementedError(
        "partitioned_attention: not implemented yet (README step 4: np.array_split k and v, "
        "attend_partial on each non-empty chunk, merge_partials; zero keys give zeros(d))"
    )


# ----------------------------------------------------------------------------------------
# Input checks, written for you.


def _as_query_keys_values(q, k, v) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``q [d]``, ``k [n, d]``, ``v [n, dv]`` as float64 arrays, or a ValueError that says what is wrong."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    if q.ndim != 1 or q.shape[0] == 0:
        raise ValueError(f"q must have shape [d] with d >= 1, got {q.shape}")
    if k.ndim != 2 or k.shape[1] != q.shape[0]:
        raise ValueError(f"k must have shape [n, d] = [n, {q.shape[0]}], got {k.shape}")
    if v.ndim != 2 or v.shape[0] != k.shape[0]:
        raise ValueError(f"v must have shape [n, dv] with n = {k.shape[0]} (one row per key), got {v.shape}")
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not np.isfinite(x).all():
            raise ValueError(f"{name} holds NaN or inf")
    return q, k, v


def _as_summary(summary, what: str) -> Summary:
    """``(m, denom, acc)`` as ``(float, float, float64 [d])``, or a ValueError naming ``what``."""
    try:
        m, denom, acc = summary
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a summary (m, denom, acc), got {summary!r}") from None
    acc = np.asarray(acc, dtype=np.float64)
    if acc.ndim != 1:
        raise ValueError(f"{what}: acc must have shape [d], got {acc.shape}")
    return float(m), float(denom), acc


def _check_num_partitions(num_partitions) -> None:
    if isinstance(num_partitions, bool) or not isinstance(num_partitions, int | np.integer) or num_partitions < 1:
        raise ValueError(f"num_partitions must be an integer >= 1, got {num_partitions!r}")
