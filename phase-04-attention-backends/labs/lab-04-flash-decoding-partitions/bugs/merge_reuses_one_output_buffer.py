"""merge_two writes every merged acc into one output buffer of its own and returns that buffer.

``np.add(..., out=_OUT)`` saves an allocation per merge. Each result is right when it is returned,
but it is the same array every time: the next merge overwrites the summary the caller still holds
(a shared prefix merged into several requests, a tree of merges that keeps its left half while it
merges the right). Symptom: a summary changes after a later call; hierarchical merges come out
wrong.
"""

CAUGHT_BY = ["test_merge_two_leaves_its_inputs_alone", "test_merge_is_hierarchical"]

EDITS = [
    ("def merge_two(a: Summary, b: Summary) -> Summary:\n",
     "_OUT = {}  # one output buffer per length, reused by every merge\n\n\n"
     "def merge_two(a: Summary, b: Summary) -> Summary:\n"),
    ("    return m, denom_a * scale_a + denom_b * scale_b, acc_a * scale_a + acc_b * scale_b\n",
     "    out = _OUT.setdefault(acc_a.shape[0], np.empty(acc_a.shape[0]))\n"
     "    np.add(acc_a * scale_a, acc_b * scale_b, out=out)\n"
     "    return m, denom_a * scale_a + denom_b * scale_b, out\n"),
]
