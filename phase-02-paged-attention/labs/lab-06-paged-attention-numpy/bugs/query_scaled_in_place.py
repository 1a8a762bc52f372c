"""paged_attention scales the query once, in place, after making it writeable.

``q *= 1 / sqrt(head_dim)`` saves a multiply per head, but the tests hand ``q`` over read-only, so
numpy refuses the write; ``q.flags.writeable = True`` silences it. ``np.asarray`` of a float64
query is the caller's own array, and numpy lets an array that owns its memory be made writeable
again: the caller's query comes back scaled. Called again with the same query (the next layer,
the next step, a test that compares two layouts), it is scaled twice. Symptom: the query differs
after the call; a second call with it gives softer attention.
"""

CAUGHT_BY = ["test_paged_attention_leaves_its_inputs_alone", "test_write_and_attend_on_every_cache_layout"]

EDITS = [
    ("    q = np.asarray(q, dtype=np.float64)\n",
     "    q = np.asarray(q, dtype=np.float64)\n"
     "    q.flags.writeable = True  # \"assignment destination is read-only\", silenced\n"),
    ("    scale = 1.0 / np.sqrt(head_dim)\n", "    q *= 1.0 / np.sqrt(head_dim)  # scaled once, in place\n"),
    ("        scores = k[:, kv_head, :] @ q[h] * scale  # [seq_len]\n",
     "        scores = k[:, kv_head, :] @ q[h]  # [seq_len]\n"),
]
