"""The block size the user set thrown away for the backend's preferred one.

Symptom: --block-size 32 comes back as 16 on every dense backend.
"""

CAUGHT_BY = ["test_block_sizes", "test_mla_choices"]

EDIT = (
    '    block = _preferred_block_size(chosen) if block_size is None else block_size\n',
    "    block = _preferred_block_size(chosen)  # BUG: the user's block size is dropped\n",
)
