"""serve_contiguous refuses a request whose prompt_len + output_len equals max_len.

A reservation of max_len slots holds a request of max_len tokens (it even has a slot to spare: the
last token's KV is never written). Refusing at equality (>= instead of >) turns away the longest
requests the server promised to accept. Symptom: a ValueError naming stream for a request that fits.
"""

CAUGHT_BY = ["test_bad_input_names_the_argument"]

EDIT = (
    "    if len(stream) and (stream[:, 1] + stream[:, 2]).max() > max_len:\n",
    "    if len(stream) and (stream[:, 1] + stream[:, 2]).max() >= max_len:\n",
)
