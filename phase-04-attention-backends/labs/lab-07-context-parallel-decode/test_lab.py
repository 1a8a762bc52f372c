"""Lab 04-07 tests: decode with the KV cache split across ranks.

Run against your work with ``LAB_IMPL=starter pytest <this folder>``.

Most tests call one function in this process, without any process group, and compare it with a
float64 truth computed here first:

- the layout (``token_owner``, ``local_seq_lens``, ``shard_slot_mapping``) against ``dealt``, which
  deals stripes of tokens to the ranks by hand;
- ``rank_summaries`` against ``summary_f64``, the definition of ``(m, denom, acc)`` evaluated over
  the tokens gathered from the rank's cache by ``labkit.gather_f64``;
- the ``(out, lse)`` encoding against dense attention (``labkit.attention_f64``) and the
  log-sum-exp of the scores (``np.logaddexp.reduce``), both from the raw keys;
- ``combine_bytes`` against a step-by-step count of ring collectives.

The distributed tests run ``_ranks.py`` as a child process (``labkit.testing.child``): it starts 1,
2 and 4 ranks with the ``gloo`` backend (``LAB_DIST_BACKEND=nccl``: one GPU per rank), and each rank
runs the implementation under test on its shard of the cases in ``_ranks.CASES`` and sends back its
outputs: data only. The truth is dense attention over each sequence's keys and values, which this
process rebuilds with ``_ranks.build_case`` (fixed seeds), never from the ranks' shards. Every
unused cache slot holds poison (huge, NaN or inf); tables have padding columns pointing at a
poisoned block, or none.

Tolerance: everything is float64. A summary is a sum over at most 70 tokens of O(1) terms, so
reordering it moves a result by ~1e-14. The log-sum-exp route of the all-gather adds one rounding
of ``lse``; near 1000 a float64 ulp is 1.1e-13, which moves the weights by that relative amount and
outputs with |v| <= 5 by < 1e-12. ``ATOL = 1e-11`` keeps a margin and is eight orders of magnitude
below what any classic bug changes (>= 1e-3).
"""

from __future__ import annotations

import math
import os
import re
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

import labkit
from labkit.testing import child
from labkit.testing.cases import random_block_tables, random_paged_cache

torch = pytest.importorskip("torch", reason='needs torch: pip install -e ".[torch]" (CPU build: see SETUP.md)')

HERE = Path(__file__).resolve().parent
ATOL = 1e-11
# dtype objects, not numpy's scalar classes: labkit's dtype check reads np.dtype(...) reliably.
I64, F64 = np.dtype(np.int64), np.dtype(np.float64)
AXES = ("sequence", "head", "dim")
BACKEND = os.environ.get("LAB_DIST_BACKEND", "gloo")
METHODS = ("all_gather", "all_reduce")


# The launcher script: its case builder (fixed seeds) and result layout; and the child helper it uses.
ranks_script = child.script_module(HERE / "_ranks.py")


# ------------------------------------------------------------------------------------------
# The brute force.


def dealt(seq_len: int, world_size: int, stripe: int) -> list[tuple[int, int]]:
    """``(rank, local position)`` of each token: deal stripes to the ranks in turn, like cards,
    then number each rank's hand in order."""
    hands = [[] for _ in range(world_size)]
    for i, start in enumerate(range(0, seq_len, stripe)):
        hands[i % world_size].extend(range(start, min(start + stripe, seq_len)))
    owner = {t: (rank, local) for rank, hand in enumerate(hands) for local, t in enumerate(hand)}
    return [owner[t] for t in range(seq_len)]


def summary_f64(q, keys, values):
    """``(m, denom, acc)`` of one query head over ``keys, values [n, d]``, from the definition."""
    if len(keys) == 0:
        return -math.inf, 0.0, np.zeros(values.shape[1])
    scores = np.array([np.dot(q, k) for k in keys]) / math.sqrt(len(q))
    m = scores.max()
    weights = np.exp(scores - m)
    return m, weights.sum(), weights @ values


def rank_case(seed, seq_lens, num_heads=4, num_kv_heads=2, head_dim=8, block_size=4, poison="huge",
              spare_columns=0):
    """One rank's inputs, all read-only: q, a scattered pool (twice the blocks in use) whose every
    unused slot holds ``poison``, tables whose entries past a sequence's blocks (``spare_columns``
    more columns, and the short sequences' tails) point at a block that holds only poison, and the
    local lengths."""
    rng = np.random.default_rng(seed)
    tables, num_blocks = random_block_tables(rng, seq_lens, block_size, pad=-1)
    tables = np.concatenate([tables, np.full((len(seq_lens), spare_columns), -1, np.int32)], axis=1)
    spare = min(set(range(num_blocks)) - set(tables.ravel().tolist()))  # exists: the pool is twice the need
    tables[tables < 0] = spare
    k_cache, v_cache = random_paged_cache(rng, num_blocks, block_size, num_kv_heads, head_dim)
    for cache in (k_cache, v_cache):
        labkit.poison_unused_slots(cache, tables, seq_lens, kind=poison)
    q = rng.standard_normal((len(seq_lens), num_heads, head_dim))
    inputs = (q, k_cache, v_cache, tables, np.array(seq_lens, dtype=I64))
    for x in inputs:
        x.flags.writeable = False
    return inputs


def expected_summaries(q, k_cache, v_cache, tables, seq_lens):
    """``summary_f64`` of every (sequence, query head) over the tokens gathered through the table."""
    batch, num_heads, head_dim = q.shape
    group = num_heads // k_cache.shape[2]
    m, denom, acc = np.empty((batch, num_heads)), np.empty((batch, num_heads)), np.empty((batch, num_heads, head_dim))
    for b in range(batch):
        keys = labkit.gather_f64(k_cache, tables[b], int(seq_lens[b]))
        values = labkit.gather_f64(v_cache, tables[b], int(seq_lens[b]))
        for h in range(num_heads):
            m[b, h], denom[b, h], acc[b, h] = summary_f64(q[b, h], keys[:, h // group], values[:, h // group])
    return m, denom, acc


def assert_summaries_close(actual, expected, what):
    """Summaries entry by entry, float64; where no token was seen, exactly (-inf, 0, zeros)."""
    __tracebackhide__ = True
    m, denom, acc = actual
    m_exp, denom_exp, acc_exp = expected
    empty = m_exp == -np.inf
    labkit.assert_dtype(m, F64, what=f"{what}: m")
    assert np.shape(m) == m_exp.shape, f"{what}: m has shape {np.shape(m)}, expected {m_exp.shape}"
    assert (np.asarray(m)[empty] == -np.inf).all(), f"{what}: m must be -inf where the rank holds no token"
    labkit.assert_close(np.where(empty, 0.0, m), np.where(empty, 0.0, m_exp), atol=ATOL, rtol=1e-13,
                        axes=AXES[:2], what=f"{what}: m (the largest score)", dtype=F64)
    labkit.assert_close(denom, denom_exp, atol=ATOL, rtol=1e-13, axes=AXES[:2],
                        what=f"{what}: denom (sum of exp(score - m), not normalized)", dtype=F64)
    labkit.assert_close(acc, acc_exp, atol=ATOL, rtol=1e-13, axes=AXES,
                        what=f"{what}: acc (sum of exp(score - m) * v, not divided by denom)", dtype=F64)


# ------------------------------------------------------------------------------------------
# Steps 1-3: the layout.

LAYOUTS = [  # (world_size, stripe, seq_len): block-interleaved, token-interleaved, contiguous, odd
    pytest.param(2, 4, 37, id="2 ranks, stripe = block of 4"),
    pytest.param(4, 4, 37, id="4 ranks, stripe = block of 4"),
    pytest.param(3, 1, 20, id="3 ranks, token-interleaved"),
    pytest.param(2, 19, 37, id="2 ranks, contiguous halves"),
    pytest.param(4, 10, 37, id="4 ranks, contiguous, last rank short"),
    pytest.param(4, 3, 50, id="4 ranks, stripe of 3 tokens"),
    pytest.param(5, 4, 7, id="5 ranks, 7 tokens: 3 empty ranks"),
    pytest.param(1, 4, 9, id="1 rank"),
]


@pytest.mark.parametrize(("world_size", "stripe", "seq_len"), LAYOUTS)
def test_token_owner_deals_stripes_round_robin(lab, world_size, stripe, seq_len):
    """Every token's rank and local position, against dealing the stripes by hand, for
    block-interleaved, token-interleaved, contiguous and odd stripes, ranks that do not divide
    the sequence and ranks left empty. Positions come shuffled, as int32, read-only.

    Catches: ceil instead of floor at stripe boundaries (tokens on the next rank), the rank taken
    without ``% world_size`` (right only for a contiguous split), the local position of token
    interleaving (``t // world_size``) used for any stripe, the local position without the
    earlier rounds (``t % stripe``)."""
    owners = dealt(seq_len, world_size, stripe)
    order = np.random.default_rng(seq_len).permutation(seq_len).astype(np.int32)
    order.flags.writeable = False
    ranks, local = lab.token_owner(order, world_size, stripe)
    labkit.assert_equal(ranks, np.array([owners[t][0] for t in order]), what="ranks", dtype=I64)
    labkit.assert_equal(local, np.array([owners[t][1] for t in order]), what="local_positions", dtype=I64)


def test_token_owner_interleaves_single_tokens_like_vllm(lab):
    """vLLM's decode context parallelism (v0.10.2) keeps token i on rank i % world_size: with 2
    ranks and 9 tokens, rank 0 holds 0, 2, 4, 6, 8 and rank 1 holds 1, 3, 5, 7 (hand-written).

    Catches: any formula that is not the stripe-1 case of the layout."""
    ranks, local = lab.token_owner(np.arange(9), 2, 1)
    labkit.assert_equal(ranks, np.array([0, 1, 0, 1, 0, 1, 0, 1, 0]), what="ranks")
    labkit.assert_equal(local, np.array([0, 0, 1, 1, 2, 2, 3, 3, 4]), what="local_positions")


@pytest.mark.parametrize(("world_size", "stripe"), [(2, 4), (4, 4), (3, 1), (4, 3), (5, 7), (1, 4)])
def test_local_seq_lens_count_each_ranks_tokens(lab, world_size, stripe):
    """Tokens per (rank, sequence) for every length from 0 to three rounds and a bit, against
    counting the dealt hands; each column sums to the length.

    Catches: a remainder not clipped to [0, stripe] (negative counts on late ranks, or the whole
    remainder on rank 0), an even split ``seq_len // world_size`` that ignores stripes, the
    remainder given to the last ranks."""
    seq_lens = np.arange(3 * world_size * stripe + 3)
    seq_lens.flags.writeable = False
    expected = np.zeros((world_size, len(seq_lens)), dtype=I64)
    for b, n in enumerate(seq_lens):
        for rank, _ in dealt(int(n), world_size, stripe):
            expected[rank, b] += 1
    got = lab.local_seq_lens(seq_lens, world_size, stripe)
    labkit.assert_equal(got, expected, axes=("rank", "sequence"), what="local_seq_lens", dtype=I64)


@pytest.mark.parametrize(("world_size", "stripe", "block_size", "spare_columns"), [
    pytest.param(2, 4, 4, 0, id="block-interleaved"),
    pytest.param(4, 4, 4, 2, id="block-interleaved, padded tables"),
    pytest.param(3, 1, 4, 1, id="token-interleaved"),
    pytest.param(2, 3, 4, 0, id="stripe 3, blocks of 4"),
    pytest.param(2, 24, 8, 1, id="contiguous"),
])
def test_shard_slot_mapping_uses_each_ranks_own_table(lab, world_size, stripe, block_size, spare_columns):
    """Each token's (rank, slot) in a 45-token sequence: the rank from the dealt hands, the slot
    from that rank's own table at the token's local block and offset. Every rank's table is its
    own shuffled pool, padded with -1 when ``spare_columns`` > 0.

    Catches: the table indexed with the global block number ``t // block_size``, the offset taken
    from the global position (right only when the stripe is a multiple of the block size), one
    rank's table used for every rank."""
    seq_len = 45
    rng = np.random.default_rng(stripe + block_size)
    owners = dealt(seq_len, world_size, stripe)
    counts = [sum(r == rank for r, _ in owners) for rank in range(world_size)]
    width = -(-max(counts) // block_size) + spare_columns
    tables = np.full((world_size, width), -1, dtype=np.int32)
    for rank, n in enumerate(counts):
        need = -(-n // block_size)
        tables[rank, :need] = rng.permutation(3 * need + 5)[:need]  # rank r's own pool of block ids
    tables.flags.writeable = False
    expected_slots = np.array([tables[r, local // block_size] * block_size + local % block_size for r, local in owners])
    ranks, slots = lab.shard_slot_mapping(np.arange(seq_len), tables, block_size, stripe)
    labkit.assert_equal(ranks, np.array([r for r, _ in owners]), what="ranks", dtype=I64)
    labkit.assert_equal(slots, expected_slots, what="slots", dtype=I64)


def test_layout_rejects_bad_input(lab):
    """Clear ValueErrors naming the argument: no ranks, an empty stripe, negative or fractional
    positions, negative lengths, a table too narrow for a rank's tokens. (The checks are given.)"""
    with pytest.raises(ValueError, match="world_size"):
        lab.token_owner(np.arange(4), 0, 4)
    with pytest.raises(ValueError, match="stripe"):
        lab.token_owner(np.arange(4), 2, 0)
    with pytest.raises(ValueError, match="positions"):
        lab.token_owner(np.array([3, -1]), 2, 4)
    with pytest.raises(ValueError, match="positions"):
        lab.token_owner(np.array([0.5]), 2, 4)
    with pytest.raises(ValueError, match="seq_lens"):
        lab.local_seq_lens(np.array([4, -2]), 2, 4)
    with pytest.raises(ValueError, match="rank_block_tables"):
        lab.shard_slot_mapping(np.arange(20), np.zeros((2, 2), dtype=np.int32), 4, 4)  # rank 0 needs 3 blocks


# ------------------------------------------------------------------------------------------
# Step 4: one rank's summaries.


@pytest.mark.parametrize("poison", labkit.POISON_KINDS)
@pytest.mark.parametrize("spare_columns", [0, 2], ids=["tables without padding", "padded tables"])
def test_rank_summaries_match_the_definition(lab, poison, spare_columns):
    """(m, denom, acc) of every (sequence, query head) over the rank's tokens: a ragged batch
    with GQA (4 query heads on 2 KV heads), an empty shard, lengths that end inside a block;
    every unused slot and the padding's block hold poison.

    Catches: normalizing (acc / denom) on the rank, reading the whole last block (poison), query
    head h on KV head h % num_kv_heads, m = 0 instead of -inf for an empty shard."""
    inputs = rank_case(7, [13, 0, 4, 1, 9], spare_columns=spare_columns, poison=poison)
    expected = expected_summaries(*inputs)
    assert_summaries_close(lab.rank_summaries(*inputs), expected, what=f"rank_summaries ({poison} poison)")


def test_rank_summaries_of_an_empty_shard_are_identities(lab):
    """A rank that holds no token of any sequence (short sequences, many ranks) returns exactly
    (-inf, 0.0, zeros) for every (sequence, head), the summary of nothing.

    Catches: m = 0 instead of -inf (the rank "saw" a score of 0), NaN from an empty softmax."""
    q, k_cache, v_cache, tables, _ = rank_case(3, [5, 2])
    lens = np.zeros(2, dtype=I64)
    lens.flags.writeable = False
    m, denom, acc = lab.rank_summaries(q, k_cache, v_cache, tables, lens)
    assert (np.asarray(m) == -np.inf).all(), f"m of an empty shard: {m}, expected -inf everywhere"
    labkit.assert_equal(denom, np.zeros((2, 4)), what="denom of an empty shard", dtype=F64)
    labkit.assert_equal(acc, np.zeros((2, 4, 8)), what="acc of an empty shard", dtype=F64)


@pytest.mark.parametrize("level", [1000.0, -1000.0], ids=["scores near +1000", "scores near -1000"])
def test_rank_summaries_survive_extreme_scores(lab, level):
    """Scores near +1000 or -1000 (q = sqrt(16) e_0, so each score is exactly the key's first
    coordinate): finite summaries equal to the definition's.

    Catches: normalizing on the rank, the wrong KV head, reading past the rank's tokens; an exp of
    raw scores would overflow to inf (or underflow to 0 and 0/0)."""
    q, k_cache, v_cache, tables, lens = (np.array(x) for x in rank_case(11, [9, 6], head_dim=16))
    q[:] = 0.0
    q[..., 0] = 4.0
    k_cache[..., 0] = level + np.random.default_rng(1).uniform(0.0, 5.0, k_cache.shape[:3])
    inputs = (q, k_cache, v_cache, tables, lens)
    for x in inputs:
        x.flags.writeable = False
    expected = expected_summaries(*inputs)
    assert_summaries_close(lab.rank_summaries(*inputs), expected, what=f"rank_summaries near {level:+.0f}")


def test_rank_summaries_reject_bad_input(lab):
    """Clear ValueErrors naming the problem: q without a batch axis, heads that do not group, a
    length past the table's capacity, a block id outside the pool. (The checks are given.)"""
    q, k_cache, v_cache, tables, lens = rank_case(5, [6, 3])
    with pytest.raises(ValueError, match="q must be"):
        lab.rank_summaries(q[0], k_cache, v_cache, tables, lens)
    with pytest.raises(ValueError, match="multiple of num_kv_heads"):
        lab.rank_summaries(q[:, :3], k_cache, v_cache, tables, lens)
    with pytest.raises(ValueError, match="seq_lens"):
        lab.rank_summaries(q, k_cache, v_cache, tables, np.array([6, 99]))
    with pytest.raises(ValueError, match="block ids"):
        lab.rank_summaries(q, k_cache, v_cache, np.full_like(tables, k_cache.shape[0]), lens)


# ------------------------------------------------------------------------------------------
# Step 5: (out, lse).


def scored_keys(seed, n, d=16, level=0.0):
    """q and keys whose scores are exactly ``level`` plus the keys' first coordinate."""
    rng = np.random.default_rng(seed)
    q = np.zeros(d)
    q[0] = math.sqrt(d)
    keys, values = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    keys[:, 0] += level
    return q, keys, values


SUMMARY_SETS = [  # per (sequence, head): (seed, number of keys, score level)
    [(1, 5, 0.0), (2, 17, 3.0), (3, 0, 0.0)],
    [(4, 9, 1000.0), (5, 1, -1000.0), (6, 30, -2.0)],
]


def truth_batch(dtype):
    """Summaries (from the definition), dense outputs and log-sum-exps, all [2, 3, ...]."""
    m, denom, acc = np.empty((2, 3)), np.empty((2, 3)), np.empty((2, 3, 16))
    out, lse = np.zeros((2, 3, 16)), np.full((2, 3), -np.inf)
    for b, row in enumerate(SUMMARY_SETS):
        for h, (seed, n, level) in enumerate(row):
            q, keys, values = scored_keys(seed, n, level=level)
            m[b, h], denom[b, h], acc[b, h] = summary_f64(q, keys, values)
            if n:
                out[b, h] = labkit.attention_f64(q, keys, values)
                lse[b, h] = np.logaddexp.reduce(keys @ q / 4.0)
    return [torch.from_numpy(x).to(dtype) for x in (m, denom, acc)], out, lse


def test_to_out_lse_is_the_output_and_the_log_sum_exp(lab):
    """``out`` is the attention output and ``lse`` the log of the sum of exp(score), against dense
    attention and ``np.logaddexp.reduce`` of the raw scores (near 0, +1000 and -1000); no key gives
    (zeros, -inf); float64 in, float64 out; the summaries are left unchanged.

    Catches: ``lse = log(denom)`` without the max, ``out = acc`` (not divided), NaN (0/0) for a
    rank that saw no key, the result in another dtype."""
    summaries, out_exp, lse_exp = truth_batch(torch.float64)
    before = [t.clone() for t in summaries]
    out, lse = lab.to_out_lse(*summaries)
    labkit.assert_close(out, out_exp, atol=ATOL, axes=AXES, what="out", dtype=torch.float64)
    assert torch.equal(torch.isinf(lse), torch.from_numpy(np.isinf(lse_exp))), f"lse must be -inf exactly where " \
        f"no key was seen, got {lse}"
    labkit.assert_close(torch.nan_to_num(lse, neginf=0.0), np.nan_to_num(lse_exp, neginf=0.0), atol=ATOL, rtol=1e-13,
                        axes=AXES[:2], what="lse", dtype=torch.float64)
    for a, b in zip(before, summaries, strict=True):
        assert torch.equal(a, b), "to_out_lse modified its inputs"


def test_to_out_lse_keeps_float32(lab):
    """float32 summaries give float32 ``(out, lse)`` equal, to float32 rounding, to the same
    formula evaluated in float64 on the rounded summaries (scores of order 1).

    Catches: a result promoted to float64, or computed through a lower precision."""
    rng = np.random.default_rng(0)
    m, denom, acc = rng.standard_normal((2, 3)), rng.uniform(1.0, 9.0, (2, 3)), rng.standard_normal((2, 3, 16))
    m32, denom32, acc32 = (torch.from_numpy(x).float() for x in (m, denom, acc))
    m, denom, acc = (t.double().numpy() for t in (m32, denom32, acc32))  # what float32 holds
    out, lse = lab.to_out_lse(m32, denom32, acc32)
    labkit.assert_close(out, acc / denom[..., None], atol=1e-6, rtol=1e-6, axes=AXES, what="out", dtype=torch.float32)
    labkit.assert_close(lse, m + np.log(denom), atol=1e-6, rtol=1e-6, axes=AXES[:2], what="lse", dtype=torch.float32)


def test_from_out_lse_gives_summaries_that_merge_like_the_originals(lab):
    """``from_out_lse`` of the true ``(out, lse)`` is ``(lse, 1, out)``, and exactly ``(-inf, 0,
    zeros)`` where ``lse = -inf``; merged with the rescaling merge of lab 04-04 (written here), the
    converted summaries of disjoint key sets give dense attention over their union.

    Catches: a denominator of 1 for a rank that saw no key, ``m`` taken as 0, NaN for
    ``lse = -inf``, writing into ``out``."""
    _, out_np, lse_np = truth_batch(torch.float64)
    out, lse = torch.from_numpy(out_np), torch.from_numpy(lse_np)
    before = (out.clone(), lse.clone())
    m, denom, acc = lab.from_out_lse(out, lse)
    seen = np.isfinite(lse_np)
    labkit.assert_equal(np.where(seen, m, 0.0), np.where(seen, lse_np, 0.0), what="m = lse", dtype=torch.float64)
    assert (np.asarray(m)[~seen] == -np.inf).all(), "m must be -inf where lse is -inf"
    labkit.assert_equal(denom, seen.astype(np.float64), what="denom (1 where seen, 0 where not)", dtype=torch.float64)
    labkit.assert_equal(acc, np.where(seen[..., None], out_np, 0.0), what="acc = out", dtype=torch.float64)
    assert torch.equal(out, before[0]) and torch.equal(lse, before[1]), "from_out_lse modified its inputs"

    # Two disjoint key sets, each encoded as (out, lse), decoded, merged: attention over the union.
    q, keys, values = scored_keys(9, 40, level=1000.0)
    parts = [(keys[:15], values[:15]), (keys[15:], values[15:]), (keys[:0], values[:0])]
    decoded = []
    for k, v in parts:
        o = labkit.attention_f64(q, k, v)
        lse_part = np.logaddexp.reduce(k @ q / 4.0) if len(k) else -np.inf
        decoded.append(lab.from_out_lse(torch.from_numpy(o), torch.tensor(lse_part, dtype=torch.float64)))
    top = max(float(m) for m, _, _ in decoded)
    weights = [math.exp(float(m) - top) if float(m) > -math.inf else 0.0 for m, _, _ in decoded]
    merged = sum(w * np.asarray(a) for w, (_, _, a) in zip(weights, decoded, strict=True)) / sum(
        w * float(d) for w, (_, d, _) in zip(weights, decoded, strict=True))
    labkit.assert_close(merged, labkit.attention_f64(q, keys, values), atol=ATOL, axes=("dim",),
                        what="merge of decoded (out, lse) parts")


# ------------------------------------------------------------------------------------------
# Step 6, without ranks: what the combines refuse.


@pytest.mark.parametrize("combine", ["combine_all_reduce", "combine_all_gather"])
def test_combine_explains_what_is_missing(lab, combine):
    """Without a process group, or with summaries of the wrong kind, a combine raises a
    ValueError that says what to do. (The checks are given; this process has no process group.)"""
    m, denom = torch.zeros(2, 3, dtype=torch.float64), torch.ones(2, 3, dtype=torch.float64)
    acc = torch.zeros(2, 3, 8, dtype=torch.float64)
    with pytest.raises(ValueError, match="init_process_group"):
        getattr(lab, combine)(m, denom, acc)
    with pytest.raises(ValueError, match="torch.Tensor"):
        getattr(lab, combine)(m.numpy(), denom, acc)
    with pytest.raises(ValueError, match="acc"):
        getattr(lab, combine)(m, denom, acc[:, :2])


# ------------------------------------------------------------------------------------------
# Step 7: bytes on the wire.


def ring_all_gather_bytes(world_size: int, piece: int) -> int:
    """Ring all-gather: in each of world_size - 1 steps, every rank forwards one piece to its right."""
    return sum(piece for _step in range(world_size - 1) for _rank in range(world_size))


def ring_all_reduce_bytes(world_size: int, numbers: int, itemsize: int) -> int:
    """Ring all-reduce: the tensor cut in world_size chunks; a reduce-scatter then an all-gather,
    each world_size - 1 steps in which rank r sends chunk (r - step) mod world_size."""
    chunks = [len(c) for c in np.array_split(np.arange(numbers), world_size)]
    sent = 0
    for _phase in ("reduce-scatter", "all-gather"):
        for step in range(world_size - 1):
            for rank in range(world_size):
                sent += chunks[(rank - step) % world_size] * itemsize
    return sent


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("world_size", "batch", "num_heads", "head_dim", "itemsize"), [
    (2, 1, 32, 128, 4), (4, 1, 32, 128, 4), (3, 5, 7, 64, 2), (8, 2, 8, 128, 4), (1, 4, 8, 16, 8), (4, 0, 8, 16, 4),
])
def test_combine_bytes_counts_a_ring_step_by_step(lab, method, world_size, batch, num_heads, head_dim, itemsize):
    """Bytes per decode step, all ranks together, against a step-by-step count of ring
    collectives: the all-gather moves every rank's (out, lse), head_dim + 1 numbers per (sequence,
    head); the all-reduce route reduces m (1 number), then (denom, acc) (head_dim + 1). Exact ints.

    Catches: the all-reduce counted like an all-gather (world_size^2), the all-reduce of m
    forgotten, the (out, lse) piece counted with head_dim + 2 numbers, itemsize ignored."""
    pairs = batch * num_heads
    if method == "all_gather":
        expected = ring_all_gather_bytes(world_size, pairs * (head_dim + 1) * itemsize)
    else:
        expected = ring_all_reduce_bytes(world_size, pairs, itemsize) + ring_all_reduce_bytes(
            world_size, pairs * (head_dim + 1), itemsize)
    got = lab.combine_bytes(method, world_size, batch, num_heads, head_dim, itemsize)
    assert isinstance(got, int | np.integer), f"combine_bytes must return an integer, got {type(got).__name__}"
    assert got == expected, f"combine_bytes({method!r}, {world_size}, {batch}, {num_heads}, {head_dim}, {itemsize}) " \
        f"= {got}, a ring moves {expected}"


def test_combine_bytes_readme_numbers(lab):
    """The README's table, batch 1, 32 query heads of 128, float32 summaries: 2 ranks move
    33,024 (all-gather) and 33,280 (all-reduce) bytes, 4 ranks 198,144 and 99,840, 1 rank nothing.

    Catches: any formula that disagrees with the README's arithmetic."""
    assert lab.combine_bytes("all_gather", 2, 1, 32, 128) == 2 * 1 * 32 * 129 * 4 == 33_024
    assert lab.combine_bytes("all_reduce", 2, 1, 32, 128) == 2 * 1 * 32 * 130 * 4 == 33_280
    assert lab.combine_bytes("all_gather", 4, 1, 32, 128) == 4 * 3 * 32 * 129 * 4 == 198_144
    assert lab.combine_bytes("all_reduce", 4, 1, 32, 128) == 2 * 3 * 32 * 130 * 4 == 99_840
    assert lab.combine_bytes("all_reduce", 1, 1, 32, 128) == 0


def test_combine_bytes_rejects_bad_input(lab):
    """An unknown method or a world of no rank is a ValueError naming it. (The checks are given.)"""
    with pytest.raises(ValueError, match="method"):
        lab.combine_bytes("broadcast", 2, 1, 32, 128)
    with pytest.raises(ValueError, match="world_size"):
        lab.combine_bytes("all_gather", 0, 1, 32, 128)


# ------------------------------------------------------------------------------------------
# Steps 4-6 on real ranks: _ranks.py in a child process.

TAG_VARIABLE = "LABS_04_07_RUN"  # marks every process of a run, so that survivors can be found
CHILD_TIMEOUT = len(ranks_script.WORLD_SIZES) * ranks_script.TIMEOUT_S + 120
_runs: dict[str, tuple] = {}


def ranks_run(command: str):
    """``("ok", array)`` or ``("raised", exception)`` from ``_ranks.py <command>``, once per session,
    and the processes of that run still alive afterwards."""
    if command not in _runs:
        tag = uuid.uuid4().hex
        try:
            outcome = ("ok", child.run(HERE / "_ranks.py", command, BACKEND, timeout=CHILD_TIMEOUT,
                                       env={TAG_VARIABLE: tag}))
        except (Exception, pytest.skip.Exception) as err:
            outcome = ("raised", err)
        _runs[command] = (outcome, survivors(tag))
    return _runs[command]


def raise_again(err: BaseException):
    """Raise a run's exception in another test, with this test's traceback only (re-raising the
    same object would pile up every earlier test's frames on it)."""
    if isinstance(err, pytest.skip.Exception):
        pytest.skip(str(err))
    raise err.with_traceback(None)


def survivors(tag: str) -> list[int]:
    """Processes (other than this one) whose environment carries ``tag``, after a short grace."""
    if not sys.platform.startswith("linux"):
        return []
    marker = f"{TAG_VARIABLE}={tag}".encode()
    for _ in range(20):
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != os.getpid():
                try:
                    with open(f"/proc/{entry}/environ", "rb") as f:
                        if marker in f.read().split(b"\0"):
                            found.append(int(entry))
                except OSError:
                    pass
        if not found:
            return []
        time.sleep(0.25)
    return found


def suite_outputs(world_size: int) -> dict:
    """``{(case, combine): (outputs [world_size ranks, batch, heads, dim], checks [world_size, 3])}``."""
    (status, value), _ = ranks_run("suite")
    if status == "raised":
        raise_again(value)
    position = 0
    for size in ranks_script.WORLD_SIZES:
        ran = value[position] == 1.0
        position += 1
        width = ranks_script.rank_result_size(size) if ran else 0
        block = value[position:position + size * width].reshape(size, width) if ran else None
        position += size * width
        if size == world_size:
            break
    if not ran:
        pytest.skip(f"{world_size} ranks need {world_size} GPUs with LAB_DIST_BACKEND=nccl")
    results, offset = {}, 0
    for name, combine, shape in ranks_script.result_layout(world_size):
        size = math.prod(shape)
        outputs = block[:, offset:offset + size].reshape(world_size, *shape)
        results[(name, combine)] = (outputs, block[:, offset + size:offset + size + len(ranks_script.CHECKS)])
        offset += size + len(ranks_script.CHECKS)
    return results


def dense_truth(case) -> np.ndarray:
    """Attention of every sequence's query heads over all its keys, float64, from the logical K/V."""
    return np.stack([labkit.attention_f64(case.q[b], case.keys[b], case.values[b]) for b in range(len(case.keys))])


def check_case(name: str, world_size: int, combine: str) -> None:
    __tracebackhide__ = True
    case = ranks_script.build_case(name, world_size)
    expected = dense_truth(case)  # the truth first, from the sequences themselves
    outputs, _ = suite_outputs(world_size)[(name, combine)]
    for rank in range(world_size):
        labkit.assert_close(outputs[rank], expected, atol=ATOL, axes=AXES,
                            what=f"{combine} on rank {rank} of {world_size}, case {name} (stripe {case.stripe})")


WORLDS = [pytest.param(w, id=f"{w} rank{'s' if w > 1 else ''}") for w in ranks_script.WORLD_SIZES]
COMBINES = [pytest.param(c, id=c.removeprefix("combine_")) for c in ranks_script.COMBINES]


@pytest.mark.parametrize("combine", COMBINES)
@pytest.mark.parametrize("world_size", WORLDS)
@pytest.mark.parametrize("name", ["ragged_gqa_block_interleaved", "mqa_token_interleaved", "stripe_of_three_tokens"])
def test_ranks_match_dense_attention_on_ragged_batches(lab, name, world_size, combine):
    """Every rank's output equals dense attention over the whole sequence: ragged batches with GQA
    (4 query heads on 2 KV heads) and MQA (on 1), block-interleaved, token-interleaved and stripes
    of 3 tokens in blocks of 4; rank counts that do not divide the lengths; huge, NaN or inf in
    every unused slot.

    Catches: summing the ranks' sums without rescaling to the shared max, summing or averaging the
    ranks' normalized outputs, rescaling after the sum, lse without the max in the all-gather
    route, and every rank_summaries bug."""
    check_case(name, world_size, combine)


@pytest.mark.parametrize("combine", COMBINES)
@pytest.mark.parametrize("world_size", WORLDS)
def test_empty_shards_change_nothing(lab, world_size, combine):
    """Contiguous split of a batch with lengths 3, 70, 0 and 17: the short sequences live on rank
    0 alone, the other ranks hold nothing of them, and the empty sequence is on no rank. Every rank
    gets dense attention, and zeros for the empty sequence.

    Catches: NaN from exp(-inf - (-inf)) where no rank holds a token, and every bug that fails on
    ranks holding different parts of a sequence."""
    check_case("contiguous_short_and_empty", world_size, combine)


@pytest.mark.parametrize("combine", COMBINES)
@pytest.mark.parametrize("world_size", WORLDS)
def test_huge_logits_on_one_rank(lab, world_size, combine):
    """Scores near +1000 on the last rank's tokens only, near 0 everywhere else: the other ranks'
    weights underflow to exactly 0 after rescaling, and the output is attention over the hot
    tokens. Finite and exact.

    Catches: a rank's sums added without rescaling to the global max, lse computed without the
    max, outputs averaged, the wrong KV head; exp of unshifted scores would overflow to inf."""
    check_case("huge_logits_on_one_rank", world_size, combine)


@pytest.mark.parametrize("combine", COMBINES)
@pytest.mark.parametrize("world_size", WORLDS)
def test_all_logits_near_minus_1000(lab, world_size, combine):
    """Every score near -1000 on every rank (token-interleaved, MQA): exp of a raw score underflows
    to 0, so only the rescaled sums survive. Finite and exact.

    Catches: the ranks' sums added without rescaling, outputs averaged, acc rescaled after the sum,
    lse without the max; an exp of raw scores would underflow to 0/0."""
    check_case("all_logits_near_minus_1000", world_size, combine)


@pytest.mark.parametrize("combine", COMBINES)
@pytest.mark.parametrize("world_size", WORLDS)
def test_combine_keeps_dtype_and_leaves_the_summaries_alone(lab, world_size, combine):
    """For every case: the output has shape [batch, num_heads, head_dim] and the summaries'
    dtype (float64 here), and the rank's m, denom and acc are unchanged after the combine
    (collectives work in place: a combine must not reduce the caller's tensors).

    Catches: all_reduce(m) on the caller's m, an output cast to float32."""
    bad = []
    for (name, method), (_, checks) in suite_outputs(world_size).items():
        if method != combine:
            continue
        for rank, row in enumerate(checks):
            failed = [what for what, ok in zip(ranks_script.CHECKS, row, strict=True) if ok != 1]
            bad += [f"{name}, rank {rank}: {what}" for what in failed]
    assert not bad, f"{combine} on {world_size} ranks: wrong " + "; ".join(bad)


def test_no_rank_outlives_its_group(lab):
    """After the suite's groups of 1, 2 and 4 ranks, no process of the run is left.

    Catches: a launcher that returns while ranks still run (it kills and joins every rank)."""
    (status, value), alive = ranks_run("suite")
    if status == "raised":
        raise_again(value)
    assert not alive, f"processes of the run still alive after it ended: {alive}"


def test_a_rank_that_raises_fails_the_whole_group(lab):
    """4 ranks combine once; then rank 1 raises while the other three wait in the next collective.
    The run fails at once with a message naming rank 1 and its exception (not a timeout), and no
    process of the run is left.

    Catches: a launcher that waits for every rank (hangs until the timeout), that reports a
    consequence (another rank's broken connection) instead of the cause, or that leaves ranks
    behind."""
    (status, value), alive = ranks_run("crash")
    if status == "ok":
        pytest.fail("the crash run succeeded: rank 1 was supposed to raise")
    if isinstance(value, pytest.skip.Exception | NotImplementedError):
        raise_again(value)
    message = str(value)
    expected = re.escape(f"failed: RuntimeError: {ranks_script.CRASH_MESSAGE}")
    assert re.search(rf"rank {ranks_script.CRASH_RANK} of \d+ {expected}", message), (
        f"the run must fail naming rank {ranks_script.CRASH_RANK} and its exception; got:\n{message[-1500:]}"
    )
    assert not alive, f"processes of the crashed run still alive: {alive}"


# ------------------------------------------------------------------------------------------
# For the maintainers: bench.py's GPU pieces, checked on the CPU (the benchmark itself needs GPUs).


@pytest.mark.maintainer
def test_bench_summaries_match_float64(monkeypatch):
    """bench.py's per-GPU summaries over a shuffled paged cache (its ``place``): the torch fallback
    always, and lab 04-06's ``split_summaries`` merged over its splits when that lab has it (Triton's
    interpreter here), against ``summary_f64``; an empty shard gives the identity. float32, so
    1e-5 relative. (Importing bench.py sets its NVLink-multicast variables in this process.)"""
    bench = child.script_module(HERE / "bench.py")
    heads, kv_heads, head_dim, n = 4, 2, 16, 150
    for name, value in (("NUM_HEADS", heads), ("NUM_KV_HEADS", kv_heads), ("HEAD_DIM", head_dim)):
        monkeypatch.setattr(bench, name, value)
    gen = torch.Generator().manual_seed(0)
    keys, values = torch.randn(n, kv_heads, head_dim, generator=gen), torch.randn(n, kv_heads, head_dim, generator=gen)
    q = torch.randn(1, heads, head_dim, generator=gen)
    group = heads // kv_heads
    expected = [summary_f64(q[0, h].double().numpy(), keys[:, h // group].double().numpy(),
                            values[:, h // group].double().numpy()) for h in range(heads)]
    k_cache, v_cache, table = bench.place(torch, keys, values, gen)

    def check(summaries, what):
        m, denom, acc = (t.double().numpy()[0] for t in summaries)
        for h, (m_exp, denom_exp, acc_exp) in enumerate(expected):
            labkit.assert_close(m[h], m_exp, atol=1e-5, what=f"{what}: m of head {h}")
            labkit.assert_close(denom[h], denom_exp, atol=0, rtol=1e-5, what=f"{what}: denom of head {h}")
            labkit.assert_close(acc[h], acc_exp, atol=1e-5 * denom_exp, axes=("dim",), what=f"{what}: acc of head {h}")

    check(bench._torch_summaries(q, k_cache, v_cache, table, n, chunk_blocks=3), "torch summaries")
    pytest.importorskip("triton", reason='lab 04-06 needs triton: pip install -e ".[triton]"')
    ref = labkit.load_reference("04-06")
    if not hasattr(ref, "split_summaries"):
        pytest.skip("lab 04-06 has no split_summaries in this checkout: bench.py uses the torch summaries")
    padded = torch.cat([table, torch.zeros(1, 6, dtype=torch.int32)], dim=1)  # splits past the last token
    check(bench._from_split_summaries(ref, q, k_cache, v_cache, padded, torch.tensor([n], dtype=torch.int32)),
          "04-06 split summaries")
    m, denom, acc = bench._from_split_summaries(ref, q, k_cache, v_cache, padded, torch.tensor([0], dtype=torch.int32))
    assert (m == -math.inf).all() and (denom == 0).all() and (acc == 0).all(), "an empty shard must give the identity"
