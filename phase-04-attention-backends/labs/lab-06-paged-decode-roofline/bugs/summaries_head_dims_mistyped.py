"""The check of the summaries lists the head sizes with a typo: 127 where 128 belongs.

Symptom: ``merge_splits`` refuses summaries of head_dim 128, the most common head size, with a
ValueError, although ``paged_decode`` took the same cache.
"""

CAUGHT_BY = ["test_merge_splits_every_head_dim"]

SOURCE = "_host.py"  # the input checks are given: they live in _host.py

EDIT = (
    "    if acc.dim() != 4 or acc.shape[-1] not in (16, 32, 64, 128, 256):\n",
    "    if acc.dim() != 4 or acc.shape[-1] not in (16, 32, 64, 127, 256):  # BUG: a typo\n",
)
