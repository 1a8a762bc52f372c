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

The input checks (``_check_*``) are given: call them first. Run
``LAB_IMPL=starter pytest -q phase-04-attention-backends/labs/lab-03-causal-prefill-attention``
(``-k "not kernel"`` for the numpy steps alone).
"""

from __future__ import annotations

import math  # noqa: F401  (you will need math.sqrt)
import numbers
import os

import numpy as np

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
    Given: ``_check_start(name, value)`` and ``_as_positions(key_positions)``.
    """
    raise NotImplementedError(
        "causal_mask: not implemented yet (README step 1: mask[i, j] = key_positions[j] <= start + i)"
    )


# --------------------------------------------------------------------------------------------
# Step 2: the chunk's attention, streamed over the paged cache
# --------------------------------------------------------------------------------------------


def paged_prefill_attention(q, k_cache, v_cache, block_table, start, block_size):
    """Causal attention of a chunk's queries over a paged cache that already holds the chunk.

    ``q [M, num_heads, head_dim]``: the queries of positions ``start .. start + M - 1``.
    ``k_cache``, ``v_cache [num_blocks, block_size, num_kv_heads, head_dim]`` hold the sequence's
    first ``start + M`` tokens (the prefix and the chunk) through ``block_table`` (1-D): token
    ``t`` is at ``[block_table[t // block_size], t % block_size]``. Query head ``h`` reads KV
    head ``h // (num_heads // num_kv_heads)``; scores are ``q . k / sqrt(head_dim)``; row ``i``
    sees keys ``0 .. start + i``. Returns float64 ``[M, num_heads, head_dim]`` (``M = 0``: an
    empty array). One pass over the logical blocks that cover ``[0, start + M)``, in order,
    never more than one block's scores at a time. The inputs are only read.
    Given: ``_as_block_table(block_table)`` then ``_check_prefill(q, k_cache, v_cache, block_table,
    start, block_size)``.
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
    Nothing is written when an argument is bad. Given: ``_check_chunk(...)``.
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
    - ``max_query_len``: the longest chunk, if the caller knows it (vLLM's metadata does);
      ``None`` reads ``query_start_loc`` back to the host to find it.
    - ``out``: written in place when given (shaped and typed like ``q``), else a new zero tensor.

    Row ``j`` of a chunk attends to keys ``0 .. seq_len - query_len + j``; query head ``h``
    reads KV head ``h // (num_heads // num_kv_heads)``; scores ``q . k / sqrt(head_dim)``.
    Returns ``out``, shaped and typed like ``q``. Given: ``_check_kernel_inputs(...)``, and the
    tile sizes above (``GPU_TILES`` on a GPU, ``INTERPRETER_TILES`` on the CPU).
    """
    raise NotImplementedError(
        "paged_prefill: not implemented yet (README steps 4-6: check the inputs, out and max_query_len, "
        "BLOCK_M >= the group size, grid (cdiv(max_query_len, BLOCK_Q), num_kv_heads, num_seqs), launch "
        "_prefill_kernel)"
    )


# --------------------------------------------------------------------------------------------
# Input checks: a clear message instead of an IndexError or a Triton traceback
# --------------------------------------------------------------------------------------------


def _check_start(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    return int(value)


def _as_positions(key_positions):
    keys = np.asarray(key_positions)
    if keys.size == 0:
        return keys.reshape(0).astype(np.int64)
    if keys.ndim != 1 or not np.issubdtype(keys.dtype, np.integer):
        raise ValueError(f"key_positions must be a 1-D array of integer positions, got shape {keys.shape} "
                         f"dtype {keys.dtype}")
    if keys.min() < 0:
        raise ValueError(f"key_positions must be >= 0, got {keys.min()}")
    return keys.astype(np.int64)


def _as_block_table(block_table):
    table = np.asarray(block_table)
    if table.size == 0:
        return table.reshape(0).astype(np.int64)
    if table.ndim != 1 or not np.issubdtype(table.dtype, np.integer):
        raise ValueError(f"block_table must be a 1-D array of integer block ids, got shape {table.shape} "
                         f"dtype {table.dtype}")
    return table.astype(np.int64)


def _check_prefill(q, k_cache, v_cache, block_table, start, block_size):
    if q.ndim != 3:
        raise ValueError(f"q must be [num_queries, num_heads, head_dim], got shape {q.shape}")
    for name, cache in (("k_cache", k_cache), ("v_cache", v_cache)):
        if np.ndim(cache) != 4:
            raise ValueError(f"{name} must be [num_blocks, block_size, num_kv_heads, head_dim], "
                             f"got shape {np.shape(cache)}")
    if np.shape(k_cache) != np.shape(v_cache):
        raise ValueError(f"k_cache {np.shape(k_cache)} and v_cache {np.shape(v_cache)} must have one shape")
    num_blocks, cache_block_size, num_kv_heads, head_dim = k_cache.shape
    if isinstance(block_size, bool) or not isinstance(block_size, numbers.Integral) or block_size != cache_block_size:
        raise ValueError(f"block_size={block_size!r} but the caches hold blocks of {cache_block_size} tokens")
    if q.shape[2] != head_dim:
        raise ValueError(f"q has head_dim {q.shape[2]}, the caches {head_dim}")
    if num_kv_heads == 0 or q.shape[1] % num_kv_heads:
        raise ValueError(f"num_heads={q.shape[1]} (q) must be a multiple of num_kv_heads={num_kv_heads} (caches)")
    start = _check_start("start", start)
    seq_len = start + q.shape[0]
    needed = -(-seq_len // block_size)
    if needed > len(block_table):
        raise ValueError(f"block_table has {len(block_table)} blocks; start + num_queries = {seq_len} tokens "
                         f"need {needed} blocks of {block_size}")
    used = block_table[:needed]
    if used.size and (used.min() < 0 or used.max() >= num_blocks):
        raise ValueError(f"block_table {used.tolist()} names a block outside the cache's 0..{num_blocks - 1}")


def _check_chunk(q, new_k, new_v, k_cache, v_cache, block_table, start, block_size):
    q = np.asarray(q)
    _check_prefill(q, k_cache, v_cache, block_table, start, block_size)
    for name, cache in (("k_cache", k_cache), ("v_cache", v_cache)):
        if not isinstance(cache, np.ndarray):
            raise ValueError(f"{name} must be a numpy array: prefill_chunk writes the chunk into it")
    expected = (q.shape[0], *k_cache.shape[2:])
    for name, new in (("new_k", new_k), ("new_v", new_v)):
        if np.shape(new) != expected:
            raise ValueError(f"{name} has shape {np.shape(new)}, expected {expected} (one row per query of the chunk)")


def _check_kernel_inputs(q, k_cache, v_cache, block_tables, query_start_loc, seq_lens, max_query_len, out):
    """ValueError/TypeError naming paged_prefill and the argument, before any kernel runs."""
    if BACKEND == "missing":
        raise ModuleNotFoundError(f"paged_prefill needs torch and triton: {triton_env.INSTALL_HINT}")
    tensors = {"q": q, "k_cache": k_cache, "v_cache": v_cache, "block_tables": block_tables,
               "query_start_loc": query_start_loc, "seq_lens": seq_lens}
    if out is not None:
        tensors["out"] = out
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"paged_prefill: {name} must be a torch.Tensor, got {type(t).__name__}")
    devices = {t.device for t in tensors.values()}
    if len(devices) > 1:
        raise ValueError(f"paged_prefill: all tensors must be on one device, got {sorted(map(str, devices))}")
    if q.dim() != 3:
        raise ValueError(f"paged_prefill: q must be [num_tokens, num_heads, head_dim], got shape {tuple(q.shape)}")
    if k_cache.dim() != 4 or k_cache.shape != v_cache.shape:
        raise ValueError("paged_prefill: k_cache and v_cache must both be [num_blocks, block_size, num_kv_heads, "
                         f"head_dim], got {tuple(k_cache.shape)} and {tuple(v_cache.shape)}")
    num_tokens, num_heads, head_dim = q.shape
    num_blocks, block_size, num_kv_heads, cache_dim = k_cache.shape
    if q.dtype not in (torch.float16, torch.bfloat16, torch.float32) or {k_cache.dtype, v_cache.dtype} != {q.dtype}:
        raise TypeError("paged_prefill: q, k_cache and v_cache must share one dtype among float16, bfloat16, "
                        f"float32; got {q.dtype}, {k_cache.dtype}, {v_cache.dtype}")
    if cache_dim != head_dim:
        raise ValueError(f"paged_prefill: q has head_dim {head_dim}, the caches {cache_dim}")
    if head_dim not in (16, 32, 64, 128, 256):
        raise ValueError(f"paged_prefill: head_dim must be a power of two from 16 to 256, got {head_dim}")
    if num_kv_heads == 0 or num_heads % num_kv_heads:
        raise ValueError(f"paged_prefill: num_heads={num_heads} (q) must be a multiple of "
                         f"num_kv_heads={num_kv_heads} (caches)")
    if block_size < 1:
        raise ValueError(f"paged_prefill: block_size (k_cache.shape[1]) must be >= 1, got {block_size}")
    if block_tables.dtype != torch.int32 or block_tables.dim() != 2:
        raise ValueError(f"paged_prefill: block_tables must be int32 [num_seqs, max_blocks], got "
                         f"{block_tables.dtype} {tuple(block_tables.shape)}")
    num_seqs = block_tables.shape[0]
    if seq_lens.dtype != torch.int32 or tuple(seq_lens.shape) != (num_seqs,):
        raise ValueError(f"paged_prefill: seq_lens must be int32 [num_seqs={num_seqs}], got {seq_lens.dtype} "
                         f"{tuple(seq_lens.shape)}")
    if query_start_loc.dtype != torch.int32 or tuple(query_start_loc.shape) != (num_seqs + 1,):
        raise ValueError(f"paged_prefill: query_start_loc must be int32 [num_seqs + 1 = {num_seqs + 1}], got "
                         f"{query_start_loc.dtype} {tuple(query_start_loc.shape)}")
    if max_query_len is not None and (isinstance(max_query_len, bool) or not isinstance(max_query_len, int)
                                      or max_query_len < 0):
        raise ValueError(f"paged_prefill: max_query_len must be None or an int >= 0, got {max_query_len!r}")
    if out is not None and (out.shape != q.shape or out.dtype != q.dtype):
        raise ValueError(f"paged_prefill: out must be shaped and typed like q {tuple(q.shape)} {q.dtype}, "
                         f"got {tuple(out.shape)} {out.dtype}")
    for name, t in (("q", q), ("out", out), ("k_cache", k_cache)):
        if t is not None and t.stride(-1) != 1:
            raise ValueError(f"paged_prefill: {name} must have its last dimension contiguous (call .contiguous())")
    if k_cache.stride() != v_cache.stride():
        raise ValueError(f"paged_prefill: k_cache and v_cache must have the same strides, got {k_cache.stride()} "
                         f"and {v_cache.stride()}")
    if block_tables.stride(-1) != 1 or query_start_loc.stride(0) != 1 or seq_lens.stride(0) != 1:
        raise ValueError("paged_prefill: block_tables, query_start_loc and seq_lens must be contiguous")
    interpreted = os.environ.get("TRITON_INTERPRET") == "1"
    if q.device.type == "cpu" and not interpreted:
        raise ValueError("paged_prefill: CPU tensors need Triton's interpreter (TRITON_INTERPRET=1 before triton is "
                         "imported; labkit.triton_env.select_backend() sets it without a GPU)")
    if q.dtype == torch.bfloat16 and interpreted:
        raise ValueError("paged_prefill: Triton's interpreter computes bfloat16 wrongly; use float16 or float32 "
                         "on the CPU")
    # Values are checked where they live on the host. On a GPU, reading them back would cost a
    # synchronization per call (vLLM does not check them either).
    if q.device.type == "cpu" and num_seqs:
        _check_kernel_values(num_tokens, num_blocks, block_size, block_tables, query_start_loc, seq_lens,
                             max_query_len)


def _check_kernel_values(num_tokens, num_blocks, block_size, block_tables, query_start_loc, seq_lens, max_query_len):
    starts = query_start_loc.to(torch.int64)
    lens = seq_lens.to(torch.int64)
    query_lens = starts[1:] - starts[:-1]
    if int(starts[0]) < 0 or int(query_lens.min()) < 0 or int(starts[-1]) > num_tokens:
        raise ValueError(f"paged_prefill: query_start_loc must be non-decreasing, from >= 0 to <= num_tokens = "
                         f"{num_tokens}, got {query_start_loc.tolist()}")
    if bool((query_lens > lens).any()):
        s = int(torch.nonzero(query_lens > lens)[0])
        raise ValueError(f"paged_prefill: sequence {s} has a chunk of {int(query_lens[s])} tokens but seq_lens[{s}] = "
                         f"{int(lens[s])}: seq_lens counts the prefix and the chunk")
    capacity = block_tables.shape[1] * block_size
    if int(lens.max()) > capacity:
        raise ValueError(f"paged_prefill: seq_lens must be <= max_blocks * block_size = {capacity}, got "
                         f"{int(lens.max())}")
    if max_query_len is not None and max_query_len < int(query_lens.max()):
        raise ValueError(f"paged_prefill: max_query_len={max_query_len} but a chunk has {int(query_lens.max())} "
                         "tokens")
    used = torch.arange(block_tables.shape[1]) < ((lens + block_size - 1) // block_size)[:, None]
    ids = block_tables[used]
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= num_blocks):
        raise ValueError(f"paged_prefill: block_tables names blocks outside [0, {num_blocks}) among the sequences' "
                         f"blocks (from {int(ids.min())} to {int(ids.max())})")
