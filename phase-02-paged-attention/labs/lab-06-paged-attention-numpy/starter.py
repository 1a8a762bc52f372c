"""Lab 02-06, your work: one engine step's data path through a paged KV cache, in numpy.

Implement the three functions in order (README "Steps" 1-3), then run
``python -m labkit.cli check 02-06 --impl starter`` (or
``LAB_IMPL=starter pytest -q phase-02-paged-attention/labs/lab-06-paged-attention-numpy``).

Layout: a cache is ``[num_blocks, block_size, num_kv_heads, head_dim]``; a sequence's block table
lists its physical block ids in logical order, and logical token ``t`` lives at
``cache[block_table[t // block_size], t % block_size]``. Flattening the first two axes of the
cache, that position is the single row (the token's *slot*)
``slot(t) = block_table[t // block_size] * block_size + t % block_size``.

The input checks are given in ``_checks.py`` and already called at the top of each function: keep
those calls, so bad input gets a clear message.
"""

from __future__ import annotations

import numpy as np

# Given in _checks.py (read it, do not edit it), already called at the top of each function below:
#   _as_block_table(block_table)   the table as a 1-D int64 array (ValueError otherwise)
#   _check_token_range(...)        the tokens' blocks exist in the table
#   _check_slot_blocks(...)        those blocks' ids are >= 0 and their slots fit in int64
#   _check_write(...)              caches, rows and slots that write_kv can take; the slots as int64
#   _check_attention(...)          shapes, heads and table entries that paged_attention can take
from _checks import _as_block_table, _check_attention, _check_slot_blocks, _check_token_range, _check_write


def build_slot_mapping(block_table, block_size, start, num_tokens):
    """The slot of each logical token ``start, start + 1, ..., start + num_tokens - 1``.

    ``block_table``: a 1-D integer array or list of physical block ids (int32 like vLLM's, or
    int64). Returns a numpy int64 array ``[num_tokens]`` whose entry ``i`` is ``slot(start + i)``
    (the formula above); an empty array when ``num_tokens`` is 0. ``start`` can be anywhere in the
    sequence, mid-block included (a decode step writes one token at ``start = seq_len``). The
    table is only read. The entries those tokens use must be block ids >= 0 whose slots fit in
    int64 (the given ``_check_slot_blocks`` raises a ValueError otherwise); entries past them are
    not looked at.
    """
    block_table = _as_block_table(block_table)
    _check_token_range(block_table, block_size, start, num_tokens)
    _check_slot_blocks(block_table, block_size, start, num_tokens)
    raise NotImplementedError(
        "build_slot_mapping: not implemented yet (README step 1: the slot of each token "
        "t = start .. start + num_tokens - 1, as an int64 array)"
    )


def write_kv(k_cache, v_cache, new_k, new_v, slot_mapping):
    """Store row ``i`` of ``new_k`` and ``new_v`` (``[num_tokens, num_kv_heads, head_dim]``) at slot
    ``slot_mapping[i]`` of ``k_cache`` and ``v_cache``; returns ``None``.

    The write lands in the very arrays the caller passed (the engine keeps them). A negative slot
    (vLLM's ``PAD_SLOT_ID = -1``) is a padding row and writes nothing. Every slot not named in
    ``slot_mapping`` keeps its value; ``new_k``, ``new_v`` and ``slot_mapping`` are only read.
    """
    slot_mapping = _check_write(k_cache, v_cache, new_k, new_v, slot_mapping)
    raise NotImplementedError(
        "write_kv: not implemented yet (README step 2: store new_k[i], new_v[i] at slot slot_mapping[i] "
        "of the caller's caches, in place; negative slots write nothing)"
    )


def paged_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
    """Attention of one decode query ``q [num_heads, head_dim]`` over the first ``seq_len`` tokens of
    a sequence stored in the paged caches through ``block_table``.

    Query head ``h`` attends with KV head ``h // (num_heads // num_kv_heads)`` (grouped-query
    attention); scores are ``q . k / sqrt(head_dim)``. Returns a new float64 array
    ``[num_heads, head_dim]``: dense softmax attention over the sequence's tokens in logical order,
    whatever the dtypes of ``q`` and the caches (float16, float32 or float64); zeros when
    ``seq_len`` is 0. Slots past ``seq_len`` (the rest of the last block, table entries past the
    sequence's end) hold no token of this sequence and must not change the result. Finite for
    scores far past ``exp``'s range (+-1000). Modifies no input.
    """
    q = np.asarray(q, dtype=np.float64)
    block_table = _as_block_table(block_table)
    _check_attention(q, k_cache, v_cache, block_table, seq_len, block_size)
    raise NotImplementedError(
        "paged_attention: not implemented yet (README step 3: gather the seq_len tokens through "
        "block_table, then softmax(K q / sqrt(head_dim)) @ V for each query head)"
    )
