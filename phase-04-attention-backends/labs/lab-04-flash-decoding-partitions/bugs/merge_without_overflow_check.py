"""merge_two drops the given overflow check: two summaries whose acc add up past float64's range merge to inf.

Each summary is valid (one key of value 1e308 gives acc = 1e308), and the factors exp(m_side - m) are at
most 1, but the sum of two such accs is 2e308, past float64's 1.8e308. The merge hands back an acc of inf,
a summary that _as_summary itself refuses: the next merge stops with "acc holds inf", far from the cause,
and merge_partials answers inf. Symptom: no ValueError for summaries whose acc or denom add up past
float64's range; a RuntimeWarning about an overflow instead.
"""

CAUGHT_BY = ["test_a_merge_past_float64s_range_is_refused", "test_merge_partials_past_float64s_range_never_answers_inf"]

EDIT = (
    "    _check_merge_fits(denom_a, acc_a, denom_b, acc_b)\n",
    "",
)
