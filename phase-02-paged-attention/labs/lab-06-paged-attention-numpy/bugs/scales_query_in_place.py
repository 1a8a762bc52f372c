"""The query is scaled in place: q[h] *= 1/sqrt(head_dim) on the caller's own array.

np.asarray(q, dtype=np.float64) returns the very same array when q is already float64, so the
"local" scaling changes the caller's query. Symptom: this call's output is right; the next layer
or step that reuses q sees it shrunk by sqrt(head_dim) (and again on every call). Where the
tests hand q over read-only, numpy refuses the write ("output array is read-only").
"""

CAUGHT_BY = ["test_paged_attention_leaves_its_inputs_alone"]

EDIT = (
    "        scores = k[:, kv_head, :] @ q[h] * scale  # [seq_len]\n",
    "        q[h] *= scale  # modifies the caller's array\n"
    "        scores = k[:, kv_head, :] @ q[h]\n",
)
