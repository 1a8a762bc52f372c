"""Each split divides its accumulator by its denominator before storing it, as if its summary
were an output.

The reduce then weighs outputs by exp(m_s - M) * denom_s and divides again. Symptom: right with
one split; with several, every split's output is scaled by a different wrong factor.
"""

CAUGHT_BY = ["test_split_summaries_match_reference", "test_every_split_count_gives_the_same_answer"]

EDIT = (
    "HEAD_DIM + dims[None, :], acc, mask=",
    "HEAD_DIM + dims[None, :], acc / denom[:, None], mask=",  # normalized before the merge
)
