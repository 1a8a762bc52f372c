"""attend_partial gives no weight to a key more than 30 below its partition's max.

exp(-30) = 9e-14 looks negligible beside the top key's weight of 1, so the key is left out of denom
and acc. float64 still carries that share, and it is the whole answer where the top keys' values are
0. Symptom: right on ordinary scores (a few units apart) and on gaps past exp's underflow (~745);
wrong for keys 30 to 745 below the max of their own partition.
"""

CAUGHT_BY = ["test_keys_far_below_the_top_still_count"]

EDIT = (
    "    weights = np.exp(scores - m)\n",
    "    weights = np.where(scores - m > -30, np.exp(scores - m), 0.0)  # \"negligible\": exp(-30) = 9e-14\n",
)
