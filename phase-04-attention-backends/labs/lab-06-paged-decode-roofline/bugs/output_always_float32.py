"""The output is allocated in float32 whatever q's dtype (the kernel writes the float32
accumulator's type).

Symptom: the numbers are right, the dtype is not: a float16 model receives float32
activations (twice the memory, and the next layer's kernel may reject them).
"""

CAUGHT_BY = ["test_one_split_matches_reference"]

EDIT = (
    "    out = q.new_empty(q.shape)\n",
    "    out = q.new_empty(q.shape, dtype=torch.float32)\n",
)
