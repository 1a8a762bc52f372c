"""The query is scaled in place: q *= 1/sqrt(d) on the caller's own array.

np.asarray(q, dtype=np.float64) returns the very same array when q is already float64, so the
"local" scaling changes the caller's query. Symptom: this call's output is right; whoever reuses
q next (another head's pass, the next step, or dense_attention as the oracle) sees it shrunk by
sqrt(d). Where the tests hand q over read-only, numpy refuses the write.
"""

CAUGHT_BY = ["test_inputs_are_left_unchanged"]

EDIT = (
    "    scale = 1.0 / np.sqrt(q.shape[0])\n",
    "    q *= 1.0 / np.sqrt(q.shape[0])  # modifies the caller's array\n    scale = 1.0\n",
)
