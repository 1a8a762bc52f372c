"""Hopper kernel: the descriptor's shape leaves out the pool's last block.

A descriptor says how far the copy engine may read; a box outside its shape comes back filled with
zeros, with no error. Sized ``num_blocks - 1`` (as if the null block were not part of the pool), the
last block of the pool reads as zeros: keys of score 0 and values of 0. Symptom: wrong only for
sequences whose table holds the pool's last block.
"""

SOURCE = "going-further/hopper_decode.py"

CAUGHT_BY = ["test_one_split_matches_reference"]

EDIT = (
    "    return TensorDescriptor(cache, list(cache.shape), list(cache.stride()), [1, block_size, 1, head_dim])\n",
    "    shape = [cache.shape[0] - 1, *cache.shape[1:]]  # the null block is not a page of any sequence\n"
    "    return TensorDescriptor(cache, shape, list(cache.stride()), [1, block_size, 1, head_dim])\n",
)
