"""A row of the block table is taken to hold max_model_len // block_size blocks.

The table has ceil(max_model_len / block_size) columns: one more when max_model_len is not a multiple
of the block size. Every row past the first then reads the previous row's blocks: slots and keys land in
another request's blocks.
"""

CAUGHT_BY = ["test_prepare_inputs_matches_brute_force", "test_max_model_len_not_a_multiple_of_the_block_size"]

EDIT = (
    "    block_numbers = table.ravel()[req_indices * table.shape[1] + positions // block_size]\n",
    "    block_numbers = table.ravel()[req_indices * (batch.max_model_len // block_size) + positions // block_size]\n",
)
