"""The kernel writes its output into q's memory (``out = q`` to save an allocation).

Symptom: the returned values are right, because each program reads its query row before it
stores the output row; but the caller's q now holds the attention output, and whatever
uses q next (the next layer's check, a second call) is wrong.
"""

CAUGHT_BY = ["test_inputs_are_left_unchanged"]

EDIT = (
    '    out = torch.empty_like(q)\n',
    "    out = q  # BUG: q's buffer reused for the output\n",
)
