"""The platform's block size always 16 for dense layers: the user's block size is thrown away.

``check_and_update_config`` sets 16 only when the user set none; a block size given on the
command line stays (and an MLA model's is forced). Symptom: a run asked for 32-token blocks
reports 16, and blocks of 8, which FlashAttention refuses, are silently turned into blocks it takes.
"""

CAUGHT_BY = ["test_block_sizes"]

EDIT = (
    "    size = DEFAULT_BLOCK_SIZE if block_size is None else block_size\n",
    "    size = DEFAULT_BLOCK_SIZE  # BUG: the user's block size ignored\n",
)
