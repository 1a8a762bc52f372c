"""The partition ignores CUDA's limit on a grid dimension: ``num_splits`` may ask for more than
65,535 splits.

Symptom: on a table of a million tokens cut a million ways, the grid's third dimension (the splits)
passes 65,535 and the launch fails on a GPU ("invalid argument"); the partition should grow instead.
"""

CAUGHT_BY = ["test_split_count_stays_within_a_cuda_grid"]

SOURCE = "_host.py"  # the partition arithmetic is given: it lives in _host.py

EDIT = (
    "    tokens = max(tokens, math.ceil(capacity / MAX_GRID_SPLITS))\n",
    "    # BUG: no cap: the split count may pass CUDA's grid limit\n",
)
