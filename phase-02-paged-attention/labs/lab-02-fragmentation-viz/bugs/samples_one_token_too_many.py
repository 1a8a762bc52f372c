"""The paged replay finishes a request one sample late: after output_len + 1 samples.

output_len counts the tokens sampled, the first one included (it comes from the prefill step).
One step too many keeps every request's blocks a step longer and writes a KV slot for a token
that is never produced. Symptom: finished_at one step late for every request.
"""

CAUGHT_BY = [
    "test_serve_paged_hand_stream",
    "test_serve_paged_preempts_the_newest_request",
    "test_serve_paged_matches_brute_force",
]

EDIT = (
    "            if sampled[r] == output[r]:\n"
    "                timeline[\"finished_at\"][r] = t\n"
    "                pool.free_blocks(reversed(tables.pop(r)))\n",
    "            if sampled[r] == output[r] + 1:  # one sample too many\n"
    "                timeline[\"finished_at\"][r] = t\n"
    "                pool.free_blocks(reversed(tables.pop(r)))\n",
)
