"""Lab 04-03, reference solution: causal prefill over a paged KV cache, in numpy and in Triton.

A prefill step computes attention for a **chunk** of ``M`` new tokens of one sequence at once.
The chunk holds positions ``start .. start + M - 1``; the first ``start`` tokens (the cached
prefix, written by earlier chunks) are already in the paged cache. Query row ``i`` sits at
position ``start + i`` and sees keys ``0 .. start + i``: the whole prefix, then the chunk up to
and including itself.

numpy, one sequence, float64 (README steps 1-3):

1. ``causal_mask``: which key positions each query row may see.
2. ``paged_prefill_attention``: the chunk's attention over the cache, streamed block by block
   with lab 04-01's online recurrence kept for every (query row, head); grouped-query heads.
3. ``prefill_chunk``: write the chunk's K/V through the slot mapping (lab 02-06's write path),
   then attend. Chunking changes when the work happens, never what it computes.

Triton, a ragged batch of chunks, on a GPU or through the interpreter (steps 4-6):

- ``_attend``: fold a range of keys into a query tile's online state with ``tl.dot``; the
  causal mask only where the range crosses the diagonal.
- ``_prefill_kernel``: one program per (query tile, KV head, sequence). A tile's rows are
  ``BLOCK_Q`` query tokens times the ``GROUP`` query heads that share one KV head, so each
  K/V tile is loaded once for the whole group.
- ``paged_prefill``: input checks, tile sizes, the launch. The batch is described the way
  vLLM's attention kernels take it: ``query_start_loc`` (where each chunk starts in the packed
  queries) and ``seq_lens`` (prefix + chunk); the prefix length is ``seq_len - query_len``.
"""

from __future__ import annotations

import math

import numpy as np
from _prefill_checks import (  # the input checks, given to the learner in _prefill_checks.py
    _as_block_table,
    _as_positions,
    _check_chunk,
    _check_kernel_inputs,
    _check_prefill,
    _check_start,
)

from labkit import load_reference, triton_env

# Lab 02-06's reference solution: build_slot_mapping and write_kv, the write path this lab reuses.
WRITE_PATH = load_reference("02-06")

# Triton must learn whether to interpret before it is imported. Without torch and triton the
# numpy part still works; paged_prefill says what to install.
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
    """
    start, num_queries = _check_start("start", start), _check_start("num_queries", num_queries)
    keys = _as_positions(key_positions)
    # t <= start + i, written as t - i <= start: start + i would pass int64 for a start near 2**63
    # (and a start past it is a Python int numpy cannot convert), while t - i always fits.
    return keys[None, :] - np.arange(num_queries)[:, None] <= start


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
    empty array). One pass over the logical blocks that cover ``[0, start + M)``, in order,
    never more than one block's scores at a time.
    """
    q = np.asarray(q, dtype=np.float64)
    block_table = _as_block_table(block_table)
    # Python ints back: a narrow numpy start (np.int8(120)) would wrap around in start + num_queries.
    start, block_size = _check_prefill(q, k_cache, v_cache, block_table, start, block_size)
    num_queries, num_heads, head_dim = q.shape
    group = num_heads // k_cache.shape[2]  # query heads per KV head
    scale = 1.0 / np.sqrt(head_dim)
    seq_len = start + num_queries  # the prefix and the chunk are both in the cache
    if num_queries == 0:
        return np.zeros((0, num_heads, v_cache.shape[3]))

    # Lab 04-01's running state, one entry per (query row, head).
    m = np.full((num_queries, num_heads), -np.inf)  # running max of the scores
    denom = np.zeros((num_queries, num_heads))  # running sum of exp(score - m)
    acc = np.zeros((num_queries, num_heads, v_cache.shape[3]))  # running sum of exp(score - m) * v

    for block_start in range(0, seq_len, block_size):
        physical = block_table[block_start // block_size]
        valid = min(block_size, seq_len - block_start)  # the last block may be partial
        k_block = np.asarray(k_cache[physical, :valid], dtype=np.float64)  # [valid, num_kv_heads, head_dim]
        v_block = np.asarray(v_cache[physical, :valid], dtype=np.float64)
        visible = causal_mask(start, num_queries, np.arange(block_start, block_start + valid))  # [M, valid]

        for h in range(num_heads):
            kv_head = h // group
            s = q[:, h] @ k_block[:, kv_head].T * scale  # [M, valid] scores
            s = np.where(visible, s, -np.inf)  # the future of each row weighs exp(-inf) = 0
            # Every row sees key 0, in the first block: after it, every row's max is finite,
            # so corr is exp(-inf) = 0 on the first block and never exp(-inf - (-inf)).
            m_new = np.maximum(m[:, h], s.max(axis=1))
            corr = np.exp(m[:, h] - m_new)  # rescales each row's history to its new max
            p = np.exp(s - m_new[:, None])
            denom[:, h] = denom[:, h] * corr + p.sum(axis=1)
            acc[:, h] = acc[:, h] * corr[:, None] + p @ v_block[:, kv_head]
            m[:, h] = m_new

    return acc / denom[:, :, None]


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
    """
    block_table = _as_block_table(block_table)
    start, block_size = _check_chunk(q, new_k, new_v, k_cache, v_cache, block_table, start, block_size)
    # The chunk's keys go into the cache first: row i attends to the chunk's tokens 0 .. i too.
    slots = WRITE_PATH.build_slot_mapping(block_table, block_size, start, len(new_k))
    WRITE_PATH.write_kv(k_cache, v_cache, new_k, new_v, slots)
    return paged_prefill_attention(q, k_cache, v_cache, block_table, start, block_size)


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
    """Fold keys ``key_lo .. key_hi - 1`` into the tile's online state, ``BLOCK_N`` keys at a time.

    ``CAUSAL``: row ``r`` (query position ``pos[r]``) sees key ``t`` only when ``t <= pos[r]``;
    without it every row sees every key of the range.
    """
    dims = tl.arange(0, HEAD_DIM)
    for key_start in range(key_lo, key_hi, BLOCK_N):
        t = key_start + tl.arange(0, BLOCK_N)  # logical key positions
        key_ok = t < key_hi  # the last tile of the range may run past it
        # Each key finds its block through the table: a tile may span several blocks. The id
        # and the KV head become int64 before they multiply a stride (caches pass 2**31 elements).
        block = tl.load(table + t // BLOCK_SIZE, mask=key_ok, other=0).to(tl.int64)
        rows = block * stride_block + (t % BLOCK_SIZE) * stride_slot + kv_head.to(tl.int64) * stride_kv_head
        k = tl.load(k_cache_ptr + rows[:, None] + dims[None, :], mask=key_ok[:, None], other=0.0)
        v = tl.load(v_cache_ptr + rows[:, None] + dims[None, :], mask=key_ok[:, None], other=0.0)

        if FP32_DOT:  # float32 inputs: full precision, not TF32
            s = tl.dot(q, tl.trans(k), input_precision="ieee")
        else:
            s = tl.dot(q, tl.trans(k))  # [BLOCK_M, BLOCK_N], float32 accumulation
        s = s * SCALE
        if CAUSAL:
            s = tl.where(t[None, :] <= pos[:, None], s, float("-inf"))

        # Lab 04-01's recurrence, one row per (query token, head).
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp(m - m_new)  # rescales each row's history to its new max
        p = tl.exp(s - m_new[:, None])
        denom = denom * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None]
        if FP32_DOT:
            acc += tl.dot(p, v, input_precision="ieee")
        else:
            acc += tl.dot(p.to(v.dtype), v)  # p in the inputs' type for the tensor cores
        m = m_new
    return acc, m, denom


@jit
def _prefill_kernel(
    q_ptr, k_cache_ptr, v_cache_ptr, out_ptr, block_tables_ptr, query_start_loc_ptr, seq_lens_ptr,
    stride_q_token, stride_q_head, stride_out_token, stride_out_head,
    stride_block, stride_slot, stride_kv_head, stride_table,
    GROUP: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr, SCALE: tl.constexpr, FP32_DOT: tl.constexpr,
):
    # Program ids: (query tile, KV head, sequence). Tiles run last first: the last tile of a
    # chunk sees the most keys, and long programs started early leave no long tail at the end.
    q_tile = tl.num_programs(0) - 1 - tl.program_id(0)
    kv_head = tl.program_id(1)
    seq = tl.program_id(2)

    # Where this sequence's chunk is, and where it sits in the sequence.
    chunk_start = tl.load(query_start_loc_ptr + seq)  # its first row of q
    query_len = tl.load(query_start_loc_ptr + seq + 1) - chunk_start
    seq_len = tl.load(seq_lens_ptr + seq)  # the prefix and the chunk
    context_len = seq_len - query_len  # the chunk's first position: `start` of the numpy part
    first = q_tile * BLOCK_Q  # the tile's first query token, counted inside the chunk
    if first >= query_len:
        return  # a shorter chunk than the longest of the batch: no tile here

    # The tile's rows: BLOCK_Q tokens x the GROUP query heads of this KV head, token-major.
    # Rows past the chunk's end, or past BLOCK_Q * GROUP, are padding: loaded as zeros,
    # computed (harmlessly: every row sees key 0), never stored.
    r = tl.arange(0, BLOCK_M)
    token = first + r // GROUP
    head = kv_head * GROUP + r % GROUP
    row_ok = (r < BLOCK_Q * GROUP) & (token < query_len)
    pos = context_len + token  # each row's absolute position in the sequence
    dims = tl.arange(0, HEAD_DIM)
    # Rows and heads in int64 before the strides: a view's heads may lie 2**31 elements apart.
    q_rows = (chunk_start + token).to(tl.int64) * stride_q_token + head.to(tl.int64) * stride_q_head
    q = tl.load(q_ptr + q_rows[:, None] + dims[None, :], mask=row_ok[:, None], other=0.0)

    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    denom = tl.zeros([BLOCK_M], tl.float32)
    table = block_tables_ptr + seq.to(tl.int64) * stride_table

    # Keys 0 .. key_end - 1 are all any real row of the tile may see. Those up to the first
    # row's own position are visible to every row: whole BLOCK_N tiles of them go unmasked.
    last = tl.minimum(first + BLOCK_Q, query_len) - 1
    key_end = context_len + last + 1
    full_end = (context_len + first + 1) // BLOCK_N * BLOCK_N
    acc, m, denom = _attend(acc, m, denom, q, pos, 0, full_end, table, k_cache_ptr, v_cache_ptr, kv_head,
                            stride_block, stride_slot, stride_kv_head,
                            BLOCK_SIZE, HEAD_DIM, SCALE, BLOCK_N, False, FP32_DOT)
    acc, m, denom = _attend(acc, m, denom, q, pos, full_end, key_end, table, k_cache_ptr, v_cache_ptr, kv_head,
                            stride_block, stride_slot, stride_kv_head,
                            BLOCK_SIZE, HEAD_DIM, SCALE, BLOCK_N, True, FP32_DOT)

    out = acc / denom[:, None]  # denom > 0: every row saw key 0
    out_rows = (chunk_start + token).to(tl.int64) * stride_out_token + head.to(tl.int64) * stride_out_head
    tl.store(out_ptr + out_rows[:, None] + dims[None, :], out.to(out_ptr.dtype.element_ty), mask=row_ok[:, None])


# --------------------------------------------------------------------------------------------
# Steps 4-6: the launch
# --------------------------------------------------------------------------------------------

# Query rows (tokens x group heads) and keys per tile, warps and pipeline stages. On a GPU the
# tiles feed the tensor cores (rows of 128 and keys of 64, a common shape for FlashAttention-2-
# style forward kernels at head_dim 128; bench.py --sweep times others); the interpreter runs every
# program in Python, so there small tiles keep the tests fast and make small chunks span several.
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
    Returns ``out``, shaped and typed like ``q``.
    """
    max_query_len = _check_kernel_inputs(q, k_cache, v_cache, block_tables, query_start_loc, seq_lens,
                                         max_query_len, out)
    num_tokens, num_heads, head_dim = q.shape
    _, block_size, num_kv_heads, _ = k_cache.shape
    num_seqs = seq_lens.shape[0]
    if out is None:
        out = torch.zeros_like(q)
    if max_query_len is None:
        starts = query_start_loc.cpu().to(torch.int64)
        max_query_len = int((starts[1:] - starts[:-1]).max()) if num_seqs else 0
    if num_seqs == 0 or max_query_len == 0 or num_heads == 0:
        return out

    group = num_heads // num_kv_heads
    tiles = GPU_TILES if q.device.type == "cuda" else INTERPRETER_TILES
    if tiles is GPU_TILES and head_dim * q.element_size() > 512:
        tiles = WIDE_ROW_TILES
    block_m = max(tiles["BLOCK_M"], triton.next_power_of_2(group))  # at least one token per tile
    block_q = block_m // group
    grid = (triton.cdiv(max_query_len, block_q), num_kv_heads, num_seqs)
    _prefill_kernel[grid](
        q, k_cache, v_cache, out, block_tables, query_start_loc, seq_lens,
        q.stride(0), q.stride(1), out.stride(0), out.stride(1),
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2), block_tables.stride(0),
        GROUP=group, BLOCK_Q=block_q, BLOCK_M=block_m, BLOCK_N=tiles["BLOCK_N"],
        BLOCK_SIZE=block_size, HEAD_DIM=head_dim, SCALE=1.0 / math.sqrt(head_dim),
        FP32_DOT=q.dtype == torch.float32, num_warps=tiles["num_warps"], num_stages=tiles["num_stages"],
    )
    return out

