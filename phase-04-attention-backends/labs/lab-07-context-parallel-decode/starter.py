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
``combine_all_gather`` (read it: it is the other way to combine) and the merge over ranks it uses, at
the bottom; and the input checks, imported from ``_checks.py`` below: call them first (each stub
shows which), so that bad input gets a clear message.
"""

from __future__ import annotations

import numpy as np  # noqa: F401  (yours to use)
import torch
import torch.distributed as dist
from _checks import (  # noqa: F401  (given: the input checks, in _checks.py; call them first)
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
    # positions = _as_positions(positions)
    # world_size = _check_count("world_size", world_size)  (Python ints: a numpy uint64 would make float64)
    # stripe = _check_count("stripe", stripe)
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
    # world_size = _check_count("world_size", world_size)
    # stripe = _check_count("stripe", stripe)
    # _check_round(world_size, stripe)
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
    # block_size = _check_count("block_size", block_size)
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
    ``exp(score)``, ``[...]``), new torch tensors of the summary's dtype (any floating dtype). A
    summary of no key (``denom = 0``) gives ``out = 0`` and ``lse = -inf``. The inputs are left
    unchanged.
    """
    # _check_summaries("to_out_lse", m, denom, acc)
    raise NotImplementedError(
        "to_out_lse: not implemented yet (README step 5: out = acc / denom, lse = m + log(denom); "
        "where denom is 0, out = 0 and lse = -inf, never 0/0)"
    )


def from_out_lse(out, lse):
    """``(out, lse)`` back to a summary ``(m, denom, acc)`` that merges like the original:
    ``(lse, 1, out)``, and exactly ``(-inf, 0, zeros)`` where ``lse`` is ``-inf`` or ``+inf`` (as
    FlashAttention-2 reports a set of no key), whatever ``out`` holds there (a kernel may leave NaN).
    New tensors of ``out``'s dtype: none shares memory with ``out`` or ``lse``, which are left
    unchanged."""
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
    ``torch.from_numpy``, or views of any strides, such as a kernel's lse stored heads first; what a
    collective gets is contiguous, as NCCL requires). Every rank of ``group`` (default: the whole
    world) calls this with its own summary; every rank gets the same ``out [batch, num_heads,
    head_dim]``, of ``acc``'s dtype: ``sum_r exp(m_r - M) acc_r / sum_r exp(m_r - M) denom_r`` with
    ``M = max_r m_r``, zeros where no rank holds a token. Two collectives: an all-reduce (MAX) of
    ``m``, then one all-reduce (SUM) of the rescaled ``denom`` and ``acc`` together. The inputs are
    left unchanged.
    """
    # _check_summaries("combine_all_reduce", m, denom, acc)
    # _world_size("combine_all_reduce", group)
    raise NotImplementedError(
        "combine_all_reduce: not implemented yet (README step 6: all-reduce MAX of a contiguous copy of m, "
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
    # world_size, batch, num_heads, head_dim, itemsize = _check_combine_bytes_args(
    #     method, world_size, batch, num_heads, head_dim, itemsize)  (batch may be 0; exact Python integers)
    raise NotImplementedError(
        "combine_bytes: not implemented yet (README step 7: count what a ring moves: an all-gather "
        "forwards every piece world_size - 1 times, an all-reduce sends 2 (world_size - 1) times its "
        "tensor)"
    )


# ---------------------------------------------------------------------------------------------
# Given ready-made: the merge over ranks that combine_all_gather uses.


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
