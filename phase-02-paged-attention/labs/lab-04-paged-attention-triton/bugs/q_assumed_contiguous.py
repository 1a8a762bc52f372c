"""The kernel is handed ``q`` as it came: its offsets ``head * HEAD_DIM + dims`` assume a contiguous q.

Symptom: right for a q of its own, wrong for the q engines pass: a slice of a fused projection
(each head's row holds q, k and v side by side, so the next head starts 3 * head_dim further on)
reads the k and v parts as if they were q, and a q stored transposed reads the wrong elements.
"""

CAUGHT_BY = ["test_q_of_any_strides"]

EDIT = (
    "    q = q.contiguous()\n",
    "    # BUG: q used as it came, its strides never looked at\n",
)
