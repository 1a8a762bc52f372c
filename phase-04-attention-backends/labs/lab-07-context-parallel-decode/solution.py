"""Lab 04-07 reference solution: decode with the KV cache split across ranks (context parallelism).

Each rank (one process; on GPUs, one GPU) keeps a shard of every sequence's tokens in its own block
pool, with its own block table. A decode step then runs in two halves:

- **compute**, on each rank alone: attention of the step's query over the tokens the rank holds,
  kept as lab 04-04's unnormalized summary ``(m, denom, acc)`` per (sequence, query head);
- **communicate**: the ranks combine their summaries with ``torch.distributed`` collectives, and
  every rank ends with the attention output over the whole sequence.

The layout deals tokens to the ranks in stripes of ``stripe`` consecutive tokens, round robin::

    s = t // stripe                                   the stripe that holds token t
    rank(t)  = s % world_size
    local(t) = (s // world_size) * stripe + t % stripe   its position among the rank's tokens

``stripe = block_size`` is the block-interleaved layout (logical block ``b`` on rank ``b %
world_size``); ``stripe = 1`` interleaves single tokens, as vLLM's decode context parallelism does
by default (its ``cp_kv_cache_interleave_size`` is this stripe); ``stripe >= ceil(seq_len /
world_size)`` is a contiguous split (rank ``t // stripe``).

The compute half is numpy float64, built on lab 04-04's ``attend_partial``; the communicate half is
torch, so that the same functions run on CPU tensors with ``gloo`` and on GPU tensors with ``nccl``.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist
from _checks import (  # the given input checks (_checks.py), shared with the starter
    _as_lengths,
    _as_positions,
    _as_rank_tables,
    _check_combine_bytes_args,
    _check_count,
    _check_out_lse,
    _check_rank_inputs,
    _check_round,
    _check_summaries,
    _check_table_width,
    _world_size,
)

import labkit

# Lab 04-04's summary of one query over a set of keys: (m, denom, acc), (-inf, 0, zeros) for no key.
attend_partial = labkit.load_reference("04-04").attend_partial


# ---------------------------------------------------------------------------------------------
# Steps 1-3: where each token lives.


def token_owner(positions, world_size, stripe):
    """Which rank holds each token, and where among that rank's tokens.

    ``positions``: int array of token positions ``t >= 0`` in one sequence. Tokens are dealt to
    ``world_size`` ranks in stripes of ``stripe`` consecutive tokens, round robin; each rank packs
    the tokens it receives in order. Returns ``(ranks, local_positions)``, int64 arrays shaped like
    ``positions``.
    """
    positions = _as_positions(positions)
    world_size = _check_count("world_size", world_size)  # a Python int: a numpy uint64 would make float64
    stripe = _check_count("stripe", stripe)
    stripe_index = positions // stripe
    ranks = stripe_index % world_size
    # Before this stripe the rank received stripe_index // world_size whole stripes.
    local_positions = (stripe_index // world_size) * stripe + positions % stripe
    return ranks, local_positions


def local_seq_lens(seq_lens, world_size, stripe):
    """How many tokens of each sequence each rank holds: int64 ``[world_size, batch]``.

    ``seq_lens``: int ``[batch]``, each ``>= 0``. Row ``r`` is what rank ``r`` passes as its
    ``seq_lens`` to ``rank_summaries``; each column sums to the sequence's length. Ranks may hold
    nothing (short sequences), and ``world_size`` need not divide anything.
    """
    seq_lens = _as_lengths(seq_lens)
    world_size = _check_count("world_size", world_size)
    stripe = _check_count("stripe", stripe)
    _check_round(world_size, stripe)
    round_tokens = stripe * world_size  # one round of dealing: one stripe for every rank
    full_rounds = seq_lens // round_tokens
    rest = seq_lens - full_rounds * round_tokens  # the last, partial round goes to the first ranks
    ranks = np.arange(world_size, dtype=np.int64)[:, None]
    return full_rounds * stripe + np.clip(rest - ranks * stripe, 0, stripe)


def shard_slot_mapping(positions, rank_block_tables, block_size, stripe):
    """Where each token of one sequence is written: ``(ranks, slots)``, int64 like ``positions``.

    ``rank_block_tables``: int ``[world_size, max_blocks]``, row ``r`` this sequence's block table
    on rank ``r`` (its local logical block ``j`` is physical block ``rank_block_tables[r, j]`` of
    rank ``r``'s pool). Token ``t`` goes to slot ``block * block_size + offset`` of the cache of rank
    ``ranks[i]``, its block and offset taken from its position among that rank's tokens.
    """
    positions = _as_positions(positions)
    tables = _as_rank_tables(rank_block_tables)
    block_size = _check_count("block_size", block_size)
    world_size = tables.shape[0]
    ranks, local = token_owner(positions, world_size, stripe)
    local_blocks = local // block_size
    _check_table_width(tables, ranks, local_blocks)
    # The rank's own table, indexed by the rank's own (local) block number.
    blocks = tables[ranks, local_blocks].astype(np.int64)
    return ranks, blocks * block_size + local % block_size


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
    q, k_cache, v_cache, block_tables, seq_lens = _check_rank_inputs(q, k_cache, v_cache, block_tables, seq_lens)
    batch, num_heads, head_dim = q.shape
    _, block_size, num_kv_heads, _ = k_cache.shape
    group = num_heads // num_kv_heads
    m = np.empty((batch, num_heads))
    denom = np.empty((batch, num_heads))
    acc = np.empty((batch, num_heads, head_dim))
    for b in range(batch):
        # The rank's tokens of sequence b, through its own table: never a slot past seq_lens[b].
        local = np.arange(seq_lens[b])
        blocks = block_tables[b, local // block_size]
        keys = k_cache[blocks, local % block_size]  # [n, num_kv_heads, head_dim]
        values = v_cache[blocks, local % block_size]
        for h in range(num_heads):
            kv = h // group  # consecutive query heads share a KV head
            m[b, h], denom[b, h], acc[b, h] = attend_partial(q[b, h], keys[:, kv], values[:, kv])
    return m, denom, acc


# ---------------------------------------------------------------------------------------------
# Step 5: the (out, lse) encoding of a summary.


def to_out_lse(m, denom, acc):
    """The summary ``(m, denom, acc)`` as ``(out, lse)``: ``out = acc / denom`` (the rank's own
    attention output, ``[..., head_dim]``) and ``lse = m + log(denom)`` (the log of the sum of
    ``exp(score)``, ``[...]``), new torch tensors of the summary's dtype (any floating dtype). A
    summary of no key (``denom = 0``) gives ``out = 0`` and ``lse = -inf``. The inputs are left
    unchanged.
    """
    _check_summaries("to_out_lse", m, denom, acc)
    seen = denom > 0
    safe_denom = torch.where(seen, denom, torch.ones_like(denom))
    out = acc / safe_denom.unsqueeze(-1)  # acc is zeros where nothing was seen
    lse = torch.where(seen, m + torch.log(safe_denom), torch.full_like(m, -torch.inf))
    return out, lse


def from_out_lse(out, lse):
    """``(out, lse)`` back to a summary ``(m, denom, acc)`` that merges like the original:
    ``(lse, 1, out)``, and exactly ``(-inf, 0, zeros)`` where ``lse`` is ``-inf`` or ``+inf`` (as
    FlashAttention-2 reports a set of no key), whatever ``out`` holds there (a kernel may leave NaN).
    New tensors of ``out``'s dtype: none shares memory with ``out`` or ``lse``, which are left
    unchanged."""
    _check_out_lse(out, lse)
    seen = torch.isfinite(lse)  # -inf, or FlashAttention-2's +inf: no key
    # (m, denom, acc) and (m + c, denom * exp(-c), acc * exp(-c)) describe the same keys for any c;
    # c = log(denom) makes the denominator 1 and the accumulator the output.
    m = torch.where(seen, lse, torch.full_like(lse, -torch.inf))
    acc = torch.where(seen.unsqueeze(-1), out, torch.zeros_like(out))  # out may hold anything where no key
    return m, seen.to(out.dtype), acc


# ---------------------------------------------------------------------------------------------
# Step 6: combine the ranks' summaries.


def combine_all_reduce(m, denom, acc, group=None):
    """Attention output over every rank's tokens, from this rank's summary, by two all-reduces.

    ``m``, ``denom`` ``[batch, num_heads]`` and ``acc`` ``[batch, num_heads, head_dim]``: torch
    tensors of one floating dtype on the rank's device (``rank_summaries``' arrays through
    ``torch.from_numpy``, or views of any strides, such as a kernel's lse stored heads first; what a
    collective gets is contiguous, as NCCL requires). Every rank of ``group`` (default: the whole
    world) calls this with its own summary; every rank gets the same ``out [batch, num_heads,
    head_dim]``, of ``acc``'s dtype: ``sum_r exp(m_r - M) acc_r / sum_r exp(m_r - M) denom_r`` with
    ``M = max_r m_r``, zeros where no rank holds a token. Two collectives: an all-reduce (MAX) of
    ``m``, then one all-reduce (SUM) of the rescaled ``denom`` and ``acc`` together. The inputs are
    left unchanged.
    """
    _check_summaries("combine_all_reduce", m, denom, acc)
    _world_size("combine_all_reduce", group)
    # all_reduce works in place, so never on the caller's tensor; and on a contiguous copy, which NCCL
    # requires (a plain clone keeps the strides of a view, such as a kernel's lse [num_heads, batch] transposed).
    global_m = m.clone(memory_format=torch.contiguous_format)
    dist.all_reduce(global_m, op=dist.ReduceOp.MAX, group=group)
    # Where no rank saw a key, global_m is -inf and m - global_m would be NaN: any finite
    # reference does, since every factor exp(-inf - reference) is then 0.
    reference = torch.where(torch.isfinite(global_m), global_m, torch.zeros_like(global_m))
    scale = torch.exp(m - reference)  # <= 1: no overflow, whatever the scores; 0 for an empty shard
    # Rescaled to the shared max, the ranks' sums simply add: one collective for both of them.
    sums = torch.cat([(denom * scale).unsqueeze(-1), acc * scale.unsqueeze(-1)], dim=-1)
    dist.all_reduce(sums, op=dist.ReduceOp.SUM, group=group)
    total_denom, total_acc = sums[..., 0], sums[..., 1:]
    return total_acc / torch.where(total_denom > 0, total_denom, torch.ones_like(total_denom)).unsqueeze(-1)


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
    # The counts as Python integers (numpy's would wrap around past int64): the answer is exact.
    world_size, batch, num_heads, head_dim, itemsize = _check_combine_bytes_args(
        method, world_size, batch, num_heads, head_dim, itemsize)
    pairs = batch * num_heads  # one summary per (sequence, query head)
    if method == "all_gather":
        # A ring passes each rank's piece on world_size - 1 times: every other rank receives it once.
        return world_size * (world_size - 1) * pairs * (head_dim + 1) * itemsize
    # A ring all-reduce of n numbers is a reduce-scatter then an all-gather; in each, every one of the
    # world_size chunks of the tensor crosses world_size - 1 links: 2 (world_size - 1) n in all.
    numbers = pairs * 1 + pairs * (head_dim + 1)  # the MAX of m, then the SUM of (denom, acc)
    return 2 * (world_size - 1) * numbers * itemsize


# ---------------------------------------------------------------------------------------------
# Given ready-made in the starter too: the merge over ranks that combine_all_gather uses.


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
