"""One shared max for the whole batch, m.max(), instead of one per (sequence, head).

Any common reference keeps the algebra exact, so on batches whose scores sit at one level nothing
shows. But exp(m - M) of a sequence 1000 below the batch's top underflows to 0 on every rank: its
sums vanish and its output comes out zeros. Symptom: a batch with sequences near +1000, 0 and -1000
gets zeros for all but the top one; the MAX all-reduce carries one number.
"""

CAUGHT_BY = ["test_sequences_far_apart_in_one_batch", "test_combine_issues_the_collectives_the_readme_promises"]

EDIT = (
    "    global_m = m.clone(memory_format=torch.contiguous_format)\n",
    "    global_m = m.max().clone()  # one reference for the whole batch\n",
)
