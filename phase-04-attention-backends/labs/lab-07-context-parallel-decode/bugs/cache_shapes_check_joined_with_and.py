"""rank_summaries' check of the caches joins "4 axes" and "K and V alike" with ``and``: caches that
fail only one of them pass.

A v_cache of another shape than k_cache then reaches the gather, and caches of 3 axes fail to
unpack. Symptom: rank_summaries with a v_cache cut to fewer blocks answers, or raises a numpy
error, instead of a ValueError naming k_cache and v_cache.
"""

CAUGHT_BY = ["test_rank_summaries_reject_bad_input"]

SOURCE = "_checks.py"

EDIT = (
    "    if k_cache.ndim != 4 or k_cache.shape != v_cache.shape:\n",
    "    if k_cache.ndim != 4 and k_cache.shape != v_cache.shape:\n",
)
