"""Lab 04-07 starter: decode with the KV cache split across ranks (context parallelism).

Your work: the functions below that raise NotImplementedError, in the order of the README's steps.
Run the tests with

    LAB_IMPL=starter pytest -q phase-04-attention-backends/labs/lab-07-context-parallel-decode

Tokens are dealt to the ranks in stripes of ``stripe`` consecutive tokens, round robin: stripe
``s = t // stripe`` goes to rank ``s % world_size``, and each rank packs the tokens it receives in
order. ``stripe = block_size`` is the block-interleaved layout, ``stripe = 1`` interleaves single
tokens (vLLM's decode context parallelism), and a stripe of ``ceil(seq_len / world_size)`` tokens or
more is a contiguous split.

Each rank summarizes attention over its own tokens as lab 04-04 does, ``(m, denom, acc)``, in numpy
float64; the ranks combine the summaries with ``torch.distributed`` collectives. Given ready-made:
``combine_all_gather`` (read it: it is the other way to combine), the merge over ranks it uses, and
the input checks at the bottom: call them first, so that bad input gets a clear message.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist

import labkit

# Lab 04-04's summary of one query over a set of keys: (m, denom, acc), (-inf, 0, zeros) for no key.
attend_partial = labkit.load_reference("04-04").attend_partial

METHODS = ("all_gather", "all_reduce")


# ---------------------------------------------------------------------------------------------
# Steps 1-3: where each token lives.


def token_owner(positions, world_size, stripe):
    """Which rank holds each token, and where among that rank's tokens.

    ``positions``: int array of token positions ``t >= 0`` in one sequence. Tokens are dealt to
    ``world_size`` ranks in stripes of ``stripe`` consecutive tokens, round robin; each rank packs
    the tokens it receives in order. Returns ``(ranks, local_positions)``, int64 arrays shaped like
    ``positions``.
    """
    # positions = _as_positions(positions)
    # _check_count("world_size", world_size)
    # _check_count("stripe", stripe)
    raise NotImplementedError(
        "token_owner: not implemented yet (README step 1: the stripe of token t is t // stripe; the "
        "rank is that stripe modulo world_size; count the tokens the rank received before it)"
    )


def local_seq_lens(seq_lens, world_size, stripe):
    """How many tokens of each sequence each rank holds: int64 ``[world_size, batch]``.

    ``seq_lens``: int ``[batch]``, each ``>= 0``. Row ``r`` is what rank ``r`` passes as its
    ``seq_lens`` to ``rank_summaries``; each column sums to the sequence's length. Ranks may hold
    nothing (short sequences), and ``world_size`` need not divide anything.
    """
    # seq_lens = _as_lengths(seq_lens)
    # _check_count("world_size", world_size)
    # _check_count("stripe", stripe)
    raise NotImplementedError(
        "local_seq_lens: not implemented yet (README step 2: whole rounds of world_size stripes, then "
        "the last partial round dealt to the first ranks; never negative, never more than a stripe)"
    )


def shard_slot_mapping(positions, rank_block_tables, block_size, stripe):
    """Where each token of one sequence is written: ``(ranks, slots)``, int64 like ``positions``.

    ``rank_block_tables``: int ``[world_size, max_blocks]``, row ``r`` this sequence's block table
    on rank ``r`` (its local logical block ``j`` is physical block ``rank_block_tables[r, j]`` of
    rank ``r``'s pool). Token ``t`` goes to slot ``block * block_size + offset`` of the cache of rank
    ``ranks[i]``, its block and offset taken from its position among that rank's tokens.
    """
    # positions = _as_positions(positions)
    # tables = _as_rank_tables(rank_block_tables)
    # _check_count("block_size", block_size)
    # ... then, with the local blocks in hand: _check_table_width(tables, ranks, local_blocks)
    raise NotImplementedError(
        "shard_slot_mapping: not implemented yet (README step 3: token_owner, then the rank's own "
        "table at the LOCAL block, and the offset of the local position)"
    )


# ---------------------------------------------------------------------------------------------
# Step 4: one rank's work.


def rank_summaries(q, k_cache, v_cache, block_tables, seq_lens):
    """Each (sequence, query head)'s summary over the tokens this rank holds.

    q ``[batch, num_heads, head_dim]``; k_cache, v_cache ``[num_blocks, block_size, num_kv_heads,
    head_dim]`` (this rank's pool); block_tables int ``[batch, max_blocks]`` (this rank's tables);
    seq_lens int ``[batch]`` (this rank's token counts, from ``local_seq_lens``). Query head ``h``
    reads KV head ``h // (num_heads // num_kv_heads)``; scores are ``q . k / sqrt(head_dim)``.
    Returns float64 ``m [batch, num_heads]`` (the largest score), ``denom [batch, num_heads]``
    (sum of ``exp(score - m)``) and ``acc [batch, num_heads, head_dim]`` (sum of ``exp(score - m)
    * v``, not divided). A sequence of which the rank holds no token gets ``(-inf, 0, zeros)``.
    The inputs are left unchanged.
    """
    # q, k_cache, v_cache, block_tables, seq_lens = _check_rank_inputs(q, k_cache, v_cache, block_tables, seq_lens)
    raise NotImplementedError(
        "rank_summaries: not implemented yet (README step 4: for each sequence and query head, lab "
        "04-04's attend_partial over the rank's seq_lens[b] tokens, gathered through its own table)"
    )


# ---------------------------------------------------------------------------------------------
# Step 5: the (out, lse) encoding of a summary.


def to_out_lse(m, denom, acc):
    """The summary ``(m, denom, acc)`` as ``(out, lse)``: ``out = acc / denom`` (the rank's own
    attention output, ``[..., head_dim]``) and ``lse = m + log(denom)`` (the log of the sum of
    ``exp(score)``, ``[...]``), torch tensors of the summary's dtype. A summary of no key
    (``denom = 0``) gives ``out = 0`` and ``lse = -inf``. The inputs are left unchanged.
    """
    # _check_summaries("to_out_lse", m, denom, acc)
    raise NotImplementedError(
        "to_out_lse: not implemented yet (README step 5: out = acc / denom, lse = m + log(denom); "
        "where denom is 0, out = 0 and lse = -inf, never 0/0)"
    )


def from_out_lse(out, lse):
    """``(out, lse)`` back to a summary ``(m, denom, acc)`` that merges like the original:
    ``(lse, 1, out)``, and exactly ``(-inf, 0, zeros)`` where ``lse`` is ``-inf``. New tensors."""
    # _check_out_lse(out, lse)
    raise NotImplementedError(
        "from_out_lse: not implemented yet (README step 5: (lse, 1, out), and exactly (-inf, 0, "
        "zeros) where lse is -inf)"
    )


# ---------------------------------------------------------------------------------------------
# Step 6: combine the ranks' summaries.


def combine_all_reduce(m, denom, acc, group=None):
    """Attention output over every rank's tokens, from this rank's summary, by two all-reduces.

    ``m``, ``denom`` ``[batch, num_heads]`` and ``acc`` ``[batch, num_heads, head_dim]``: torch
    tensors of one floating dtype on the rank's device (``rank_summaries``' arrays through
    ``torch.from_numpy``). Every rank of ``group`` (default: the whole world) calls this with its own
    summary; every rank gets the same ``out [batch, num_heads, head_dim]``, of ``acc``'s dtype:
    ``sum_r exp(m_r - M) acc_r / sum_r exp(m_r - M) denom_r`` with ``M = max_r m_r``, zeros where no
    rank holds a token. First an all-reduce (MAX) of ``m``, then one all-reduce (SUM) of the
    rescaled ``denom`` and ``acc``. The inputs are left unchanged.
    """
    # _check_summaries("combine_all_reduce", m, denom, acc)
    # _world_size("combine_all_reduce", group)
    raise NotImplementedError(
        "combine_all_reduce: not implemented yet (README step 6: all-reduce MAX of a copy of m, "
        "rescale denom and acc by exp(m - max) on each rank, all-reduce SUM, divide once)"
    )


def combine_all_gather(m, denom, acc, group=None):
    """The same output as ``combine_all_reduce``, by one all-gather of every rank's ``(out, lse)``
    followed by lab 04-04's merge over the ranks, on every rank. Same arguments and result."""
    _check_summaries("combine_all_gather", m, denom, acc)
    out, lse = to_out_lse(m, denom, acc)
    world_size = _world_size("combine_all_gather", group)
    mine = torch.cat([out, lse.unsqueeze(-1)], dim=-1).contiguous()  # [batch, num_heads, head_dim + 1]
    gathered = [torch.empty_like(mine) for _ in range(world_size)]
    dist.all_gather(gathered, mine, group=group)
    every = torch.stack(gathered)  # [world_size, batch, num_heads, head_dim + 1]
    return _merge_over_ranks(*from_out_lse(every[..., :-1], every[..., -1]))


# ---------------------------------------------------------------------------------------------
# Step 7: what each combine sends.


def combine_bytes(method, world_size, batch, num_heads, head_dim, itemsize=4):
    """Bytes that one decode step's combine sends over the links, all ranks together, when each
    collective runs as a ring. ``method``: ``"all_gather"`` (every rank's ``(out, lse)``, ``head_dim
    + 1`` numbers per (sequence, head)) or ``"all_reduce"`` (an all-reduce of ``m``, then one of
    ``(denom, acc)``, ``head_dim + 1`` numbers). ``itemsize``: bytes per number. An exact int.
    """
    # (check method against METHODS and the counts with _check_count first)
    raise NotImplementedError(
        "combine_bytes: not implemented yet (README step 7: count what a ring moves: an all-gather "
        "forwards every piece world_size - 1 times, an all-reduce sends 2 (world_size - 1) times its "
        "tensor)"
    )


# ---------------------------------------------------------------------------------------------
# Given ready-made in the starter: the merge over ranks and the input checks.


def _merge_over_ranks(m, denom, acc):
    """Lab 04-04's merge of the summaries ``m, denom [world_size, ...]``, ``acc [world_size, ...,
    head_dim]`` along their first axis, written in torch, then the division; zeros where no rank
    saw a key."""
    top = m.amax(dim=0)
    reference = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    weight = torch.exp(m - reference)  # 0 for a rank that saw no key
    total_denom = (weight * denom).sum(dim=0)
    total_acc = (weight.unsqueeze(-1) * acc).sum(dim=0)
    return total_acc / torch.where(total_denom > 0, total_denom, torch.ones_like(total_denom)).unsqueeze(-1)


def _check_count(name, value, allow_zero=False) -> None:
    low = 0 if allow_zero else 1
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def _as_positions(positions) -> np.ndarray:
    array = np.asarray(positions)
    if array.dtype.kind not in "iu":
        raise ValueError(f"positions must be integers, got dtype {array.dtype}")
    if array.size and array.min() < 0:
        raise ValueError(f"positions must be >= 0, got {int(array.min())}")
    return array.astype(np.int64)


def _as_lengths(seq_lens) -> np.ndarray:
    array = np.asarray(seq_lens)
    if array.ndim != 1 or array.dtype.kind not in "iu":
        raise ValueError(f"seq_lens must be a 1-D integer array, got {array.dtype} of shape {array.shape}")
    if array.size and array.min() < 0:
        raise ValueError(f"seq_lens must be >= 0, got {int(array.min())}")
    return array.astype(np.int64)


def _as_rank_tables(rank_block_tables) -> np.ndarray:
    tables = np.asarray(rank_block_tables)
    if tables.ndim != 2 or tables.dtype.kind not in "iu" or tables.shape[0] == 0:
        raise ValueError(
            "rank_block_tables must be integers [world_size >= 1, max_blocks], "
            f"got {tables.dtype} of shape {tables.shape}"
        )
    return tables


def _check_table_width(tables, ranks, local_blocks) -> None:
    """A clear error when a token's local block lies past the end of its rank's table."""
    if local_blocks.size and local_blocks.max() >= tables.shape[1]:
        i = int(np.argmax(local_blocks))
        raise ValueError(
            f"rank_block_tables has {tables.shape[1]} columns, but a token needs local block "
            f"{int(local_blocks[i])} of rank {int(ranks[i])}"
        )


def _as_f64(x) -> np.ndarray:
    """A float64 numpy copy of a numpy array, a list or a torch tensor (on any device)."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().double().numpy()
    return np.array(x, dtype=np.float64)


def _check_rank_inputs(q, k_cache, v_cache, block_tables, seq_lens):
    """The inputs of ``rank_summaries`` as numpy arrays (float64 for the numbers), or a ValueError
    naming the argument that is wrong. Never copies into the caller's arrays."""
    q, k_cache, v_cache = (_as_f64(x) for x in (q, k_cache, v_cache))
    block_tables, seq_lens = np.asarray(block_tables), np.asarray(seq_lens)
    if q.ndim != 3:
        raise ValueError(f"q must be [batch, num_heads, head_dim], got shape {q.shape}")
    if k_cache.ndim != 4 or k_cache.shape != v_cache.shape:
        raise ValueError(
            "k_cache and v_cache must both be [num_blocks, block_size, num_kv_heads, head_dim], "
            f"got {k_cache.shape} and {v_cache.shape}"
        )
    batch, num_heads, head_dim = q.shape
    num_blocks, block_size, num_kv_heads, cache_dim = k_cache.shape
    if cache_dim != head_dim:
        raise ValueError(f"q has head_dim {head_dim}, k_cache and v_cache {cache_dim}")
    if num_kv_heads == 0 or num_heads % num_kv_heads:
        raise ValueError(f"num_heads={num_heads} must be a multiple of num_kv_heads={num_kv_heads}")
    if block_tables.ndim != 2 or block_tables.shape[0] != batch or block_tables.dtype.kind not in "iu":
        raise ValueError(
            f"block_tables must be integers [batch={batch}, max_blocks], got {block_tables.dtype} "
            f"of shape {block_tables.shape}"
        )
    if seq_lens.shape != (batch,) or seq_lens.dtype.kind not in "iu":
        raise ValueError(f"seq_lens must be integers [batch={batch}], got {seq_lens.dtype} of shape {seq_lens.shape}")
    seq_lens = seq_lens.astype(np.int64)
    capacity = block_tables.shape[1] * block_size
    if batch and (seq_lens.min() < 0 or seq_lens.max() > capacity):
        raise ValueError(
            f"seq_lens must lie in [0, max_blocks * block_size = {capacity}], "
            f"got values from {int(seq_lens.min())} to {int(seq_lens.max())}"
        )
    used = np.arange(block_tables.shape[1]) < -(-seq_lens[:, None] // block_size)
    ids = block_tables[used]
    if ids.size and (ids.min() < 0 or ids.max() >= num_blocks):
        raise ValueError(
            f"block_tables holds block ids outside [0, {num_blocks}) among the blocks in use "
            f"(from {int(ids.min())} to {int(ids.max())})"
        )
    return q, k_cache, v_cache, block_tables.astype(np.int64), seq_lens


def _check_summaries(fn, m, denom, acc) -> None:
    for name, t in (("m", m), ("denom", denom), ("acc", acc)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{fn}: {name} must be a torch.Tensor (torch.from_numpy(...)), got {type(t).__name__}")
    if not m.dtype.is_floating_point or denom.dtype != m.dtype or acc.dtype != m.dtype:
        raise ValueError(
            f"{fn}: m, denom and acc must share one floating dtype, got {m.dtype}, {denom.dtype}, {acc.dtype}"
        )
    if m.dim() != 2 or denom.shape != m.shape or acc.dim() != 3 or acc.shape[:2] != m.shape:
        raise ValueError(
            f"{fn}: m and denom must be [batch, num_heads] and acc [batch, num_heads, head_dim], "
            f"got {tuple(m.shape)}, {tuple(denom.shape)}, {tuple(acc.shape)}"
        )
    if len({m.device, denom.device, acc.device}) > 1:
        raise ValueError(f"{fn}: m, denom and acc must be on one device, got {m.device}, {denom.device}, {acc.device}")


def _check_out_lse(out, lse) -> None:
    for name, t in (("out", out), ("lse", lse)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"from_out_lse: {name} must be a torch.Tensor, got {type(t).__name__}")
    if not out.dtype.is_floating_point or lse.dtype != out.dtype:
        raise ValueError(f"from_out_lse: out and lse must share one floating dtype, got {out.dtype} and {lse.dtype}")
    if out.dim() < 1 or lse.shape != out.shape[:-1]:
        raise ValueError(f"from_out_lse: out must be [..., head_dim] and lse [...], got {tuple(out.shape)} "
                         f"and {tuple(lse.shape)}")


def _world_size(fn, group) -> int:
    """The size of ``group``, or a clear error when there is no process group to talk to."""
    if not dist.is_available() or not dist.is_initialized():
        raise ValueError(
            f"{fn}: no process group: every rank must call torch.distributed.init_process_group first "
            "(the tests' _ranks.py and lab.py do)"
        )
    return dist.get_world_size(group)
