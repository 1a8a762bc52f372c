"""Lab 04-03, your work: causal prefill over a paged KV cache, in numpy and in Triton.

A prefill step computes attention for a **chunk** of ``M`` new tokens of one sequence at once.
The chunk holds positions ``start .. start + M - 1``; the first ``start`` tokens (the cached
prefix) are already in the paged cache. Query row ``i`` sits at position ``start + i`` and sees
keys ``0 .. start + i``.

Build, in the order of the README's steps:

1. ``causal_mask``: which key positions each query row may see.
2. ``paged_prefill_attention``: the chunk's attention over the cache, streamed block by block
   with lab 04-01's online recurrence for every (query row, head).
3. ``prefill_chunk``: write the chunk through lab 02-06's write path (``WRITE_PATH``), then attend.
4. ``_attend``, ``_prefill_kernel``, ``paged_prefill``: one query tile against key tiles with
   ``tl.dot`` and the causal mask, launched for one prompt.
5. The same kernel over a ragged batch of chunks (``query_start_loc``, ``seq_lens``).
6. The mask only where the key range crosses the diagonal; offsets in int64.

Given, in ``_prefill_checks.py`` (imported below): the input checks ``_check_*`` and ``_as_*``; call them
first, so that bad input gets a clear message. Run
``LAB_IMPL=starter pytest -q phase-04-attention-backends/labs/lab-03-causal-prefill-attention``
(``-k "not kernel"`` for the numpy steps alone).
"""

from __future__ import annotations

import math  # noqa: F401  (you will need math.sqrt)

import numpy as np  # noqa: F401  (steps 1-3)
from _prefill_checks import (  # noqa: F401  (given: the input checks, in _prefill_checks.py; call them first)
    _as_block_table,
    _as_positions,
    _check_chunk,
    _check_kernel_inputs,
    _check_prefill,
    _check_start,
)

from labkit import load_reference, triton_env

# Lab 02-06's reference solution: WRITE_PATH.build_slot_mapping(block_table, block_size, start,
# num_tokens) and WRITE_PATH.write_kv(k_cache, v_cache, new_k, new_v, slot_mapping), for step 3.
WRITE_PATH = load_reference("02-06")

# Triton must learn whether to interpret before it is imported. Without torch and triton the
# numpy steps still work.
BACKEND = triton_env.select_backend()
if BACKEND != "missing":
    import torch
    import triton
    import triton.language as tl

    jit = triton.jit
else:
    torch = triton = tl = None

    def jit(fn):
        return fn


# --------------------------------------------------------------------------------------------
# Step 1: the causal mask
# --------------------------------------------------------------------------------------------


def causal_mask(start, num_queries, key_positions):
    """``[num_queries, len(key_positions)]`` booleans: may query row ``i`` see each key?

    Row ``i`` is the query at absolute position ``start + i``. It sees key position ``t``
    when ``t <= start + i``: every earlier token and itself, nothing later. ``key_positions``
    is any 1-D sequence of non-negative integer positions (one block's worth, or all of them).
    ``start`` and ``num_queries`` are ints >= 0 (a numpy integer of any width too, never a bool).
    Given: ``_check_start(name, value)`` and ``_as_positions(key_positions)``.
    """
    raise NotImplementedError(
        "causal_mask: not implemented yet (README step 1: mask[i, j] = key_positions[j] <= start + i, "
        "compared as key_positions[j] - i <= start: start + i may pass int64)"
    )


# --------------------------------------------------------------------------------------------
# Step 2: the chunk's attention, streamed over the paged cache
# --------------------------------------------------------------------------------------------


def paged_prefill_attention(q, k_cache, v_cache, block_table, start, block_size):
    """Causal attention of a chunk's queries over a paged cache that already holds the chunk.

    ``q [M, num_heads, head_dim]``: the queries of positions ``start .. start + M - 1``.
    ``k_cache``, ``v_cache [num_blocks, block_size, num_kv_heads, head_dim]`` hold the sequence's
    first ``start + M`` tokens (the prefix and the chunk) through ``block_table`` (1-D): token
    ``t`` is at ``[block_table[t // block_size], t % block_size]``; ``start`` and ``block_size`` are
    ints (a numpy integer of any width too). Query head ``h`` reads KV head
    ``h // (num_heads // num_kv_heads)``; scores are ``q . k / sqrt(head_dim)``; row ``i`` sees keys
    ``0 .. start + i``. Returns float64 ``[M, num_heads, head_dim]`` (``M = 0``: an
    empty array), computed in float64 whatever the inputs' type. One pass over the logical blocks
    that cover ``[0, start + M)``, in order, never more than one block's scores at a time (for every
    row and head at once, or head by head). The inputs are only read.
    Given: ``_as_block_table(block_table)`` then ``_check_prefill(q, k_cache, v_cache, block_table,
    start, block_size)``, which returns ``start`` and ``block_size`` as Python ints: use those (a
    numpy ``start`` as it came can wrap around in ``start + M``: ``np.int8(120) + 10`` is -126).
    """
    raise NotImplementedError(
        "paged_prefill_attention: not implemented yet (README step 2: for each logical block of [0, start + M), "
        "scores of every row, causal_mask, then lab 04-01's m/denom/acc update per (row, head))"
    )


# --------------------------------------------------------------------------------------------
# Step 3: one prefill step, write then attend
# --------------------------------------------------------------------------------------------


def prefill_chunk(q, new_k, new_v, k_cache, v_cache, block_table, start, block_size):
    """One prefill step for a chunk of ``M`` tokens at positions ``start .. start + M - 1``.

    Writes ``new_k``, ``new_v [M, num_kv_heads, head_dim]`` into ``k_cache``, ``v_cache`` in place
    at the chunk's slots (lab 02-06's ``build_slot_mapping`` and ``write_kv``, available as
    ``WRITE_PATH``), then returns ``paged_prefill_attention`` of ``q [M, num_heads, head_dim]``
    over the prefix and the chunk: float64 ``[M, num_heads, head_dim]``. The caches must already
    hold the first ``start`` tokens; ``block_table`` must have blocks for ``start + M`` tokens.
    Nothing is written when an argument is bad. Given: ``_check_chunk(...)``, which returns
    ``start`` and ``block_size`` as Python ints.
    """
    raise NotImplementedError(
        "prefill_chunk: not implemented yet (README step 3: slot mapping for start .. start + M - 1, write_kv, "
        "then paged_prefill_attention)"
    )


# --------------------------------------------------------------------------------------------
# Steps 4-6: the Triton kernel
# --------------------------------------------------------------------------------------------


@jit
def _attend(
    acc, m, denom, q, pos, key_lo, key_hi, table, k_cache_ptr, v_cache_ptr, kv_head,
    stride_block, stride_slot, stride_kv_head,
    BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr, SCALE: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, FP32_DOT: tl.constexpr,
):
    """Fold keys ``key_lo .. key_hi - 1`` into the tile's online state, ``BLOCK_N`` keys at a time;
    return ``(acc, m, denom)``. ``CAUSAL``: row ``r`` sees key ``t`` only when ``t <= pos[r]``."""
    # README step 4, about 25 lines:
    #   for each key tile from key_lo to key_hi (step BLOCK_N):
    #       t = the tile's key positions; key_ok = t < key_hi
    #       each key's physical block from the table (step 6: as int64), then its row of the cache:
    #           block * stride_block + (t % BLOCK_SIZE) * stride_slot + kv_head * stride_kv_head
    #       load K and V [BLOCK_N, HEAD_DIM], masked by key_ok
    #       s = tl.dot(q, tl.trans(k)) * SCALE   (input_precision="ieee" when FP32_DOT)
    #       if CAUSAL: -inf where t > pos
    #       lab 04-01's update, one row per (token, head): m_new, alpha, p, denom, acc (+ tl.dot(p, v))
    pass


@jit
def _prefill_kernel(
    q_ptr, k_cache_ptr, v_cache_ptr, out_ptr, block_tables_ptr, query_start_loc_ptr, seq_lens_ptr,
    stride_q_token, stride_q_head, stride_out_token, stride_out_head,
    stride_block, stride_slot, stride_kv_head, stride_table,
    GROUP: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr, SCALE: tl.constexpr, FP32_DOT: tl.constexpr,
):
    # README steps 4-6, about 35 lines:
    #   program ids: (query tile, KV head, sequence)
    #   the chunk: chunk_start and query_len from query_start_loc; its prefix: seq_len - query_len
    #   nothing to do when the tile starts past the chunk's end
    #   the tile's BLOCK_M rows: BLOCK_Q tokens x the GROUP query heads of this KV head;
    #   row_ok for the real ones; each row's absolute position; load q (masked)
    #   acc, m, denom in float32; then _attend over the keys the tile's rows may see
    #   (step 6: the keys every row sees without a mask, then the diagonal with it)
    #   store acc / denom for the real rows only
    pass


# --------------------------------------------------------------------------------------------
# Steps 4-6: the launch
# --------------------------------------------------------------------------------------------

GPU_TILES = {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 3}
INTERPRETER_TILES = {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4, "num_stages": 1}
# A row of q wider than 512 bytes (float32 at head_dim 256): at GPU_TILES its tiles would need 289 KiB
# of shared memory, past an H100's 227 KiB, so such a launch takes these instead (the fastest of those
# that fit on an H100: 3.8 ms for two chunks of 1024 queries and 8 heads; 14.6 ms with 2 stages).
WIDE_ROW_TILES = {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 8, "num_stages": 1}


def paged_prefill(q, k_cache, v_cache, block_tables, query_start_loc, seq_lens, max_query_len=None, out=None):
    """Causal attention for a ragged batch of chunks over a paged KV cache (Triton).

    - ``q [num_tokens, num_heads, head_dim]``: the chunks' queries packed one after another;
      rows ``query_start_loc[s] .. query_start_loc[s + 1] - 1`` are sequence ``s``'s chunk. Rows
      outside ``[query_start_loc[0], query_start_loc[-1])`` are padding: never read, their
      output rows left as they are.
    - ``k_cache``, ``v_cache [num_blocks, block_size, num_kv_heads, head_dim]``, holding every
      sequence's first ``seq_lens[s]`` tokens, the chunk's own included.
    - ``block_tables [num_seqs, max_blocks]`` int32; ``query_start_loc [num_seqs + 1]`` int32,
      non-decreasing; ``seq_lens [num_seqs]`` int32: prefix + chunk. The chunk of sequence ``s``
      sits at positions ``seq_lens[s] - query_len .. seq_lens[s] - 1``.
    - ``max_query_len``: the longest chunk, if the caller knows it (vLLM's metadata does), an int
      (a numpy integer too); ``None`` reads ``query_start_loc`` back to the host to find it.
    - ``out``: written in place when given (shaped and typed like ``q``), else a new zero tensor.

    Row ``j`` of a chunk attends to keys ``0 .. seq_len - query_len + j``; query head ``h``
    reads KV head ``h // (num_heads // num_kv_heads)``; scores ``q . k / sqrt(head_dim)``.
    Returns ``out``, shaped and typed like ``q``. Given: ``_check_kernel_inputs(...)`` (it returns
    ``max_query_len`` as a Python int, None left None), and the
    tile sizes above (``GPU_TILES`` on a GPU, ``WIDE_ROW_TILES`` there for rows of q wider than 512 bytes,
    ``INTERPRETER_TILES`` on the CPU).
    """
    raise NotImplementedError(
        "paged_prefill: not implemented yet (README steps 4-6: check the inputs, out and max_query_len, "
        "BLOCK_M >= the group size, grid (cdiv(max_query_len, BLOCK_Q), num_kv_heads, num_seqs), launch "
        "_prefill_kernel)"
    )

