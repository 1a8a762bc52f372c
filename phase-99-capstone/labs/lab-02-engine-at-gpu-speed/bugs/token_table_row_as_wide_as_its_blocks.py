"""A row of the token table is taken to be as wide as the row's block table holds tokens.

token_ids has max_model_len columns, the block table ceil(max_model_len / block_size) blocks. The two
widths agree only when max_model_len is a multiple of the block size: otherwise every row past the
first reads its tokens from the wrong place.
"""

CAUGHT_BY = ["test_prepare_inputs_matches_brute_force", "test_max_model_len_not_a_multiple_of_the_block_size"]

EDIT = (
    "    token_indices = req_indices * batch.max_model_len + positions\n",
    "    token_indices = req_indices * (batch.block_table.np.shape[1] * block_size) + positions\n",
)
