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

The distributed tests run ``_ranks.py`` as a child process (``labkit.testing.child``): it starts
groups of 1, 2 and 4 ranks with the ``gloo`` backend (``LAB_DIST_BACKEND=nccl``: one GPU per rank),
one group per combine, and each rank runs the implementation under test on its shard of the cases in
``_ranks.CASES`` (in the group of 4, also as one of two pairs, ``_ranks.PAIR_CASES``) and sends back
its outputs: data only. A group that fails sends its failure instead, and only its own tests fail.
The truth is dense attention over each sequence's keys and values, which this process rebuilds with
``_ranks.build_case`` (fixed seeds), never from the ranks' shards. Every unused cache slot holds
poison (huge, NaN or inf); tables have padding columns pointing at a poisoned block, or none.

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
from types import SimpleNamespace

import numpy as np
import pytest

import labkit
from labkit import require
from labkit.testing import child, contract, seam
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


def expect_value_error(call, *words_and_what: str) -> None:
    """``call()`` must raise a ValueError whose message names each word (the given checks of
    ``_checks.py``, called first); the last argument says what was called."""
    __tracebackhide__ = True
    *words, what = words_and_what
    labkit.assert_refused(call, *words, what=what, hint="the given checks of _checks.py are called first")


def looks_like(got, candidates: dict[str, object], expected) -> str:
    """The classic mistakes (names of ``candidates``) whose result ``got`` equals, as a sentence.
    A mistake whose result on this case equals the truth ``expected`` is never named: a wrong answer
    cannot be that mistake there."""
    def array(x):
        return np.asarray(x.detach().cpu() if hasattr(x, "detach") else x)

    got, expected = array(got), array(expected)

    def equal(a, b) -> bool:
        if np.shape(a) != np.shape(b):
            return False
        if np.asarray(a).dtype.kind == "f" or np.asarray(b).dtype.kind == "f":
            # the same formula, computed another way, differs in the last bits
            return bool(np.allclose(a, b, rtol=1e-12, atol=1e-12, equal_nan=True))
        return bool(np.array_equal(a, b))

    same = [name for name, value in candidates.items() if equal(got, value) and not equal(value, expected)]
    return f"\n  that is what {' or '.join(same)} gives" if same else ""


def assert_equal_naming(actual, expected, wrong: dict[str, object], **kwargs) -> None:
    """``labkit.assert_equal``, its message followed by the classic mistake ``actual`` equals, if any."""
    __tracebackhide__ = True
    try:
        labkit.assert_equal(actual, expected, **kwargs)
    except AssertionError as err:
        raise AssertionError(f"{err}{looks_like(actual, wrong, expected)}") from None


def assert_close_naming(actual, expected, wrong: dict[str, object], **kwargs) -> None:
    """``labkit.assert_close``, its message followed by the classic mistake ``actual`` equals, if any."""
    __tracebackhide__ = True
    try:
        labkit.assert_close(actual, expected, **kwargs)
    except AssertionError as err:
        raise AssertionError(f"{err}{looks_like(actual, wrong, expected)}") from None


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


def dealt_lengths(seq_lens, world_size: int, stripe: int) -> np.ndarray:
    """``[world_size, len(seq_lens)]``: how many of each sequence's tokens each rank holds, counted from
    the deal itself (:func:`dealt`)."""
    counts = np.zeros((world_size, len(seq_lens)), dtype=I64)
    for b, n in enumerate(seq_lens):
        for rank, _ in dealt(int(n), world_size, stripe):
            counts[rank, b] += 1
    return counts


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
    require(np.shape(m) == m_exp.shape, f"{what}: m has shape {np.shape(m)}, expected {m_exp.shape}")
    got_empty = np.asarray(m)[empty]
    require((got_empty == -np.inf).all(), f"{what}: m must be -inf where the rank holds no token (sequences "
            f"{sorted({int(b) for b in np.argwhere(empty)[:, 0]})}), got {got_empty[got_empty != -np.inf][:4]}")
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
    pytest.param(8, 2, 13, id="8 ranks, stripe 2, 13 tokens: the last round reaches 7 ranks"),
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
    t = order.astype(np.int64)
    where = f"token_owner(positions, world_size={world_size}, stripe={stripe})"
    wrong_ranks = {"dealing single tokens instead of stripes (t % world_size)": t % world_size,
                   "the rank without % world_size (t // stripe)": t // stripe,
                   "the stripe rounded up (ceil(t / stripe) % world_size)": -(-t // stripe) % world_size}
    expected = np.array([owners[i][0] for i in order])
    assert_equal_naming(ranks, expected, wrong_ranks, what=f"{where}: ranks (token t's: (t // stripe) % world_size)",
                        dtype=I64)
    wrong_local = {"token interleaving's local position (t // world_size)": t // world_size,
                   "the offset in the stripe without the earlier rounds (t % stripe)": t % stripe,
                   "the global position": t}
    expected = np.array([owners[i][1] for i in order])
    assert_equal_naming(local, expected, wrong_local, what=f"{where}: local_positions ((t // stripe // world_size) "
                        "* stripe + t % stripe)", dtype=I64)


def test_token_owner_interleaves_single_tokens_like_vllm(lab):
    """vLLM's decode context parallelism, by default, keeps token i on rank i % world_size: with 2
    ranks and 9 tokens, rank 0 holds 0, 2, 4, 6, 8 and rank 1 holds 1, 3, 5, 7 (hand-written). The
    same tokens as a [3, 3] array, and token 7 alone as a 0-d one: answers shaped like the positions.

    Catches: any formula that is not the stripe-1 case of the layout; the positions flattened on the
    way (``ravel``, or a loop that builds a list), so that the answers lose the positions' shape."""
    ranks, local = lab.token_owner(np.arange(9), 2, 1)
    labkit.assert_equal(ranks, np.array([0, 1, 0, 1, 0, 1, 0, 1, 0]),
                        what="token_owner(0..8, 2 ranks, stripe 1): ranks")
    labkit.assert_equal(local, np.array([0, 0, 1, 1, 2, 2, 3, 3, 4]),
                        what="token_owner(0..8, 2 ranks, stripe 1): local_positions")
    for positions, shape in [(np.arange(9).reshape(3, 3), "[3, 3]"), (np.array(7), "0-d")]:
        positions.flags.writeable = False
        ranks, local = lab.token_owner(positions, 2, 1)
        for name, got, want in (("ranks", ranks, positions % 2), ("local_positions", local, positions // 2)):
            where = f"token_owner of {shape} positions (2 ranks, stripe 1): {name}"
            require(np.shape(got) == positions.shape, f"{where} has shape {np.shape(got)}, expected "
                    f"{positions.shape}, the positions' own (flattened on the way?)")
            labkit.assert_equal(got, want, dtype=I64, what=where)


@pytest.mark.parametrize(("world_size", "stripe"), [(2, 4), (4, 4), (3, 1), (4, 3), (5, 7), (1, 4), (8, 2), (7, 1)])
def test_local_seq_lens_count_each_ranks_tokens(lab, world_size, stripe):
    """Tokens per (rank, sequence) for every length from 0 to three rounds and a bit, against
    counting the dealt hands; each column sums to the length.

    Catches: a remainder not clipped to [0, stripe] (negative counts on late ranks, or the whole
    remainder on rank 0), an even split ``seq_len // world_size`` that ignores stripes, the
    remainder given to the last ranks."""
    seq_lens = np.arange(3 * world_size * stripe + 3)
    seq_lens.flags.writeable = False
    expected = dealt_lengths(seq_lens, world_size, stripe)
    got = lab.local_seq_lens(seq_lens, world_size, stripe)
    n, ranks = seq_lens.astype(np.int64), np.arange(world_size)[:, None]
    rounds, rest = n // (world_size * stripe), n % (world_size * stripe)
    wrong = {"the last round's stripes dealt to the last ranks":
             rounds * stripe + np.clip(rest - (world_size - 1 - ranks) * stripe, 0, stripe),
             "the remainder not clipped at 0": rounds * stripe + np.minimum(rest - ranks * stripe, stripe),
             "an even split by tokens, whatever the stripe": n // world_size + (ranks < n % world_size)}
    assert_equal_naming(got, expected, wrong, axes=("rank", "sequence"), dtype=I64,
                        what=f"local_seq_lens(0..{len(seq_lens) - 1}, world_size={world_size}, stripe={stripe}) "
                        "(the sequence's length is its index)")


# The tables' integer type and the range of their block ids: any integer type is a table, and a block
# id times block_size may not fit in it (255 * 4 in uint8), while the slot, int64, must be exact.
TABLE_IDS = {
    "int32, ids from 0": (np.int32, 0),
    "uint8, ids up to 255": (np.uint8, 255),
    "int16, ids up to 2**15 - 1": (np.int16, 2**15 - 1),
    "int32, ids up to 2**31 - 1": (np.int32, 2**31 - 1),
}


@pytest.mark.parametrize("table_ids", list(TABLE_IDS))
@pytest.mark.parametrize(("world_size", "stripe", "block_size", "spare_columns"), [
    pytest.param(2, 4, 4, 0, id="block-interleaved"),
    pytest.param(4, 4, 4, 2, id="block-interleaved, padded tables"),
    pytest.param(3, 1, 4, 1, id="token-interleaved"),
    pytest.param(2, 3, 4, 0, id="stripe 3, blocks of 4"),
    pytest.param(2, 24, 8, 1, id="contiguous"),
    pytest.param(3, 6, 4, 1, id="stripe 6, blocks of 4"),
    pytest.param(1, 4, 4, 1, id="1 rank"),
])
def test_shard_slot_mapping_uses_each_ranks_own_table(lab, world_size, stripe, block_size, spare_columns, table_ids):
    """Each token's (rank, slot) in a 45-token sequence: the rank from the dealt hands, the slot
    from that rank's own table at the token's local block and offset. Every rank's table is its
    own shuffled pool, padded with -1 (the largest id of an unsigned type) when ``spare_columns`` >
    0, its ids from 0 or up to the largest of a narrow integer type (uint8, int16, int32), so that
    ``block * block_size`` does not fit in the table's type. Then the same tables place a decode
    step's one token (the last) and 20 tokens shuffled, as int32: a slot depends on its token alone.

    Catches: the table indexed with the global block number ``t // block_size``, the offset taken
    from the global position (right only when the stripe is a multiple of the block size), one
    rank's table used for every rank, slots computed in the table's own type (a uint8 block 200
    of blocks of 16 gives slot 128, not 3200), each rank's tokens numbered in the order they are
    handed over (right for a whole sequence in order, wrong for a decode step's one token)."""
    seq_len = 45
    dtype, top = TABLE_IDS[table_ids]
    rng = np.random.default_rng(stripe + block_size)
    owners = dealt(seq_len, world_size, stripe)
    counts = [sum(r == rank for r, _ in owners) for rank in range(world_size)]
    width = -(-max(counts) // block_size) + spare_columns
    padding = -1 if np.issubdtype(dtype, np.signedinteger) else np.iinfo(dtype).max
    tables = np.full((world_size, width), padding, dtype=dtype)
    for rank, n in enumerate(counts):
        need = -(-n // block_size)
        pool = rng.permutation(3 * need + 5)[:need]  # rank r's own pool of block ids
        tables[rank, :need] = top - pool if top else pool
    tables.flags.writeable = False
    ids = tables.astype(np.int64)  # the truth's block ids, in int64 before any product
    expected_slots = np.array([ids[r, local // block_size] * block_size + local % block_size for r, local in owners])
    where = (f"shard_slot_mapping(0..{seq_len - 1}, tables of {world_size} ranks x {width} columns ({table_ids}), "
             f"block_size={block_size}, stripe={stripe})")
    try:
        ranks, slots = lab.shard_slot_mapping(np.arange(seq_len), tables, block_size, stripe)
    except ValueError as err:
        raise AssertionError(
            f"{where} refused valid tables: {err}\n  each rank's table holds its own blocks only, as many as its "
            "LOCAL positions need: check the width with local // block_size, not the global block") from None
    t = np.arange(seq_len)
    wrong_ranks = {"dealing stripes of block_size tokens, not of stripe": (t // block_size) % world_size}
    assert_equal_naming(ranks, np.array([r for r, _ in owners]), wrong_ranks, what=f"{where}: ranks", dtype=I64)
    rank_of = np.array([r for r, _ in owners])
    local_of = np.array([local for _, local in owners])
    with np.errstate(over="ignore"):  # the last mistake overflows the table's type on purpose
        wrong = {"the rank's table at the global block t // block_size":
                 ids[rank_of, np.minimum(t // block_size, width - 1)] * block_size + local_of % block_size,
                 "the offset of the global position":
                 ids[rank_of, local_of // block_size] * block_size + t % block_size,
                 f"block * block_size computed in the table's {np.dtype(dtype)} (it wraps around)":
                 tables[rank_of, local_of // block_size] * dtype(block_size) + local_of % block_size}
    assert_equal_naming(slots, expected_slots, wrong, what=f"{where}: slots (rank's table at the local block, times "
                        "block_size, plus the local offset, in int64)", dtype=I64)

    # A decode step writes one token, at the end of the sequence; a scheduler may hand any tokens, in any order.
    last, shuffled = np.array([seq_len - 1]), rng.permutation(seq_len)[:20].astype(np.int32)
    for positions, which in [(last, f"only the decode step's token {seq_len - 1}"),
                             (shuffled, "20 of its tokens, shuffled, as int32")]:
        positions.flags.writeable = False
        chosen = positions.astype(np.int64)
        ranks, slots = lab.shard_slot_mapping(positions, tables, block_size, stripe)
        what = where.replace(f"0..{seq_len - 1}", which)
        labkit.assert_equal(ranks, rank_of[chosen], what=f"{what}: ranks", dtype=I64)
        counted = [int(np.sum(rank_of[chosen][:i] == r)) for i, r in enumerate(rank_of[chosen])]
        wrong = {"each rank's tokens numbered in the order they come, not from their positions":
                 np.array([ids[r, k // block_size] * block_size + k % block_size
                           for r, k in zip(rank_of[chosen], counted, strict=True)])}
        assert_equal_naming(slots, expected_slots[chosen], wrong, dtype=I64,
                            what=f"{what}: slots (from each token's own position, whatever comes with it)")


def test_shard_slot_mapping_of_no_token(lab):
    """No token to place (an empty sequence): empty int64 ranks and slots, with tables of no column
    too (a sequence of no token holds no block on any rank).

    Catches: a tables check that refuses tables of no column, or a world of one rank."""
    for width in (0, 3):
        for world_size in (1, 2):
            tables = np.zeros((world_size, width), dtype=np.int32)
            tables.flags.writeable = False
            where = f"shard_slot_mapping of no token, tables of {world_size} rank(s) x {width} columns"
            ranks, slots = lab.shard_slot_mapping(np.arange(0), tables, 4, 4)
            labkit.assert_equal(ranks, np.zeros(0, I64), what=f"{where}: ranks", dtype=I64)
            labkit.assert_equal(slots, np.zeros(0, I64), what=f"{where}: slots", dtype=I64)


def test_layout_rejects_bad_input(lab):
    """Clear ValueErrors naming the argument: no ranks, an empty stripe or block, negative or
    fractional positions, negative (-1 included) or fractional lengths, counts, positions, lengths
    and a round of dealing past int64, tables that are not a 2-D
    integer array of at least one rank, a table too narrow for a rank's tokens (naming the local block
    a token needs, positions of shape [4, 5] included), in every function that takes them. (The checks are
    given.)

    Catches: local_seq_lens without its check of world_size (0 ranks answer an empty array) or of the
    stripe (numpy divides by 0 with a warning), shard_slot_mapping without its check of block_size, a
    lengths check off by one or with its conditions joined by ``and``, counts, positions and lengths
    let past int64 (numpy's OverflowError, or a uint64 wrapped around to a negative number), a width
    check that indexes N-D positions with argmax's flat index (an IndexError)."""
    expect_value_error(lambda: lab.token_owner(np.arange(4), 0, 4), "world_size", "token_owner(.., world_size=0, ..)")
    expect_value_error(lambda: lab.token_owner(np.arange(4), 2, 0), "stripe", "token_owner(.., stripe=0)")
    expect_value_error(lambda: lab.token_owner(np.array([3, -1]), 2, 4), "positions", "token_owner([3, -1], ..)")
    expect_value_error(lambda: lab.token_owner(np.array([0.5]), 2, 4), "positions", "token_owner([0.5], ..)")
    expect_value_error(lambda: lab.local_seq_lens(np.array([4, -2]), 2, 4), "seq_lens", "local_seq_lens([4, -2], ..)")
    expect_value_error(lambda: lab.local_seq_lens(np.array([4, -1]), 2, 4), "seq_lens", "local_seq_lens([4, -1], ..)")
    expect_value_error(lambda: lab.local_seq_lens(np.array([4.0, 2.0]), 2, 4), "seq_lens",
                       "local_seq_lens([4.0, 2.0], ..) (lengths that are not integers)")
    expect_value_error(lambda: lab.local_seq_lens(np.array([4]), 0, 4), "world_size",
                       "local_seq_lens(.., world_size=0)")
    expect_value_error(lambda: lab.local_seq_lens(np.array([4]), 2, 0), "stripe", "local_seq_lens(.., stripe=0)")
    # Rank 0 holds tokens 0-3, 8-11 and 16-19: its local blocks 0, 1 and 2, past a table of 2 columns.
    expect_value_error(lambda: lab.shard_slot_mapping(np.arange(20), np.zeros((2, 2), dtype=np.int32), 4, 4),
                       "rank_block_tables", "local block 2 of rank 0",
                       "shard_slot_mapping of 20 tokens, 2 ranks, tables of 2 columns, blocks of "
                       "4, stripe 4 (rank 0 needs 3 blocks)")
    # Positions of any shape ("int64 like positions"): the same tokens as a [4, 5] array.
    expect_value_error(lambda: lab.shard_slot_mapping(np.arange(20).reshape(4, 5), np.zeros((2, 2), dtype=np.int32),
                                                      4, 4), "rank_block_tables", "local block 2 of rank 0",
                       "shard_slot_mapping of the same 20 tokens as positions of shape [4, 5]")
    tables = np.zeros((2, 4), dtype=np.int32)
    expect_value_error(lambda: lab.shard_slot_mapping(np.arange(8), tables, 0, 4), "block_size",
                       "shard_slot_mapping(.., block_size=0, ..)")
    for bad, what in [(tables[0], "a 1-D table"), (tables.astype(np.float64), "tables of floats"),
                      (tables[:0], "tables of 0 ranks")]:
        expect_value_error(lambda bad=bad: lab.shard_slot_mapping(np.arange(8), bad, 4, 4), "rank_block_tables",
                           f"shard_slot_mapping with {what}")
    # Past int64, where the layout computes: numpy's OverflowError for a Python int, a uint64 that
    # wraps around to a negative position or length.
    big = 2**63
    expect_value_error(lambda: lab.token_owner(np.arange(4), 2, big), "stripe", "token_owner(.., stripe=2**63)")
    expect_value_error(lambda: lab.token_owner(np.arange(4), big, 4), "world_size",
                       "token_owner(.., world_size=2**63, ..)")
    expect_value_error(lambda: lab.token_owner(np.array([3, big], dtype=np.uint64), 2, 4), "positions",
                       "token_owner([3, 2**63] as uint64, ..)")
    expect_value_error(lambda: lab.local_seq_lens(np.array([5, big], dtype=np.uint64), 2, 4), "seq_lens",
                       "local_seq_lens([5, 2**63] as uint64, ..)")
    expect_value_error(lambda: lab.local_seq_lens(np.array([5]), 4, 2**62), "stripe * world_size",
                       "local_seq_lens([5], world_size=4, stripe=2**62) (a round of 2**64 tokens)")
    expect_value_error(lambda: lab.shard_slot_mapping(np.arange(8), tables, big, 4), "block_size",
                       "shard_slot_mapping(.., block_size=2**63, ..)")


def test_layout_takes_counts_up_to_the_largest_int64(lab):
    """The largest values int64 holds are refused by none of the layout's checks: a stripe, a world
    size, a round of dealing, a position and a length of 2**63 - 1 (the last two as uint64), each
    answer computed here by hand. token_owner also takes a stripe and a world size whose round of
    dealing (``stripe * world_size``, 2**63) is past int64, as Python and as numpy integers: a token
    needs only its stripe, ``t // stripe``, which fits.

    Catches: a bound of the given checks off by one (2**63 - 1 refused); token_owner's round taken
    as ``t // (stripe * world_size)``, equal on paper, whose product is numpy's OverflowError for
    Python integers and wraps around to a negative number for numpy's."""
    top = 2**63 - 1
    half = 2**62  # 2 ranks, stripes of 2**62 tokens: one round is 2**63 tokens
    positions = np.array([0, 5, half - 1, half, half + 3, top], dtype=np.int64)
    positions.flags.writeable = False
    for kind, world_size, stripe in [("Python", 2, half), ("numpy int64", np.int64(2), np.int64(half))]:
        where = f"token_owner([0, 5, 2**62 - 1, 2**62, 2**62 + 3, 2**63 - 1], 2 ranks, stripe 2**62 as {kind} integers)"
        try:
            with np.errstate(over="ignore"):
                ranks, local = lab.token_owner(positions, world_size, stripe)
        except (OverflowError, ValueError) as err:
            raise AssertionError(f"{where} raised {type(err).__name__}: {err}\n  a round of dealing (stripe * "
                                 "world_size = 2**63) does not fit in int64, but no token needs it: "
                                 "(t // stripe) // world_size counts the rounds before token t") from None
        labkit.assert_equal(ranks, np.array([0, 0, 0, 1, 1, 1]), what=f"{where}: ranks", dtype=I64)
        labkit.assert_equal(local, np.array([0, 5, half - 1, 0, 3, half - 1]), dtype=I64,
                            what=f"{where}: local_positions (the rounds before token t are (t // stripe) // "
                            "world_size, never t // (stripe * world_size), whose product wraps around)")
    ranks, local = lab.token_owner(np.array([5, top], dtype=np.uint64), 2, 1)
    where = "token_owner([5, 2**63 - 1] as uint64, 2 ranks, stripe 1)"
    labkit.assert_equal(ranks, np.array([1, 1]), what=f"{where}: ranks", dtype=I64)
    labkit.assert_equal(local, np.array([2, top // 2]), what=f"{where}: local_positions", dtype=I64)
    ranks, local = lab.token_owner(np.arange(3), 1, top)
    labkit.assert_equal(local, np.arange(3), what="token_owner(0..2, 1 rank, stripe 2**63 - 1): local_positions",
                        dtype=I64)
    ranks, local = lab.token_owner(np.arange(3), top, 1)
    labkit.assert_equal(ranks, np.arange(3), what="token_owner(0..2, 2**63 - 1 ranks, stripe 1): ranks", dtype=I64)
    labkit.assert_equal(lab.local_seq_lens(np.array([5, 0]), 1, top), np.array([[5, 0]]), dtype=I64,
                        what="local_seq_lens([5, 0], 1 rank, stripe 2**63 - 1) (a round of 2**63 - 1 tokens)")
    labkit.assert_equal(lab.local_seq_lens(np.array([top], dtype=np.uint64), 1, 1), np.array([[top]]), dtype=I64,
                        what="local_seq_lens([2**63 - 1] as uint64, 1 rank, stripe 1)")


# Counts of any integer type are integers: numpy's uint64 among them, which with an int64 array makes float64.
COUNT_TYPES = {"numpy uint64": np.uint64, "numpy int32": np.int32, "numpy uint8": np.uint8}


@pytest.mark.parametrize("count_type", list(COUNT_TYPES))
def test_layout_takes_counts_of_any_integer_type(lab, count_type):
    """``world_size``, ``stripe`` and ``block_size`` as numpy integers of another type (the given
    checks take any integer): 3 ranks, stripes of 2 tokens, blocks of 4, a sequence of 20 tokens, every
    answer int64 and equal to dealing the stripes by hand; and a position of 2**62 + 1 on 1 rank, whose
    local position is itself, exactly.

    Catches: the counts used in their own numpy type (the Python ints the given checks hand back left
    unused): a uint64 count meeting int64 positions gives float64 answers, which miss 2**62 + 1, and
    float slots that no table can be indexed with."""
    kind = COUNT_TYPES[count_type]
    world_size, stripe, block_size, seq_len = 3, 2, 4, 20
    owners = dealt(seq_len, world_size, stripe)
    positions = np.arange(seq_len)
    positions.flags.writeable = False
    where = f"(world_size, stripe, block_size as {count_type})"
    ranks, local = lab.token_owner(positions, kind(world_size), kind(stripe))
    labkit.assert_equal(ranks, np.array([r for r, _ in owners]), what=f"token_owner {where}: ranks", dtype=I64)
    labkit.assert_equal(local, np.array([k for _, k in owners]), what=f"token_owner {where}: local_positions",
                        dtype=I64)
    lengths = np.arange(3 * world_size * stripe + 1)
    lengths.flags.writeable = False
    expected = dealt_lengths(lengths, world_size, stripe)
    labkit.assert_equal(lab.local_seq_lens(lengths, kind(world_size), kind(stripe)), expected, dtype=I64,
                        axes=("rank", "sequence"), what=f"local_seq_lens {where}")
    tables = np.arange(world_size * 2, dtype=np.int32).reshape(world_size, 2)[:, ::-1].copy()  # block ids, reversed
    tables.flags.writeable = False
    slots = np.array([int(tables[r, k // block_size]) * block_size + k % block_size for r, k in owners])
    try:
        got = lab.shard_slot_mapping(positions, tables, kind(block_size), kind(stripe))
    except IndexError as err:
        raise AssertionError(f"shard_slot_mapping {where} raised IndexError: {err}\n  float64 local blocks cannot "
                             "index a table: use the Python ints the given checks hand back") from None
    labkit.assert_equal(got[1], slots, what=f"shard_slot_mapping {where}: slots", dtype=I64)
    top = np.array([2**62 + 1])
    top.flags.writeable = False
    ranks, local = lab.token_owner(top, kind(1), kind(1))
    labkit.assert_equal(local, top, dtype=I64, what=f"token_owner([2**62 + 1], 1 rank, stripe 1 as {count_type}): "
                        "local_positions (float64 holds no integer past 2**53 exactly)")


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


@pytest.mark.parametrize(("num_heads", "num_kv_heads"), [(8, 2), (6, 3), (12, 4), (3, 3), (5, 1)],
                         ids=["4 query heads per KV head", "2 per KV head, 3 KV heads", "3 per KV head, 4 KV heads",
                              "one each (MHA)", "5 on one KV head (MQA)"])
def test_rank_summaries_group_query_heads_by_kv_head(lab, num_heads, num_kv_heads):
    """Query head h reads KV head h // (num_heads // num_kv_heads), for groups of 1 to 5 query heads
    and 1 to 4 KV heads (head counts that are no square of each other, odd ones): a ragged batch with
    an empty shard, NaN in every unused slot.

    Catches: KV head h % num_kv_heads, or h // num_kv_heads (equal to the right one when num_heads is
    num_kv_heads squared, as with 4 query heads on 2)."""
    inputs = rank_case(13, [7, 0, 12], num_heads=num_heads, num_kv_heads=num_kv_heads, poison="nan",
                       spare_columns=1)
    expected = expected_summaries(*inputs)
    assert_summaries_close(lab.rank_summaries(*inputs), expected,
                           what=f"rank_summaries, {num_heads} query heads on {num_kv_heads} KV heads")


def test_rank_summaries_of_an_empty_shard_are_identities(lab):
    """A rank that holds no token of any sequence (short sequences, many ranks) returns exactly
    (-inf, 0.0, zeros) for every (sequence, head), the summary of nothing.

    Catches: m = 0 instead of -inf (the rank "saw" a score of 0), NaN from an empty softmax."""
    q, k_cache, v_cache, tables, _ = rank_case(3, [5, 2])
    lens = np.zeros(2, dtype=I64)
    lens.flags.writeable = False
    m, denom, acc = lab.rank_summaries(q, k_cache, v_cache, tables, lens)
    labkit.assert_dtype(m, F64, what="rank_summaries of an empty shard: m")
    require(np.shape(m) == (2, 4) and (np.asarray(m) == -np.inf).all(),
            f"rank_summaries of an empty shard: m must be -inf for every (sequence, head), the max of no score "
            f"(0 would claim a score of 0 was seen); got {np.asarray(m).tolist()}")
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
    length past the table's capacity or of -1, a block id outside the pool, head sizes that differ
    in a shard of no token. (The checks are given.)

    Also the caches' shapes, their KV heads (0 would divide by 0), the tables' and lengths' dtypes and
    shapes, each condition alone.

    Catches: a lengths check off by one, the head sizes never compared (with no token, nothing
    else notices)."""
    q, k_cache, v_cache, tables, lens = rank_case(5, [6, 3])
    expect_value_error(lambda: lab.rank_summaries(q[0], k_cache, v_cache, tables, lens), "q must be",
                       "rank_summaries with q of shape [num_heads, head_dim] (no batch axis)")
    expect_value_error(lambda: lab.rank_summaries(q[:, :3], k_cache, v_cache, tables, lens), "multiple of num_kv_heads",
                       "rank_summaries with 3 query heads on 2 KV heads")
    expect_value_error(lambda: lab.rank_summaries(q, k_cache, v_cache, tables, np.array([6, 99])), "seq_lens",
                       "rank_summaries with a length of 99 past the table's capacity")
    expect_value_error(lambda: lab.rank_summaries(q, k_cache, v_cache, np.full_like(tables, k_cache.shape[0]), lens),
                       "block ids", "rank_summaries with block ids past the pool")
    expect_value_error(lambda: lab.rank_summaries(q, k_cache, v_cache, tables, np.array([6, -1])), "seq_lens",
                       "rank_summaries with a length of -1")
    # No token to read: only the check, not the attention, can see that the head sizes differ.
    expect_value_error(lambda: lab.rank_summaries(q[..., :4], k_cache, v_cache, tables, np.array([0, 0])), "head_dim",
                       "rank_summaries with q of head_dim 4 on caches of head_dim 8 (no token in the shard)")
    # Each condition of a check alone (a check whose conditions are joined by `and` lets these through).
    caches = [(k_cache, v_cache[:, :2], "v_cache of another shape than k_cache"),
              (k_cache[:, :, 0], v_cache[:, :, 0], "caches of 3 axes (no KV-head axis)")]
    for k, v, what in caches:
        expect_value_error(lambda k=k, v=v: lab.rank_summaries(q, k, v, tables, lens), "k_cache",
                           f"rank_summaries with {what}")
    expect_value_error(lambda: lab.rank_summaries(q, k_cache[:, :, :0], v_cache[:, :, :0], tables, lens),
                       "num_kv_heads", "rank_summaries with caches of 0 KV heads")
    for bad, what in [(tables.astype(np.float64), "tables of floats"), (tables[0], "a 1-D table"),
                      (tables[:1], "a table of 1 row for a batch of 2")]:
        expect_value_error(lambda bad=bad: lab.rank_summaries(q, k_cache, v_cache, bad, lens), "block_tables",
                           f"rank_summaries with {what}")
    for bad, what in [(lens.astype(np.float64), "lengths of floats"), (lens[:1], "1 length for a batch of 2")]:
        expect_value_error(lambda bad=bad: lab.rank_summaries(q, k_cache, v_cache, tables, bad), "seq_lens",
                           f"rank_summaries with {what}")


def test_rank_summaries_take_torch_tensors_of_any_floating_dtype(lab):
    """q and the caches as torch tensors (what an engine holds), in bfloat16, q still attached to an
    autograd graph, the tables and lengths int32 tensors: the summaries of the numbers they hold, in
    float64 (the given checks convert any tensor, on any device, through ``.detach().cpu().double()``).

    Catches: tensors converted through numpy directly (numpy has no bfloat16, and refuses a tensor
    that requires grad)."""
    q, k_cache, v_cache, tables, lens = rank_case(9, [7, 2, 0])
    tensors = [torch.from_numpy(np.array(x)).to(torch.bfloat16) for x in (q, k_cache, v_cache)]
    expected = expected_summaries(*(t.double().numpy() for t in tensors), tables, lens)
    q_t = tensors[0].clone().requires_grad_(True)
    tables_t, lens_t = (torch.from_numpy(np.array(x, dtype=np.int32)) for x in (tables, lens))
    assert_summaries_close(lab.rank_summaries(q_t, tensors[1], tensors[2], tables_t, lens_t), expected,
                           what="rank_summaries of bfloat16 tensors (q requiring grad), int32 tables and lengths")


# The contract (labkit.testing.contract): one layout at a time, the others contiguous.
RANK_LAYOUTS = {
    **{name: ("cache", name) for name in contract.CACHE_LAYOUTS if name != "contiguous"},
    **{name: ("q", name) for name in contract.Q_LAYOUTS if name != "contiguous"},
    **{name: ("table", name) for name in contract.TABLE_LAYOUTS if name != "contiguous"},
}


@pytest.mark.parametrize("layout", RANK_LAYOUTS)
def test_rank_summaries_on_the_views_engines_pass(lab, layout):
    """A rank's inputs as the views an engine passes (``labkit.testing.contract``: K and V as ``kv[:, 0]``,
    ``kv[:, 1]`` of one fused pool, a pool stored heads outside the slots, ``q`` a slice of the fused
    ``qkv``, a table cut from a wider one or every other row of a taller one; NaN or a poisoned block's id
    beside each view), 8 query heads on one KV head (the largest group there is), the rank's lengths at
    every edge (``boundary_lengths``: 0, 1, each side of a block of 4, a full table of 20 tokens): the
    definition's summaries.

    Pins the promise for any implementation. No gallery bug goes with it: numpy's indexing follows a
    view's strides, and its reshapes copy where they must, so a reading implementation gets views wrong
    only by reaching past numpy to the raw buffer (a lab that writes, such as 02-06's ``write_kv``, can:
    a reshape of a view is a copy)."""
    named = contract.boundary_lengths(4, capacity=20)
    q, k_cache, v_cache, tables, lens = rank_case(29, list(named.values()), num_heads=8, num_kv_heads=1,
                                                  poison="nan")
    used = {int(tables[b, j]) for b, n in enumerate(lens) for j in range(-(-int(n) // 4))}
    filler = min(set(range(k_cache.shape[0])) - used)  # a block of poison only
    kind, name = RANK_LAYOUTS[layout]
    chosen = contract.CACHE_LAYOUTS[name] if kind == "cache" else contract.Q_LAYOUTS[name] if kind == "q" \
        else contract.TABLE_LAYOUTS[name]
    if kind == "cache":
        k_cache, v_cache = chosen.apply(k_cache, v_cache)
    elif kind == "q":
        q = chosen.apply(q, k_cache.shape[2])
    else:
        tables = chosen.apply(tables, filler)
    inputs = (q, k_cache, v_cache, tables, lens)
    for x in inputs:
        x.flags.writeable = False
    expected = expected_summaries(*inputs)
    lengths = ", ".join(f"{n} ({what})" for what, n in named.items())
    assert_summaries_close(lab.rank_summaries(*inputs), expected,
                           what=f"rank_summaries with {chosen.describe}, 8 query heads on 1 KV head, lengths {lengths}")


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
    m, denom, acc = (t.numpy() for t in before)
    wrong_out = {"out = acc (not divided by denom)": acc}
    assert_close_naming(out, out_exp, wrong_out, atol=ATOL, axes=AXES, dtype=torch.float64,
                        what="to_out_lse: out (acc / denom; 0 where denom is 0)")
    require(isinstance(lse, torch.Tensor) and lse.shape == (2, 3),
            f"to_out_lse: lse must be a tensor [batch, num_heads] = (2, 3), got {type(lse).__name__} "
            f"{tuple(getattr(lse, 'shape', ()))}")
    empty = np.isinf(lse_exp)
    require(torch.equal(torch.isinf(lse), torch.from_numpy(empty)) and bool((lse[torch.from_numpy(empty)] < 0).all()),
            f"to_out_lse: lse must be -inf exactly where no key was seen ((sequence, head) "
            f"{np.argwhere(empty).tolist()}) and finite elsewhere; got {lse.tolist()}")
    with np.errstate(divide="ignore"):
        wrong_lse = {"lse = log(denom), without m": np.log(denom)}
    assert_close_naming(torch.nan_to_num(lse, neginf=0.0), np.nan_to_num(lse_exp, neginf=0.0),
                        {k: np.nan_to_num(v, neginf=0.0) for k, v in wrong_lse.items()}, atol=ATOL, rtol=1e-13,
                        axes=AXES[:2], dtype=torch.float64,
                        what="to_out_lse: lse (m + log(denom), scores near 0, +1000 and -1000)")
    for name, a, b in zip(("m", "denom", "acc"), before, summaries, strict=True):
        require(torch.equal(a, b), f"to_out_lse modified its input {name}: compute new tensors, never in place")


def test_to_out_lse_rejects_bad_input(lab):
    """Clear ValueErrors naming the problem: numpy summaries, summaries of two dtypes or of integers,
    shapes that do not fit, tensors on two devices (a ``meta`` tensor stands in for a GPU's). (The
    checks are given.)

    Catches: to_out_lse without its given check (torch's own TypeError, a broadcast, or a device error
    from deep inside)."""
    (m, denom, acc), _, _ = truth_batch(torch.float64)
    cases = [
        ((m.numpy(), denom, acc), ("torch.Tensor",), "m a numpy array"),
        ((m, denom.float(), acc), ("dtype",), "denom float32, m and acc float64"),
        ((m, denom, acc.float()), ("dtype",), "acc float32, m and denom float64"),
        ((m.long(), denom.long(), acc.long()), ("dtype",), "summaries of int64"),
        ((m, denom[:1], acc), ("denom",), "denom of another shape than m"),
        ((m, denom, acc[:, :2]), ("acc",), "acc of 2 heads, m of 3"),
        ((m, denom, acc.to("meta")), ("device",), "acc on another device than m and denom"),
    ]
    for args, words, what in cases:
        expect_value_error(lambda args=args: lab.to_out_lse(*args), *words, f"to_out_lse with {what}")


FLOAT_DTYPES = [pytest.param(getattr(torch, d), id=d) for d in ("float32", "float16", "bfloat16")]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_to_out_lse_keeps_each_floating_dtype(lab, dtype):
    """float32, float16 and bfloat16 summaries (scores of order 1, one summary of no key) give
    ``(out, lse)`` of the same dtype, equal to the formula evaluated in float64 on the rounded
    summaries to that dtype's precision: out is one division (eps / 2 relative), lse one log and
    one addition of numbers below 10 (eps / 2 of 10 each): 4 eps relative, 16 eps absolute.

    Catches: a result promoted to float64 (a log taken in float64 and added to m), or computed
    through a lower precision; NaN or -inf in the wrong place for the empty summary."""
    rng = np.random.default_rng(0)
    m, denom, acc = rng.standard_normal((2, 3)), rng.uniform(1.0, 9.0, (2, 3)), rng.standard_normal((2, 3, 16))
    m[1, 2], denom[1, 2], acc[1, 2] = -np.inf, 0.0, 0.0  # a summary of no key
    low = [torch.from_numpy(x).to(dtype) for x in (m, denom, acc)]
    m, denom, acc = (t.double().numpy() for t in low)  # what the dtype holds
    seen = denom > 0
    out_exp = np.where(seen[..., None], acc / np.where(seen, denom, 1.0)[..., None], 0.0)
    with np.errstate(divide="ignore"):
        lse_exp = np.where(seen, m + np.log(np.where(seen, denom, 1.0)), -np.inf)
    eps = torch.finfo(dtype).eps
    out, lse = lab.to_out_lse(*low)
    what = f"to_out_lse of {dtype} summaries"
    labkit.assert_close(out, out_exp, atol=16 * eps, rtol=4 * eps, axes=AXES, dtype=dtype, what=f"{what}: out")
    labkit.assert_dtype(lse, dtype, what=f"{what}: lse")
    require(tuple(lse.shape) == (2, 3) and bool((lse[1, 2] == -torch.inf).item()),
            f"{what}: lse must be -inf for the summary of no key at (1, 2), got {lse.tolist()}")
    labkit.assert_close(torch.nan_to_num(lse.double(), neginf=0.0), np.where(seen, lse_exp, 0.0), atol=16 * eps,
                        rtol=4 * eps, axes=AXES[:2], what=f"{what}: lse")


def test_from_out_lse_gives_summaries_that_merge_like_the_originals(lab):
    """``from_out_lse`` of the true ``(out, lse)`` is ``(lse, 1, out)``, and exactly ``(-inf, 0,
    zeros)`` where ``lse = -inf``; merged with the rescaling merge of lab 04-04 (written here), the
    converted summaries of disjoint key sets give dense attention over their union.

    Where ``lse`` is -inf, ``out`` holds NaN, as a kernel may leave the output of a set of no key:
    ``acc`` must still be exactly zeros there (a weight of 0 times NaN is NaN in the merge).

    FlashAttention-2 reports a set of no key as ``lse = +inf``: the same exact identity.

    Catches: a denominator of 1 for a rank that saw no key, ``m`` taken as 0, NaN for
    ``lse = -inf``, ``out`` passed through as ``acc`` where nothing was seen, ``+inf`` taken for a
    key seen, writing into ``out``."""
    _, out_np, lse_np = truth_batch(torch.float64)
    out_np[np.isinf(lse_np)] = np.nan  # what a kernel may leave where it saw no key
    out, lse = torch.from_numpy(out_np), torch.from_numpy(lse_np)
    before = (out.clone(), lse.clone())
    m, denom, acc = lab.from_out_lse(out, lse)
    require(not torch.isnan(acc).any(), "from_out_lse: acc holds NaN where lse is -inf: out may hold anything where "
            "no key was seen (here NaN), and the merge multiplies acc by a weight of 0, which keeps NaN; acc must be "
            "exactly zeros there (torch.where, not out itself)")
    seen = np.isfinite(lse_np)
    labkit.assert_dtype(m, torch.float64, what="from_out_lse: m")
    require(tuple(m.shape) == lse_np.shape, f"from_out_lse: m must be shaped like lse {lse_np.shape}, "
            f"got {tuple(m.shape)}")
    labkit.assert_equal(np.where(seen, np.asarray(m), 0.0), np.where(seen, lse_np, 0.0), what="from_out_lse: m = lse",
                        axes=AXES[:2])
    require((np.asarray(m)[~seen] == -np.inf).all(), "from_out_lse: m must be -inf where lse is -inf ((sequence, "
            f"head) {np.argwhere(~seen).tolist()}), got {np.asarray(m)[~seen].tolist()}")
    labkit.assert_equal(denom, seen.astype(np.float64), axes=AXES[:2], dtype=torch.float64,
                        what="from_out_lse: denom (1 where lse is finite, 0 where it is -inf: no key, no weight)")
    labkit.assert_equal(acc, np.where(seen[..., None], out_np, 0.0), what="from_out_lse: acc = out", axes=AXES,
                        dtype=torch.float64)
    for name, a, b in zip(("out", "lse"), before, (out, lse), strict=True):
        same = bool(((a == b) | (a.isnan() & b.isnan())).all())
        require(same, f"from_out_lse modified its input {name}: return new tensors")

    # FlashAttention-2 reports the log-sum-exp of a set of no key as +inf (version 3 as -inf): no key too.
    m, denom, acc = lab.from_out_lse(torch.full((2, 16), math.nan, dtype=torch.float64),
                                     torch.tensor([math.inf, -math.inf], dtype=torch.float64))
    got = [m.tolist(), denom.tolist(), bool((acc == 0).all())]
    require(got == [[-math.inf, -math.inf], [0.0, 0.0], True],
            f"from_out_lse with lse = [+inf, -inf] (FlashAttention-2 and 3's ways to say no key) and out NaN: expected "
            f"m = [-inf, -inf], denom = [0, 0], acc zeros, got m = {got[0]}, denom = {got[1]}, acc zeros: {got[2]} "
            "(seen is torch.isfinite(lse), not lse > -inf)")

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


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_from_out_lse_keeps_each_floating_dtype(lab, dtype):
    """``(out, lse)`` in float32, float16 or bfloat16, some ``lse`` -inf: ``(lse, 1, out)`` and the
    exact identity, every tensor of out's dtype, bit for bit (nothing is computed).

    Catches: a denominator built in float64 (``seen.double()``), which the all-gather route's merge
    then spreads to its output; m or acc converted on the way."""
    _, out_np, lse_np = truth_batch(torch.float64)
    out_np[np.isinf(lse_np)] = np.nan  # what a kernel may leave where it saw no key
    out, lse = torch.from_numpy(out_np).to(dtype), torch.from_numpy(lse_np).to(dtype)
    seen = torch.isfinite(lse)
    m, denom, acc = lab.from_out_lse(out, lse)
    for name, got, want in (("m", m, torch.where(seen, lse, -torch.inf)), ("denom", denom, seen.to(dtype)),
                            ("acc", acc, torch.where(seen[..., None], out, 0.0))):
        labkit.assert_dtype(got, dtype, what=f"from_out_lse of {dtype} (out, lse): {name}")
        labkit.assert_equal(got.double(), want.double(), axes=AXES[:got.dim()],
                            what=f"from_out_lse of {dtype} (out, lse): {name}")


def test_from_out_lse_rejects_bad_input(lab):
    """Clear ValueErrors naming the problem: ``out`` and ``lse`` as numpy arrays, an ``lse`` whose shape
    is not ``out``'s without its last axis, a 0-d ``out`` (no head_dim axis). (The checks are given.)

    Catches: from_out_lse without its given check (a TypeError or a broadcast from deep inside torch, or
    a silently reshaped answer), a check that lets a 0-d ``out`` through."""
    _, out, lse = truth_batch(torch.float64)
    out, lse = torch.from_numpy(out), torch.from_numpy(lse)
    expect_value_error(lambda: lab.from_out_lse(out.numpy(), lse.numpy()), "torch.Tensor",
                       "from_out_lse of numpy arrays")
    expect_value_error(lambda: lab.from_out_lse(out, lse[:, :2]), "lse",
                       "from_out_lse with lse [2, 2] for out [2, 3, 16]")
    expect_value_error(lambda: lab.from_out_lse(out[0, 0, 0], lse[0, 0]), "out must be", "from_out_lse of a 0-d out")
    expect_value_error(lambda: lab.from_out_lse(out, lse.float()), "dtype",
                       "from_out_lse with out float64, lse float32")
    expect_value_error(lambda: lab.from_out_lse(out.long(), lse.long()), "dtype", "from_out_lse of int64 tensors")


def conversion_inputs(function: str, empty: bool):
    """Writeable inputs of ``function``: summaries for to_out_lse, ``(out, lse)`` for from_out_lse;
    with ``empty``, one (sequence, head) saw no key. Two independent copies."""
    summaries, out, lse = truth_batch(torch.float64)
    inputs = summaries if function == "to_out_lse" else [torch.from_numpy(out), torch.from_numpy(lse)]
    if not empty:
        inputs = [t[1:] for t in inputs]  # row 1 of SUMMARY_SETS: no set is empty
    return [t.clone().contiguous() for t in inputs], [t.clone().contiguous() for t in inputs]


@pytest.mark.parametrize("empty", [False, True], ids=["every set seen", "a set of no key"])
@pytest.mark.parametrize("function", ["to_out_lse", "from_out_lse"])
def test_conversions_return_new_tensors(lab, function, empty):
    """Both conversions hand back new tensors: writing into a result leaves the caller's inputs as
    they were, and writing into the inputs after the call leaves the results as they were (with every
    key set seen, where no masking forces a copy, and with a set of no key).

    Catches: ``m = lse`` (the caller's lse handed back as m), ``acc = out`` when every lse is
    finite, a result that is a view of an input; and an input written in place."""
    names = ("m", "denom", "acc") if function == "to_out_lse" else ("out", "lse")
    results = ("out", "lse") if function == "to_out_lse" else ("m", "denom", "acc")
    call = getattr(lab, function)

    inputs, pristine = conversion_inputs(function, empty)
    for result in call(*inputs):
        try:
            result.fill_(123.0)  # writing into the results...
        except RuntimeError:  # a result that cannot be written (an expanded view) is checked the other way below
            pass
    changed = [n for n, a, b in zip(names, inputs, pristine, strict=True) if not torch.equal(a, b)]
    require(not changed, f"{function}: writing into its results changed the caller's {', '.join(changed)}: a result "
            f"is one of the inputs or a view of it ({', '.join(results)} must be new tensors: clone what you pass "
            "through)")

    inputs, pristine = conversion_inputs(function, empty)
    got = call(*inputs)
    kept = [g.clone() for g in got]
    for t in inputs:
        t.fill_(-7.0)  # ...and into the inputs after the call
    changed = [n for n, a, b in zip(results, got, kept, strict=True) if not torch.equal(a.nan_to_num(), b.nan_to_num())]
    require(not changed, f"{function}: writing into the caller's {', '.join(names)} after the call changed its "
            f"result {', '.join(changed)}: that result is an input or a view of it (clone it)")


# ------------------------------------------------------------------------------------------
# Step 6, without ranks: what the combines refuse.


@pytest.mark.parametrize("combine", ["combine_all_reduce", "combine_all_gather"])
def test_combine_explains_what_is_missing(lab, combine):
    """Without a process group, or with summaries of the wrong kind, a combine raises a
    ValueError that says what to do, and names the combine (its given checks are its first lines).
    (This process has no process group.)

    Catches: combine_all_reduce without its check of the group (torch's own message names no
    function of the lab)."""
    m, denom = torch.zeros(2, 3, dtype=torch.float64), torch.ones(2, 3, dtype=torch.float64)
    acc = torch.zeros(2, 3, 8, dtype=torch.float64)
    fn = getattr(lab, combine)
    expect_value_error(lambda: fn(m, denom, acc), "init_process_group", combine, f"{combine} without a process group")
    expect_value_error(lambda: fn(m.numpy(), denom, acc), "torch.Tensor", combine, f"{combine} with m a numpy array")
    expect_value_error(lambda: fn(m, denom, acc[:, :2]), "acc", combine, f"{combine} with acc of another shape")


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
    call = f"combine_bytes({method!r}, world_size={world_size}, batch={batch}, num_heads={num_heads}, " \
           f"head_dim={head_dim}, itemsize={itemsize})"
    got = lab.combine_bytes(method, world_size, batch, num_heads, head_dim, itemsize)
    require(isinstance(got, int | np.integer) and not isinstance(got, bool),
            f"{call} must return an integer (bytes), got {type(got).__name__} {got!r}")
    require(got == expected, f"{call} = {got}, a ring moves {expected}" + bytes_mistake(
        got, expected, method, world_size, pairs, head_dim, itemsize))


def bytes_mistake(got, expected, method, world_size, pairs, head_dim, itemsize) -> str:
    """The classic wrong counts that ``got`` equals, named (or "")."""
    w, p, d, e = world_size, pairs, head_dim, itemsize
    if method == "all_gather":
        wrong = {"each rank's piece counted once per rank, itself included (W x W, not W (W - 1))":
                 w * w * p * (d + 1) * e,
                 "(out, lse) counted with head_dim + 2 numbers (lse is one number)": w * (w - 1) * p * (d + 2) * e,
                 "one rank's receive count only (the ring's total is W times it)": (w - 1) * p * (d + 1) * e,
                 "itemsize left out": w * (w - 1) * p * (d + 1)}
    else:
        numbers = p * (d + 2)
        wrong = {"an all-reduce counted like an all-gather (W (W - 1), not 2 (W - 1))": w * (w - 1) * numbers * e,
                 "the all-reduce of m left out": 2 * (w - 1) * p * (d + 1) * e,
                 "one rank's share of the ring only (2 (W - 1) / W of the tensor)": 2 * (w - 1) * numbers * e // w,
                 "the reduce-scatter or the all-gather half of the ring left out": (w - 1) * numbers * e,
                 "itemsize left out": 2 * (w - 1) * numbers}
    return looks_like(np.int64(got), {name: np.int64(value) for name, value in wrong.items()}, np.int64(expected))


def test_combine_bytes_readme_numbers(lab):
    """The README's table, batch 1, 32 query heads of 128, float32 summaries: 2 ranks move
    33,024 (all-gather) and 33,280 (all-reduce) bytes, 4 ranks 198,144 and 99,840, 1 rank nothing.

    Catches: any formula that disagrees with the README's arithmetic."""
    for method, world_size, expected in [("all_gather", 2, 33_024), ("all_reduce", 2, 33_280),
                                         ("all_gather", 4, 198_144), ("all_reduce", 4, 99_840),
                                         ("all_reduce", 1, 0), ("all_gather", 1, 0)]:
        got = lab.combine_bytes(method, world_size, 1, 32, 128)
        require(got == expected, f"combine_bytes({method!r}, {world_size} ranks, batch 1, 32 heads of 128, float32) = "
                f"{got!r}, the README's table says {expected:,}"
                + bytes_mistake(got, expected, method, world_size, 32, 128, 4))


def test_combine_bytes_counts_past_int64(lab):
    """combine_bytes counts in Python's exact integers, so a count past int64 (2**64 for each
    argument in turn) is no error: the README's formulas, worked out here with Python integers,
    ``W (W - 1) B H (D + 1) s`` for the all-gather and ``2 (W - 1) B H (D + 2) s`` for the all-reduce.

    The same counts as numpy int64 (the given check takes any integer): a batch of 2**62 on 4 ranks,
    whose byte counts are past int64 though every argument fits, is exact too.

    Catches: the int64 bound of the layout's counts applied to combine_bytes too (a valid count
    refused); the formulas evaluated in the arguments' own numpy type, which wraps around past int64
    (the counts the given check hands back, Python integers, left unused)."""
    big = 2**64
    cases = [(name, big, f"{name}=2**64") for name in ("world_size", "batch", "num_heads", "head_dim", "itemsize")]
    cases += [("batch", np.int64(2**62), "batch=numpy.int64(2**62), every argument numpy.int64")]
    for method in ("all_gather", "all_reduce"):
        for name, value, said in cases:
            args = {"world_size": 4, "batch": 3, "num_heads": 2, "head_dim": 8, "itemsize": 2, name: value}
            if isinstance(value, np.integer):
                args = {key: np.int64(count) for key, count in args.items()}
            w, b, h, d, s = (int(args[k]) for k in ("world_size", "batch", "num_heads", "head_dim", "itemsize"))
            if method == "all_gather":
                expected = w * (w - 1) * b * h * (d + 1) * s
            else:
                expected = 2 * (w - 1) * b * h * (d + 2) * s
            call = f"combine_bytes({method!r}, {said}, the others small)"
            try:
                with np.errstate(over="ignore"):
                    got = lab.combine_bytes(method, **args)
            except ValueError as err:
                raise AssertionError(f"{call} refused a valid count: {err}; combine_bytes counts in exact Python "
                                     "integers, with no int64 bound") from None
            require(got == expected, f"{call} = {got!r}, expected {expected}")


def test_combine_bytes_rejects_bad_input(lab):
    """An unknown method, a world of no rank, a negative batch, no head, a head of no number or a
    number of no byte is a ValueError naming it. (The checks are given.)"""
    expect_value_error(lambda: lab.combine_bytes("broadcast", 2, 1, 32, 128), "method",
                       "combine_bytes('broadcast', ..)")
    expect_value_error(lambda: lab.combine_bytes("all_gather", 0, 1, 32, 128), "world_size",
                       "combine_bytes('all_gather', world_size=0, ..)")
    expect_value_error(lambda: lab.combine_bytes("all_reduce", 2, -1, 32, 128), "batch",
                       "combine_bytes('all_reduce', 2, batch=-1, ..)")
    for name, args in [("num_heads", (1, 0, 128, 4)), ("head_dim", (1, 32, 0, 4)), ("itemsize", (1, 32, 128, 0))]:
        expect_value_error(lambda args=args: lab.combine_bytes("all_gather", 2, *args), name,
                           f"combine_bytes('all_gather', 2, {name}=0, ..)")


# ------------------------------------------------------------------------------------------
# Steps 4-6 on real ranks: _ranks.py in a child process.

TAG_VARIABLE = "LABS_04_07_RUN"  # marks every process of a run, so that survivors can be found
# Each combine's groups run one after the other; one that hangs is stopped after TIMEOUT_S and not
# tried on more ranks, so at most one timeout per combine.
CHILD_TIMEOUT = len(ranks_script.COMBINES) * ranks_script.TIMEOUT_S + 120
CHECK_SIZE, SHAPE_DIMS = ranks_script.CHECK_SIZE, ranks_script.SHAPE_DIMS
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


def ranks_word(world_size: int) -> str:
    return f"{world_size} rank{'s' if world_size > 1 else ''}"


def cannot_run_here(world_size: int) -> bool:
    """Whether this machine cannot run a group of ``world_size`` ranks (nccl: one GPU per rank). Decided
    here, never from the child's answer: that is written where the code under test runs."""
    return BACKEND == "nccl" and world_size > (torch.cuda.device_count() if torch.cuda.is_available() else 0)


def not_run(world_size: int, where: str):
    """A group that the child's answer says did not run: a skip where this machine cannot run it,
    else a failure."""
    if cannot_run_here(world_size):
        seam.skip_here(f"{world_size} ranks need {world_size} GPUs with LAB_DIST_BACKEND=nccl")
    raise AssertionError(f"{where}: the child's answer says this group did not run, but this machine can run it "
                         f"(backend {BACKEND})")


def group_records(world_size: int, combine: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{case: (outputs [world_size, batch, heads, dim], checks [world_size, CHECK_SIZE])}`` of the
    group of ``world_size`` ranks that ran ``combine``; when that group failed, its failure, here."""
    (status, value), _ = ranks_run("suite")
    if status == "raised":
        raise_again(value)
    group_status, payload = ranks_script.decode_suite(value)[(world_size, combine)]
    where = f"{combine} in a group of {ranks_word(world_size)}"
    if group_status == ranks_script.NOT_RUN:
        not_run(world_size, where)
    if group_status != ranks_script.RAN:
        lines = payload.rstrip().splitlines() or ["(no message)"]
        if group_status == ranks_script.NOT_IMPLEMENTED:
            raise NotImplementedError(f"{where}: {lines[-1]}")
        trace = "\n".join(lines[:-1])[-3000:]
        raise AssertionError(f"{where}: {lines[-1]}" + (f"\n\nthat rank's traceback:\n{trace}" if trace else ""))
    records, offset = {}, 0
    for name, shape in ranks_script.output_shapes(world_size).items():
        size = math.prod(shape)
        records[name] = (payload[:, offset:offset + size].reshape(world_size, *shape),
                         payload[:, offset + size:offset + size + CHECK_SIZE])
        offset += size + CHECK_SIZE
    return records


def shape_problem(check_row, shape) -> str:
    """"" when the rank's output had ``shape``, else what it was."""
    dims = check_row[:SHAPE_DIMS]
    if (dims == -2).all():
        return "the output is not a torch.Tensor"
    got = tuple(int(d) for d in dims if d >= 0)
    return "" if got == tuple(shape) else f"the output has shape {got}, expected [batch, num_heads, head_dim] = {shape}"


def dense_truth(case) -> np.ndarray:
    """Attention of every sequence's query heads over all its keys, float64, from the logical K/V."""
    return np.stack([labkit.attention_f64(case.q[b], case.keys[b], case.values[b]) for b in range(len(case.keys))])


def rank_parts(case):
    """Each rank's summary ``(m, denom, acc)`` ``[world_size, batch, heads, ...]`` from the definition,
    over the tokens that dealing the stripes by hand gives it: for naming a wrong combine."""
    world_size = case.world_size
    batch, num_heads, head_dim = case.q.shape
    group = num_heads // case.spec.num_kv_heads
    m, denom = np.full((world_size, batch, num_heads), -np.inf), np.zeros((world_size, batch, num_heads))
    acc = np.zeros((world_size, batch, num_heads, head_dim))
    for b, (keys, values) in enumerate(zip(case.keys, case.values, strict=True)):
        owners = np.array([rank for rank, _ in dealt(len(keys), world_size, case.stripe)], dtype=np.int64)
        for rank in range(world_size):
            mine = owners == rank
            for h in range(num_heads):
                m[rank, b, h], denom[rank, b, h], acc[rank, b, h] = summary_f64(
                    case.q[b, h], keys[mine][:, h // group], values[mine][:, h // group])
    return m, denom, acc


def merged(m, denom, acc, reference):
    """``sum_r exp(m_r - M) acc_r / sum_r exp(m_r - M) denom_r`` over the ranks (axis 0) with the
    shared reference ``M`` given, a rank that holds nothing weighing 0, and zeros where the weights
    leave nothing (every rank empty, or every weight underflowed to 0)."""
    with np.errstate(invalid="ignore", over="ignore"):
        scale = np.where(denom > 0, np.exp(m - np.where(np.isfinite(reference), reference, 0.0)), 0.0)
    total_denom, total_acc = (scale * denom).sum(axis=0), (scale[..., None] * acc).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total_denom[..., None] > 0, total_acc / np.where(total_denom > 0, total_denom, 1.0)[..., None],
                        0.0)


def combine_mistake(case, got: np.ndarray, expected: np.ndarray) -> str:
    """What a wrong combine output looks like: the classic mistakes it equals (only those whose
    result differs from the truth on this case), or its symptom."""
    m, denom, acc = rank_parts(case)
    holds = denom > 0

    def divided(a, d):
        return np.where(d[..., None] > 0, a / np.where(d > 0, d, 1.0)[..., None], 0.0)

    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        top = m.max(axis=0)
        scale = np.where(holds, np.exp(m - np.where(np.isfinite(top), top, 0.0)), 0.0)  # exp(m_rank - M)
        own = divided(acc, denom)  # each rank's own output
        wrong = {
            "adding the ranks' denom and acc without rescaling each by exp(m_rank - M) (in the all-gather "
            "route: lse = log(denom), without m)":
                divided(acc.sum(axis=0), denom.sum(axis=0)),
            "averaging the ranks' own outputs (equal weights, not exp(lse_rank - lse))":
                own.sum(axis=0) / np.maximum(holds.sum(axis=0), 1)[..., None],
            "adding the ranks' own outputs": own.sum(axis=0),
            "all-reducing the rescaled sums with MAX instead of SUM":
                divided((scale[..., None] * acc).max(axis=0), (scale * denom).max(axis=0)),
            "one shared max M for the whole batch (m.max()), not one per (sequence, head): a sequence far "
            "below the batch's top gets weights exp(m - M) that underflow to 0":
                merged(m, denom, acc, np.full(top.shape, m.max())),
            "one max per sequence, taken over its heads too (M must be per (sequence, head))":
                merged(m, denom, acc, np.broadcast_to(top.max(axis=-1, keepdims=True), top.shape)),
            "a finite stand-in (0) for the -inf of a rank that holds none of a sequence, put in before the MAX: "
            "the max is then at least 0, and scores near -1000 underflow (replace -inf only in the reference "
            "computed after the MAX)":
                merged(m, denom, acc, np.where(holds, m, 0.0).max(axis=0)),
        }
    same = [name for name, value in wrong.items()
            if np.allclose(got, value, atol=1e-9, rtol=0) and not np.allclose(value, expected, atol=ATOL, rtol=0)]
    if same:
        return "\n  that is what " + " or ".join(same) + " gives"
    nowhere = [b for b, n in enumerate(case.spec.seq_lens) if n == 0]
    if np.isnan(got).any():
        rows = sorted({int(b) for b in np.argwhere(np.isnan(got))[:, 0]})
        if set(rows) <= set(nowhere):
            return (f"\n  NaN only for sequence(s) {rows}, which no rank holds: the global max is -inf there, so "
                    "exp(m - M) is exp(-inf - (-inf)) and the division 0/0; use a finite reference and guard the "
                    "division")
        return ("\n  NaN: inf / inf from an exp that overflowed (rescale with M = the MAX of the ranks' m, so that "
                "every exp(m - M) <= 1), exp(-inf - (-inf)) for a rank that holds none of a sequence, or poison read "
                "past a rank's tokens")
    if np.isinf(got).any():
        return "\n  inf: an exp overflowed; rescale with M = the MAX of the ranks' m, so that every exp(m - M) <= 1"
    lost = (np.abs(got) == 0).all(axis=-1) & (np.abs(expected) > 0).any(axis=-1)
    if lost.any():
        return (f"\n  zeros for (sequence, head) {np.argwhere(lost)[:4].tolist()}, where the truth is not: every "
                "weight exp(m - M) underflowed to 0, so the reference M lies far from the ranks' maxima (M must be "
                "the MAX over the ranks of that (sequence, head)'s own m)")
    error = float(np.max(np.abs(got - expected)))
    if error < 1e-2:
        return (f"\n  right to {error:.1e} only, where float64 gives {ATOL:g}: is a step of the combine computed in "
                "float32 or float16 (a cast before the collective, or in the encoding)?")
    return ""


def describe(case) -> str:
    spec = case.spec
    scores = {"normal": "", "hot_rank": ", scores near +1000 on the last rank only",
              "all_negative": ", every score near -1000", "all_positive": ", every score near +1000",
              "hot_token": ", one score per sequence near +1000 (sequence b's on rank (b + 1) % world_size), the "
                           "rest near 0",
              "far_apart": ", sequences near +1000, 0 and -1000 in one batch, odd heads the opposite of even ones",
              }[spec.scores]
    return (f"lengths {list(spec.seq_lens)}, stripe {case.stripe}, {spec.num_heads} query heads on "
            f"{spec.num_kv_heads} KV heads, {spec.poison} poison in unused slots{scores}")


def check_case(name: str, world_size: int, combine: str, key: str | None = None) -> list:
    """Every rank's output of case ``name`` (recorded under ``key``, the name by default) against dense
    attention; returns the ranks' checks."""
    __tracebackhide__ = True
    key = name if key is None else key
    case = ranks_script.build_case(name, world_size)
    expected = dense_truth(case)  # the truth first, from the sequences themselves
    outputs, checks = group_records(world_size, combine)[key]
    for rank in range(world_size):
        where = f"{combine} on rank {rank} of {world_size}, case {key} ({describe(case)})"
        problem = shape_problem(checks[rank], expected.shape)
        require(not problem, f"{where}: {problem}")
        try:
            labkit.assert_close(outputs[rank], expected, atol=ATOL, axes=AXES, what=where)
        except AssertionError as err:
            raise AssertionError(f"{err}{combine_mistake(case, outputs[rank], expected)}") from None
    return checks


WORLDS = [pytest.param(w, id=ranks_word(w)) for w in ranks_script.WORLD_SIZES]
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
    route, sums reduced with MAX, a lower precision on the way, and every rank_summaries bug."""
    check_case(name, world_size, combine)


@pytest.mark.parametrize("combine", COMBINES)
@pytest.mark.parametrize("world_size", WORLDS)
def test_empty_shards_change_nothing(lab, world_size, combine):
    """Contiguous split of a batch with lengths 3, 70, 0 and 17: the short sequences live on rank
    0 alone, the other ranks hold nothing of them, and the empty sequence is on no rank. Every rank
    gets dense attention, and zeros for the empty sequence.

    Catches: NaN from exp(-inf - (-inf)) or 0/0 where no rank holds a token, and every bug that
    fails on ranks holding different parts of a sequence."""
    check_case("contiguous_short_and_empty", world_size, combine)


@pytest.mark.parametrize("combine", COMBINES)
@pytest.mark.parametrize("world_size", WORLDS)
def test_huge_logits_on_one_rank(lab, world_size, combine):
    """Scores near +1000 on the last rank's tokens only, near 0 everywhere else: the other ranks'
    weights underflow to exactly 0 after rescaling, and the output is attention over the hot
    tokens. Finite and exact.

    Catches: a rank's sums added without rescaling to the global max, a shared reference other than
    the max (the MIN overflows), lse computed without the max, outputs averaged, the wrong KV head;
    exp of unshifted scores would overflow to inf."""
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
def test_the_top_score_on_another_rank_per_sequence(lab, world_size, combine):
    """One token of each sequence scores near +1000, every other near 0, and the hot token lives
    on a different rank for each sequence (sequence b's on rank (b + 1) % world_size, in a stripe of
    3 tokens that blocks of 4 do not divide): the output is that token's value, on every rank.

    Catches: a reference taken from one rank (a broadcast of rank 0's m, or its own m) instead of
    the MAX over all ranks (exp(1000 - 0) overflows), the ranks' sums added without rescaling."""
    check_case("hot_token_on_another_rank_per_sequence", world_size, combine)


@pytest.mark.parametrize("combine", COMBINES)
@pytest.mark.parametrize("world_size", WORLDS)
def test_sequences_far_apart_in_one_batch(lab, world_size, combine):
    """One batch whose sequences score near +1000, near 0 and near -1000, and in which the odd
    query heads of a sequence score the opposite of the even ones (+1000 and -1000 side by side):
    every (sequence, head) is exact.

    Catches: one max for the whole batch (``m.max()``) or for a sequence's heads together, instead
    of one per (sequence, head): the weights of everything far below it underflow to 0."""
    check_case("sequences_far_apart_in_one_batch", world_size, combine)


@pytest.mark.parametrize("combine", COMBINES)
@pytest.mark.parametrize("world_size", WORLDS)
def test_ranks_that_hold_nothing_near_minus_1000(lab, world_size, combine):
    """Lengths 3, 1, 0 and 2 split contiguously, every score near -1000: on 4 ranks, rank 3 holds
    no token at all, and every sequence is missing from some rank (its m there is -inf); the empty
    sequence is on none. Every rank gets dense attention, zeros for the empty sequence.

    Catches: a rank that holds nothing standing in for -inf with a finite number (0) before the MAX,
    so that the shared max is 0 and every weight exp(-1000 - 0) underflows; an empty summary decoded
    with m = 0 by from_out_lse (the all-gather route)."""
    check_case("short_batch_near_minus_1000", world_size, combine)


@pytest.mark.parametrize("combine", COMBINES)
def test_combine_uses_the_group_it_is_given(lab, combine):
    """Four ranks, then two groups of two (``torch.distributed.new_group``): ranks 0-1 combine one
    batch and ranks 2-3 another of the same shapes, each calling the combine with ``group=`` its
    pair. Each rank gets its own pair's dense attention.

    Catches: a collective called without ``group=group`` (it runs over all four ranks and mixes the
    other pair's sums in; a MAX without it gives ranks 0-1, whose scores are near 0, the maximum of
    ranks 2-3, near +1000, and their weights underflow)."""
    world_size = ranks_script.PAIRS_WORLD_SIZE
    names = list(ranks_script.PAIR_CASES)
    truths = [dense_truth(ranks_script.build_case(name, 2)) for name in names]  # the truth first
    outputs, checks = group_records(world_size, combine)["pairs"]
    for rank in range(world_size):
        pair = rank // 2
        where = (f"{combine}(..., group=) on rank {rank} of {world_size}, whose ranks {2 * pair} and {2 * pair + 1} "
                 f"form a group of 2 for case {names[pair]}")
        problem = shape_problem(checks[rank], truths[pair].shape)
        require(not problem, f"{where}: {problem}")
        try:
            labkit.assert_close(outputs[rank], truths[pair], atol=ATOL, axes=AXES, what=where)
        except AssertionError as err:
            raise AssertionError(
                f"{err}\n  every collective of the combine must be given group=group: without it, it runs over all "
                f"{world_size} ranks, where a SUM adds the other pair's summaries and a MAX takes the other pair's "
                "maximum (ranks 2-3 score near +1000, ranks 0-1 near 0, whose weights then vanish) (if the other "
                "distributed tests fail too, start with those)") from None


UNCHANGED = slice(SHAPE_DIMS + 1, SHAPE_DIMS + 1 + len(ranks_script.SUMMARIES))  # the check row's fields
ISSUED = SHAPE_DIMS + 1 + len(ranks_script.SUMMARIES)  # how many collectives; then (kind, op, elements) each


@pytest.mark.parametrize("combine", COMBINES)
@pytest.mark.parametrize("world_size", WORLDS)
def test_combine_keeps_dtype_and_leaves_the_summaries_alone(lab, world_size, combine):
    """For every case, in every dtype it runs in: the output has shape [batch, num_heads, head_dim]
    and the summaries' dtype, and the rank's m, denom and acc are unchanged after the combine
    (collectives work in place: a combine must not reduce the caller's tensors).

    Catches: all_reduce(m) on the caller's m, a to_out_lse that writes into its inputs, an output
    cast to float32, or computed in float64 and handed back so."""
    problems, changed_any = [], False
    for key, (_, checks) in group_records(world_size, combine).items():
        shape = ranks_script.output_shapes(world_size)[key]
        want = ranks_script.runs(world_size)[key][1]
        for rank, row in enumerate(checks):
            problem = shape_problem(row, shape)
            if problem:
                problems.append(f"case {key}, rank {rank}: {problem}")
            dtype = ranks_script.DTYPES[int(row[SHAPE_DIMS])]
            if dtype != want:
                problems.append(f"case {key}, rank {rank}: the output is {dtype}, expected {want} (acc's dtype: "
                                "compute in another if you like, but hand back the summaries' own)")
            changed = [what for what, ok in zip(ranks_script.SUMMARIES, row[UNCHANGED], strict=True) if ok != 1]
            if changed:
                changed_any = True
                problems.append(f"case {key}, rank {rank}: the caller's {', '.join(changed)} changed")
    if changed_any:
        problems.append(
            "collectives write their result into the tensor they get: all-reduce a copy (m.clone()) and build new "
            "tensors for the rescaled sums" if combine == "combine_all_reduce" else
            "the given combine_all_gather writes into none of them itself; your to_out_lse, which it calls first on "
            "them, does: compute new tensors, never in place")
    require(not problems, f"{combine} in a group of {ranks_word(world_size)}:\n  " + "\n  ".join(problems[:12])
            + (f"\n  ... ({len(problems) - 12} more)" if len(problems) > 12 else ""))


def rounded_truth(case, dtype: str) -> np.ndarray:
    """The combine's exact result on the ranks' summaries as the given dtype holds them: each rank's
    summary from the definition, rounded to ``dtype``, then merged in float64."""
    parts = [torch.from_numpy(x).to(getattr(torch, dtype)).double().numpy() for x in rank_parts(case)]
    return merged(*parts, parts[0].max(axis=0))


# Tolerance of a combine computed in a low precision: every output is a convex combination of the
# values (|v| < 5 here); exp(m - M), the products, the sums over at most 4 ranks and the division
# each round once, and the (out, lse) route rounds out and lse once more: about a dozen roundings of
# relative size eps / 2, each weighing at most max |v|. 8 eps * max |v| (measured: under 2 eps * max
# |v|); a step computed in the next lower dtype misses it by orders of magnitude (float16's eps is
# 8,000 times float32's).
LOW_DTYPES = [pytest.param(d, id=d) for d in ranks_script.LOW_DTYPES]


@pytest.mark.parametrize("dtype", LOW_DTYPES)
@pytest.mark.parametrize("combine", COMBINES)
@pytest.mark.parametrize("world_size", WORLDS)
def test_combine_keeps_each_floating_dtype(lab, world_size, combine, dtype):
    """The summaries cast to float32, float16 or bfloat16 (the docstring takes any floating dtype):
    the output is of acc's dtype and equals the exact combine of those rounded summaries to that
    dtype's precision (8 eps times the largest value). Cases: the ragged GQA batch, and the
    contiguous split with empty shards and a sequence on no rank.

    Catches: a result computed in float64 and handed back in float64 (``.double()`` on the way), a
    cast to a lower precision, NaN from a guard that is only right in float64."""
    for name in ranks_script.DTYPE_CASES:
        key = f"{name} in {dtype}"
        case = ranks_script.build_case(name, world_size)
        expected = rounded_truth(case, dtype)  # the truth first
        atol = 8 * torch.finfo(getattr(torch, dtype)).eps * max(float(np.abs(v).max()) for v in case.values if v.size)
        outputs, checks = group_records(world_size, combine)[key]
        for rank in range(world_size):
            where = f"{combine} on rank {rank} of {world_size}, case {name} with {dtype} summaries ({describe(case)})"
            problem = shape_problem(checks[rank], expected.shape)
            require(not problem, f"{where}: {problem}")
            got = ranks_script.DTYPES[int(checks[rank][SHAPE_DIMS])]
            require(got == dtype, f"{where}: the output is {got}, expected {dtype}, acc's dtype (compute in float64 "
                    "if you like, but hand back the dtype you were given)")
            try:
                labkit.assert_close(outputs[rank], expected, atol=atol, rtol=0, axes=AXES, what=where)
            except AssertionError as err:
                raise AssertionError(
                    f"{err}\n  the exact combine of the {dtype} summaries is computed in float64, and {dtype} "
                    f"allows {atol:.1e} here: a NaN or a much larger error is a step computed in a lower precision, "
                    "or a guard that fails in this dtype (if the float64 tests fail too, start with those)") from None


def issued_calls(row, contiguity: bool = False) -> tuple[int, list[tuple]]:
    """How many collectives a rank's combine issued, and the first MAX_COLLECTIVES as (kind, op, elements),
    with ``contiguity`` as (kind, op, elements, whether the tensor sent was contiguous)."""
    count, width = int(row[ISSUED]), ranks_script.CALL_FIELDS
    fields = row[ISSUED + 1:ISSUED + 1 + width * ranks_script.MAX_COLLECTIVES].astype(int).reshape(-1, width)
    calls = [(ranks_script.COLLECTIVE_KINDS[kind], ranks_script.REDUCE_OPS[op], int(elements))
             + ((bool(contiguous),) if contiguity else ())
             for kind, op, elements, contiguous in fields[:min(count, ranks_script.MAX_COLLECTIVES)]]
    return count, calls


def say_calls(count: int, calls) -> str:
    words = [f"{kind}({op}) of {n} numbers" if op else f"{kind} of {n} numbers" for kind, op, n in calls]
    more = f" and {count - len(calls)} more" if count > len(calls) else ""
    return (", then ".join(words) + more) if words else "no collective"


@pytest.mark.parametrize("combine", COMBINES)
@pytest.mark.parametrize("world_size", WORLDS)
def test_combine_issues_the_collectives_the_readme_promises(lab, world_size, combine):
    """Every rank records each ``torch.distributed`` collective its combine calls, with the reduce
    op and the size of the tensor it sends: the all-reduce route issues exactly an all_reduce(MAX) of
    m (batch x heads numbers), then ONE all_reduce(SUM) of denom and acc together (batch x heads x
    (head_dim + 1)), the counts combine_bytes prices; the all-gather route one all-gather of (out,
    lse), head_dim + 1 numbers per (sequence, head). In every case and every dtype, on every rank.

    Catches: denom and acc all-reduced apart (three collectives, each with its own latency), the max
    found by an all-gather of m, a third collective for anything else, m sent with the sums."""
    problems = []
    for key, (_, checks) in group_records(world_size, combine).items():
        batch, heads, head_dim = ranks_script.output_shapes(world_size)[key]
        pairs = batch * heads
        if combine == "combine_all_reduce":
            want = [("all_reduce", "MAX", pairs), ("all_reduce", "SUM", pairs * (head_dim + 1))]
        else:
            want = [("all_gather", "", pairs * (head_dim + 1))]
        for rank, row in enumerate(checks):
            count, calls = issued_calls(row)
            if (count, calls) != (len(want), want):
                problems.append(f"case {key}, rank {rank}: {say_calls(count, calls)}")
    route = ("one all_reduce(MAX) of m, then one all_reduce(SUM) of denom and acc concatenated (torch.cat on a last "
             "axis): two collectives" if combine == "combine_all_reduce" else
             "one all_gather of (out, lse) concatenated: one collective")
    require(not problems, f"{combine} in a group of {ranks_word(world_size)} must issue {route}; it issued\n  "
            + "\n  ".join(problems[:8]) + (f"\n  ... ({len(problems) - 8} more)" if len(problems) > 8 else ""))


@pytest.mark.parametrize("combine", COMBINES)
@pytest.mark.parametrize("world_size", WORLDS)
def test_combine_takes_summaries_stored_heads_first(lab, world_size, combine):
    """The ragged GQA batch once more, its summaries handed over as views stored heads first (``m``
    and ``denom`` transposes of [num_heads, batch] tensors, as a kernel may lay out its lse; ``acc`` of
    a [num_heads, batch, head_dim] one): dense attention on every rank, and every tensor the combine
    hands a collective is contiguous. gloo copies a strided tensor for its collective; NCCL refuses it
    ("Tensors must be contiguous"), so a combine that sends one works on CPUs and fails on GPUs.

    Catches: the MAX all-reduced on ``m.clone()``, which keeps the strides of a view (ask the clone
    for ``torch.contiguous_format``)."""
    for name in ranks_script.STRIDED_CASES:
        key = f"{name} {ranks_script.STRIDED}"
        checks = check_case(name, world_size, combine, key=key)
        for rank in range(world_size):
            where = f"{combine} on rank {rank} of {world_size}, case {key}"
            count, calls = issued_calls(checks[rank], contiguity=True)
            strided = [f"{kind}({op}) of {n} numbers" if op else f"{kind} of {n} numbers"
                       for kind, op, n, contiguous in calls if not contiguous]
            require(not strided, f"{where}: the combine handed a tensor that is not contiguous to "
                    f"{', '.join(strided)}: gloo copies it, NCCL raises 'Tensors must be contiguous'. A copy for a "
                    "collective keeps the strides of a view unless asked otherwise: "
                    "clone(memory_format=torch.contiguous_format), or .contiguous() on a new tensor")


def test_no_rank_outlives_its_group(lab):
    """After the suite's groups of 1, 2 and 4 ranks, no process of the run is left; and every group
    got past the stubs (a run that stopped at a NotImplementedError has not run the whole suite).

    Catches: a launcher that returns while ranks still run (it kills and joins every rank)."""
    (status, value), alive = ranks_run("suite")
    if status == "raised":
        raise_again(value)
    require(not alive, f"processes of the suite's run still alive after it ended: {alive}")
    for (world_size, combine), (group_status, payload) in ranks_script.decode_suite(value).items():
        if group_status == ranks_script.NOT_RUN and not cannot_run_here(world_size):
            not_run(world_size, f"{combine} in a group of {ranks_word(world_size)}")
        if group_status == ranks_script.NOT_IMPLEMENTED:
            last = payload.rstrip().splitlines()[-1]
            raise NotImplementedError(f"{combine} in a group of {ranks_word(world_size)}: {last}")


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
    expected = re.escape(f": RuntimeError: {ranks_script.CRASH_MESSAGE}")
    require(re.search(rf"rank {ranks_script.CRASH_RANK} of \d+ failed(?: in [^\n:]*)?{expected}", message),
            f"the run must fail naming rank {ranks_script.CRASH_RANK} and its exception; got:\n{message[-1500:]}")
    require(not alive, f"processes of the crashed run still alive: {alive}")


# ------------------------------------------------------------------------------------------
# For the maintainers: bench.py's GPU pieces, checked on the CPU (the benchmark itself needs GPUs).


@pytest.mark.maintainer
def test_bench_summaries_match_float64(monkeypatch):
    """bench.py's per-GPU summaries over a shuffled paged cache (its ``place``): the torch fallback
    always, and lab 04-06's ``split_summaries`` merged over its splits when that lab has it (Triton's
    interpreter here), against ``summary_f64``; an empty shard gives the identity. float32, so
    1e-5 relative. The entries of 04-06's splits that hold no token are made NaN first: the merge must
    not read them. (Importing bench.py sets its NVLink-multicast variables in this process.)"""
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

    def poisoned_split_summaries(*args):
        """04-06's summaries with the entries of the splits that hold no token (unspecified there:
        whatever the scratch buffers held) made NaN, so that a merge which reads them shows it."""
        m, denom, acc, partition = ref.split_summaries(*args)
        empty = torch.arange(m.shape[-1]) >= ((args[4].long() + partition - 1) // partition)[:, None, None]
        nan = float("nan")
        return m.masked_fill(empty, nan), denom.masked_fill(empty, nan), acc.masked_fill(empty[..., None], nan), \
            partition

    lab06 = SimpleNamespace(split_summaries=poisoned_split_summaries)  # lab 04-06 as bench.py calls it
    if hasattr(ref, "choose_num_splits"):
        lab06.choose_num_splits = ref.choose_num_splits
    one_rank = torch.tensor([n], dtype=torch.int32)
    check(bench._from_split_summaries(lab06, q, k_cache, v_cache, padded, one_rank), "04-06 split summaries")
    m, denom, acc = bench._from_split_summaries(lab06, q, k_cache, v_cache, padded, torch.zeros_like(one_rank))
    require((m == -math.inf).all() and (denom == 0).all() and (acc == 0).all(),
            f"bench.py's 04-06 summaries of an empty shard must be the identity (-inf, 0, zeros), got m "
            f"{m.flatten()[:4].tolist()}, denom {denom.flatten()[:4].tolist()}, acc max |.| {float(acc.abs().max()):g}")
