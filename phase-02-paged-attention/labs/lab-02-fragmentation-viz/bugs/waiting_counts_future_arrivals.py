"""The contiguous replay counts as waiting every request still in the queue, arrived or not.

A request that arrives at step 30 is not waiting at step 3; counting it makes the memory look like
the bottleneck from the first step. Symptom: waiting too high in the steps before the last
arrival.
"""

CAUGHT_BY = ["test_serve_contiguous_hand_stream", "test_serve_contiguous_matches_brute_force"]

EDIT = (
    "        timeline[\"waiting\"].append(sum(arrival[r] <= t for r in waiting))\n"
    "        for r in running:\n",
    "        timeline[\"waiting\"].append(len(waiting))  # arrived or not\n"
    "        for r in running:\n",
)
