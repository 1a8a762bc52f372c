"""The paged replay counts one slot more per running request: the token this step samples.

A step writes the KV of the tokens sampled before it; the token it samples has no KV until the
next step (and the last one never has). Symptom: used is higher by the number of running requests
at every step, and can exceed what the blocks hold.
"""

CAUGHT_BY = ["test_serve_paged_hand_stream", "test_serve_paged_matches_brute_force"]

EDIT = (
    "        timeline[\"used\"].append(sum(prompt[r] + sampled[r] for r in tables))\n",
    "        timeline[\"used\"].append(sum(prompt[r] + sampled[r] + 1 for r in tables))  # counts the new token\n",
)
