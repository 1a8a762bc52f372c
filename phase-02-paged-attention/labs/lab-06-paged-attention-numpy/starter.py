"""Lab 02-06, your work: one decode step's data path through a paged KV cache.

Implement the three functions in order (README "What to implement", steps 1-3),
then run ``LAB_IMPL=starter pytest -q phase-02-paged-attention/labs/lab-06-paged-attention-numpy``.

Layout: a cache is ``[num_blocks, block_size, num_kv_heads, head_dim]`` and
logical token ``t`` of a sequence lives at
``cache[block_table[t // block_size], t % block_size]``; flattening the first two
axes, that is row ``slot(t) = block_table[t // block_size] * block_size + t % block_size``.
"""

from __future__ import annotations

import numpy as np  # noqa: F401  (you will need it)


def build_slot_mapping(block_table, block_size, start, num_tokens):
    """The flat cache row of each of the logical tokens ``start .. start + num_tokens - 1``.

    ``block_table`` is any 1-D integer array (or list) of physical block ids.
    Returns an int64 array ``[num_tokens]``.

    Recipe: ``t = np.arange(start, start + num_tokens)``, then the slot formula
    above, vectorized over ``t`` (index ``np.asarray(block_table)`` with ``t // block_size``).
    """
    raise NotImplementedError(
        "build_slot_mapping: not implemented yet (README step 1: slot(t) = "
        "block_table[t // block_size] * block_size + t % block_size for t in start .. start + num_tokens - 1)"
    )


def write_kv(k_cache, v_cache, new_k, new_v, slot_mapping):
    """Scatter ``new_k``/``new_v`` ``[num_tokens, num_kv_heads, head_dim]`` into the caches, in place.

    Row ``i`` goes to flat slot ``slot_mapping[i]``. Return nothing: the test
    keeps the cache arrays it passed and looks inside them afterwards.

    Recipe: split each slot into ``(slot // block_size, slot % block_size)`` and
    assign with fancy indexing, ``k_cache[blocks, offsets] = new_k`` (same for v).
    """
    raise NotImplementedError(
        "write_kv: not implemented yet (README step 2: k_cache[slot // block_size, slot % block_size] = new_k, "
        "same for v, in place)"
    )


def paged_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    """Attention of one query ``[num_heads, head_dim]`` over the first ``seq_len`` tokens of a paged cache.

    Query head ``h`` reads KV head ``h // (num_heads // num_kv_heads)``. Scores
    are ``q . k / sqrt(head_dim)``. Returns float64 ``[num_heads, head_dim]``;
    zeros when ``seq_len`` is 0.

    Recipe: gather exactly ``seq_len`` rows of K and V through the block table,
    then per query head: scores, subtract their max, exp, normalize, weight V.
    """
    raise NotImplementedError(
        "paged_attention: not implemented yet (README step 3: gather seq_len rows through block_table, "
        "then per head softmax(K q / sqrt(head_dim)) @ V)"
    )
