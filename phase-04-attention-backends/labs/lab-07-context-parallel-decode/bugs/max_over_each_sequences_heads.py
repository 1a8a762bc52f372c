"""One max per sequence, taken over its query heads too, instead of one per (sequence, head).

Each query head has its own softmax, over its own scores. A head whose scores sit 1000 below
another head's of the same sequence gets weights exp(m - M) that underflow to 0. Symptom: heads
scoring near -1000 next to heads near +1000 come out zeros; the MAX all-reduce carries one number
per sequence.
"""

CAUGHT_BY = ["test_sequences_far_apart_in_one_batch", "test_combine_issues_the_collectives_the_readme_promises"]

EDIT = (
    "    global_m = m.clone(memory_format=torch.contiguous_format)\n",
    "    global_m = m.amax(dim=1, keepdim=True)  # the sequence's max, over its heads\n",
)
