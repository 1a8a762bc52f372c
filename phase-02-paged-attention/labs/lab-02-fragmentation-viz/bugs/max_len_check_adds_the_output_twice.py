"""serve_contiguous checks output_len + output_len against max_len, not prompt_len + output_len.

A slip of the column index. A long prompt with a short answer passes the check, and its
reservation of max_len slots is smaller than what it holds. Symptom: no ValueError for a request
of 12 + 2 tokens with max_len 8.
"""

CAUGHT_BY = ["test_each_bad_argument_is_named"]

EDIT = (
    "    if len(stream) and (stream[:, 1] + stream[:, 2]).max() > max_len:\n",
    "    if len(stream) and (stream[:, 2] + stream[:, 2]).max() > max_len:\n",
)
