"""FlashAttention's largest head size refused: ``>=`` where the rule is "up to".

Symptom: head size 256 refused on an A100, and 512 on an H100.
"""

CAUGHT_BY = ["test_backend_problems_empty_when_it_can_run"]

EDIT = (
    "        if head_size % 8 or head_size > largest:\n",
    "        if head_size % 8 or head_size >= largest:  # BUG: the largest is allowed\n",
)
