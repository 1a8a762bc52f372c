"""The -inf of a rank that holds none of a sequence is replaced by 0 before the MAX all-reduce.

The guard against exp(-inf - (-inf)) belongs after the MAX, on the shared reference. Put before it,
a rank that holds nothing claims a score of 0: the shared max is then at least 0, and a sequence
whose scores all sit near -1000 gets weights exp(-1000 - 0) = 0 on every rank. Symptom: with scores
near 0 nothing shows; near -1000, with a rank that holds none of a sequence, zeros.
"""

CAUGHT_BY = ["test_ranks_that_hold_nothing_near_minus_1000"]

EDIT = (
    "    global_m = m.clone(memory_format=torch.contiguous_format)\n",
    "    global_m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))  # no -inf in the collective\n",
)
