"""Tests of lab 04-03: causal prefill over a paged KV cache, in numpy (steps 1-3) and Triton (4-6).

The truth is ``causal_prefill_f64`` below: float64, one query row at a time, ``labkit.attention_f64``
over the tokens the row may see (``0 .. start + i``) laid out contiguously. It is computed before
the call under test, from the values the implementation actually receives (rounded to the test's
dtype for the kernel), and never from another function of the implementation.

Poison: every cache slot that holds no token of the sequence yet (later positions of the last
block, blocks reserved for tokens still to come, blocks no sequence uses, the slots of a chunk
before it is written) holds a huge value, NaN or inf (``labkit.POISON_KINDS``). A huge finite
poison multiplied by a zero weight is still zero; NaN and inf are not, so a key read and then
"masked" only in the scores still fails.

Tolerances: the numpy part computes in float64 in another order than the truth (block by block,
rescaled when a row's max rises): 1e-10, against errors of 1e-3 or more for any real mistake.
The kernel: 1e-4 in float32 (float32 arithmetic on float32 inputs), 1e-2 in float16 and 2e-2 in
bfloat16 (the weights are rounded to the input type before the P.V product, relative error
~2**-11 and ~2**-8, on outputs of size ~1).

Past these examples, the API's whole contract (``labkit.contract``): the kernel on the views engines
pass (q a slice of qkv, out a view, K and V halves of one pool, tables cut from wider ones), lengths
at every tile and block edge with a full table, groups up to 64 query heads on one KV head, and
scores placed against the key tiles (and, in numpy, the blocks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import labkit
from labkit import triton_env
from labkit.testing import child, contract
from labkit.testing.cases import blocks_needed

STREAM_ATOL = 1e-10  # numpy streaming vs the float64 truth: same math, another summation order
AXES = ("query", "head", "dim")


# --------------------------------------------------------------------------------------------
# The truth, and the test's own placement of tokens into a paged cache
# --------------------------------------------------------------------------------------------


def causal_prefill_f64(q, k, v, start):
    """Float64 causal attention of ``q [M, num_heads, d]`` (positions ``start .. start + M - 1``)
    over contiguous ``k``, ``v [n, num_kv_heads, d]``: row ``i`` attends to ``k[:start + i + 1]``."""
    q, k, v = labkit.to_f64(q), labkit.to_f64(k), labkit.to_f64(v)
    out = np.zeros((q.shape[0], q.shape[1], v.shape[2]))
    for i in range(q.shape[0]):
        out[i] = labkit.attention_f64(q[i], k[: start + i + 1], v[: start + i + 1])
    return out


def random_prompt(seed, length, num_heads=4, num_kv_heads=2, head_dim=16):
    """Queries, keys and values of a prompt of ``length`` tokens: ``(rng, q, k, v)``, float64."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((length, num_heads, head_dim))
    k = rng.standard_normal((length, num_kv_heads, head_dim))
    v = rng.standard_normal((length, num_kv_heads, head_dim))
    return rng, q, k, v


def paged_cache(rng, k, v, written, block_size, capacity=None, pad=0, kind="huge"):
    """Caches holding tokens ``0 .. written - 1`` of ``k``, ``v`` through a shuffled block table.

    The table has blocks for ``capacity`` tokens (default: all of ``k``, reserved up front as a
    scheduler does) plus ``pad`` padding entries that point at block 0, the null block, which no
    token uses. Every slot that holds none of the ``written`` tokens is poisoned with ``kind``,
    block 0 and the reserved slots of tokens still to come included. Returns ``(k_cache, v_cache,
    block_table)``.
    """
    capacity = len(k) if capacity is None else capacity
    needed = blocks_needed(capacity, block_size)
    num_blocks = needed + 3
    # Block 0 is vLLM's null block: no token lives there and the padding entries point at it.
    table = np.concatenate([1 + rng.permutation(num_blocks - 1)[:needed], np.zeros(pad, dtype=np.int64)])
    k_cache = rng.standard_normal((num_blocks, block_size, *k.shape[1:]))
    v_cache = rng.standard_normal((num_blocks, block_size, *v.shape[1:]))
    for t in range(written):
        k_cache[table[t // block_size], t % block_size] = k[t]
        v_cache[table[t // block_size], t % block_size] = v[t]
    labkit.poison_unused_slots(k_cache, table[:needed], written, kind=kind)
    labkit.poison_unused_slots(v_cache, table[:needed], written, kind=kind)
    return k_cache, v_cache, table


def check(out, expected, what, atol=STREAM_ATOL):
    __tracebackhide__ = True
    labkit.assert_close(out, expected, atol=atol, axes=AXES, what=what, dtype=np.float64)


def prefill_in_chunks(lab, chunks, q, k, v, k_cache, v_cache, table, block_size, expected, described):
    """Run ``prefill_chunk`` over the prompt in ``chunks`` (token counts, from position 0), each
    chunk's output checked against its rows of ``expected``."""
    __tracebackhide__ = True
    start = 0
    for chunk in chunks:
        end = start + chunk
        out = lab.prefill_chunk(q[start:end], k[start:end], v[start:end], k_cache, v_cache, table, start, block_size)
        check(out, expected[start:end], f"prefill_chunk for tokens {start}..{end - 1} {described}")
        start = end


# --------------------------------------------------------------------------------------------
# Step 1: the causal mask
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "start, num_queries, keys",
    [(0, 5, range(0, 5)), (7, 4, range(0, 12)), (7, 4, range(8, 12)), (12, 1, range(8, 16)), (3, 0, range(0, 4)),
     (9, 6, []), (2**63 - 2, 3, [0, 2**63 - 2, 2**63 - 1]), (2**64, 2, [0, 2**63 - 1])],
    ids=["from-scratch", "after-prefix", "one-block", "decode-token", "no-queries", "no-keys",
         "rows-up-to-position-2**63", "start-2**64"],
)
def test_causal_mask_bounds(lab, start, num_queries, keys):
    """mask[i, j] is True exactly when key position keys[j] <= start + i: a row sees its own
    token and everything before it, never a later one; keys may be any block's positions.

    Starts near and past int64's largest value (any int >= 0 is a start): the last row of
    ``start = 2**63 - 2`` sits at 2**63 and sees every key; a start of 2**64 sees every key.

    Catches: ``<`` instead of ``<=`` (a row blind to itself: row 0 of a prompt sees nothing),
    ``<= start + i + 1`` (one future token), ignoring ``start`` (positions counted from 0), the
    query positions ``start + i`` formed in int64 (they wrap around past 2**63 - 1 to negative
    numbers, which see no key; a start past it is numpy's OverflowError)."""
    keys = np.array(list(keys), dtype=np.int64)
    expected = np.array([[int(t) <= start + i for t in keys] for i in range(num_queries)], dtype=bool)
    expected = expected.reshape(num_queries, len(keys))
    keys.flags.writeable = False
    try:
        with np.errstate(over="ignore"):
            got = lab.causal_mask(start, num_queries, keys)
    except OverflowError as err:
        raise AssertionError(f"causal_mask(start={start}, num_queries={num_queries}) raised OverflowError: {err}\n"
                             "  start may be any int >= 0: compare key_positions[j] - i <= start, which fits in "
                             "int64, rather than forming start + i") from None
    labkit.assert_equal(np.asarray(got), expected, axes=("query", "key index"), dtype=np.bool_,
                        what=f"causal_mask(start={start}, num_queries={num_queries}, keys {keys.tolist()})")


# --------------------------------------------------------------------------------------------
# Step 2: the chunk's attention over a cache that already holds it
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("length, block_size", [(1, 4), (16, 4), (23, 5), (37, 8), (20, 1), (30, 64)])
def test_prefill_from_scratch_matches_causal_attention(lab, length, block_size):
    """A whole prompt in one chunk (start = 0) over a shuffled table: row i equals dense float64
    attention over tokens 0 .. i. Block sizes from 1 to one partial block holding everything.

    Catches: no causal mask (rows see the future), no 1/sqrt(head_dim) scale, a running max that
    is not corrected, the last block read past the prompt (its tail is poisoned)."""
    rng, q, k, v = random_prompt(100 + length, length)
    k_cache, v_cache, table = paged_cache(rng, k, v, length, block_size)
    expected = causal_prefill_f64(q, k, v, 0)
    out = lab.paged_prefill_attention(q, k_cache, v_cache, table, 0, block_size)
    check(out, expected, f"paged_prefill_attention, a {length}-token prompt in blocks of {block_size}")


@pytest.mark.parametrize("start, chunk", [(8, 8), (8, 5), (13, 7), (13, 3), (30, 1)],
                         ids=["on-boundaries", "starts-on-boundary", "inside-blocks", "inside-one-block", "decode"])
@pytest.mark.parametrize("pad", [0, 2], ids=["no-padding", "padded-table"])
def test_chunk_after_a_scattered_prefix(lab, start, chunk, pad):
    """A chunk at positions start .. start + chunk - 1 after a cached prefix, blocks of 4 in
    shuffled order, the chunk beginning and ending on block boundaries and inside blocks. The
    table also lists blocks reserved for the rest of the prompt (poisoned), and with
    ``padded-table`` two padding entries after them.

    Catches: ignoring ``start`` (query row i treated as position i), streaming only the chunk's
    blocks (the prefix forgotten), blocks read in physical order, an off-by-one mask."""
    rng, q, k, v = random_prompt(10 * start + chunk + pad, 40)
    k_cache, v_cache, table = paged_cache(rng, k, v, start + chunk, 4, pad=pad)
    expected = causal_prefill_f64(q[start : start + chunk], k, v, start)
    out = lab.paged_prefill_attention(q[start : start + chunk], k_cache, v_cache, table, start, 4)
    check(out, expected, f"paged_prefill_attention, chunk {start}..{start + chunk - 1} after a prefix")


@pytest.mark.parametrize("kind", labkit.POISON_KINDS)
@pytest.mark.parametrize("start, chunk, block_size", [(0, 13, 4), (6, 9, 4), (5, 11, 16)])
def test_future_positions_are_poisoned(lab, kind, start, chunk, block_size):
    """Every slot past the chunk's last token holds poison: the rest of its last block and the
    blocks reserved for tokens still to come. The last row's position is the last valid one, so
    a mask off by one reads poison: huge shifts the answer by orders of magnitude, NaN and inf
    turn it into NaN even when the poisoned key is masked in the scores but its value is still
    multiplied by a zero weight.

    Catches: ``t <= start + i + 1``, reading the last block to its end, a causal mask applied to
    the scores but not to which rows of V are read."""
    rng, q, k, v = random_prompt(start + chunk + block_size, 30)
    k_cache, v_cache, table = paged_cache(rng, k, v, start + chunk, block_size, kind=kind)
    expected = causal_prefill_f64(q[start : start + chunk], k, v, start)
    out = lab.paged_prefill_attention(q[start : start + chunk], k_cache, v_cache, table, start, block_size)
    check(out, expected, f"paged_prefill_attention with {kind} poison past position {start + chunk - 1} (read only "
                         "the valid rows of the last block; a mask on the scores does not stop 0 * NaN)")


@pytest.mark.parametrize("num_heads, num_kv_heads", [(4, 4), (4, 2), (6, 2), (8, 1)],
                         ids=["mha", "gqa2", "gqa3", "mqa"])
def test_grouped_query_heads(lab, num_heads, num_kv_heads):
    """Query head h reads KV head h // (num_heads // num_kv_heads): groups of 1, 2, 3 and 8.

    Catches: ``h % num_kv_heads`` (interleaved groups), ``h // num_kv_heads``."""
    rng, q, k, v = random_prompt(num_heads * 7 + num_kv_heads, 25, num_heads, num_kv_heads)
    k_cache, v_cache, table = paged_cache(rng, k, v, 25, 4)
    expected = causal_prefill_f64(q[10:], k, v, 10)
    out = lab.paged_prefill_attention(q[10:], k_cache, v_cache, table, 10, 4)
    check(out, expected, f"paged_prefill_attention, {num_heads} query heads over {num_kv_heads} KV heads")


@pytest.mark.parametrize("case", ["rows-at-plus-and-minus-1000", "late-spike"])
def test_large_logits_keep_a_max_per_row(lab, case):
    """Scores float64's exp cannot take, which only a running max kept per query row survives.
    ``rows-at-plus-and-minus-1000``: some rows score every key near +1000, others near -1000
    (a max shared by the whole chunk makes the second kind exp(-2000) = 0, then 0/0).
    ``late-spike``: one key of the last block scores 1000 for every row that sees it (a max
    not updated before the block's weights are taken overflows to inf).

    Catches: one running max for all rows, no max subtraction, a stale max."""
    block_size, start, chunk = 4, 6, 10
    rng, q, k, v = random_prompt(77, start + chunk)
    k[:, :, 0] = 1.0 + 0.005 * rng.standard_normal(k.shape[:2])  # component 0 carries the large part
    scale = math.sqrt(q.shape[2])
    if case == "rows-at-plus-and-minus-1000":
        q[start:, :, 0] = np.where(np.arange(chunk) % 2 == 0, 1000.0, -1000.0)[:, None] * scale
    else:  # every query puts scale into component 0; the spike key, in the last block, 1000 there
        q[:, :, 0] = scale
        k[start + chunk - 2, :, 0] = 1000.0
    k_cache, v_cache, table = paged_cache(rng, k, v, start + chunk, block_size)
    expected = causal_prefill_f64(q[start:], k, v, start)
    out = lab.paged_prefill_attention(q[start:], k_cache, v_cache, table, start, block_size)
    check(out, expected, f"paged_prefill_attention, {case}")


@pytest.mark.parametrize("pattern", contract.SCORE_PATTERNS)
def test_score_patterns_across_blocks(lab, pattern):
    """Scores placed against the blocks the stream walks (``labkit.contract.SCORE_PATTERNS``, the
    segment being a block of 4; one sequence, so "neighbours far apart" is one flat level): flat
    near +1000 or -1000, one key 100 above the rest in the first block or in the last, the mass
    clustered in a middle block, the first block near -1000 and the rest near 0. Every row's
    running max must hold the largest score it has seen, in whichever block.

    Catches: a running max replaced by each block's own max (``running_max_is_block_max``), a max
    that starts at 0, one max for all rows."""
    block_size, start, chunk = 4, 14, 9
    rng, q, k, v = random_prompt(61, start + chunk)
    levels = contract.score_levels(pattern, start + chunk, block_size)
    table = np.arange(blocks_needed(start + chunk, block_size))  # the steering's own placement: one block per row
    k_blocks = np.zeros((len(table), block_size, *k.shape[1:]))
    k_blocks.reshape(-1, *k.shape[1:])[: start + chunk] = k
    contract.steer_scores(q, k_blocks, table[None], [start + chunk], [levels], seed=61)
    k = k_blocks.reshape(-1, *k.shape[1:])[: start + chunk]
    k_cache, v_cache, table = paged_cache(rng, k, v, start + chunk, block_size)
    expected = causal_prefill_f64(q[start:], k, v, start)
    out = lab.paged_prefill_attention(q[start:], k_cache, v_cache, table, start, block_size)
    check(out, expected, f"paged_prefill_attention, scores {pattern} ({contract.SCORE_PATTERNS[pattern]})")


def test_streams_block_by_block(lab, monkeypatch):
    """One streaming pass: np.exp never sees more values at once than one block's scores for
    every row and every head of the chunk (num_queries x num_heads x block_size), so no row's full
    score list ever exists. Looping over the heads or computing them all at once both pass.

    Catches: gathering every key first and running an ordinary softmax over each row (right
    numbers, not this lab's algorithm), per head or for all heads at once. Only np.exp is
    watched."""
    block_size, start, chunk, num_heads = 4, 24, 5, 2
    rng, q, k, v = random_prompt(31, start + chunk, num_heads=num_heads, num_kv_heads=1)
    k_cache, v_cache, table = paged_cache(rng, k, v, start + chunk, block_size)
    expected = causal_prefill_f64(q[start:], k, v, start)
    real_exp = np.exp
    # One block's scores for all rows and heads: 40 values. The whole score list of one head is
    # 5 rows x 29 keys = 145, of both heads 290: a version that gathers first fails either way.
    limit = chunk * num_heads * block_size

    def watched_exp(x, *args, **kwargs):
        if np.size(x) > limit:
            raise AssertionError(
                f"paged_prefill_attention is not streaming block by block: np.exp was handed {np.size(x)} values at "
                f"once, more than one block's scores for every row and head of the chunk ({chunk} rows x {num_heads} "
                f"heads x {block_size} keys = {limit}); a whole row's scores were gathered first (README step 2)")
        return real_exp(x, *args, **kwargs)

    monkeypatch.setattr(np, "exp", watched_exp)
    out = lab.paged_prefill_attention(q[start:], k_cache, v_cache, table, start, block_size)
    monkeypatch.undo()
    check(out, expected, "paged_prefill_attention (streamed)")


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_reads_only_and_returns_float64(lab, dtype):
    """paged_prefill_attention only reads: its inputs are handed over read-only (numpy raises on
    a write), the result is float64 [M, num_heads, head_dim] for float64 and float32 inputs
    alike, and an empty chunk gives an empty result.

    Catches: scaling q in place (``q *= scale`` on the caller's float64 array), "masking" the
    cache by overwriting slots, a float32 result."""
    rng, q, k, v = random_prompt(5, 21)
    k_cache, v_cache, table = paged_cache(rng, k, v, 21, 4)
    q, k, v, k_cache, v_cache = (x.astype(dtype) for x in (q[9:], k, v, k_cache, v_cache))
    expected = causal_prefill_f64(q, k, v, 9)
    for x in (q, k_cache, v_cache, table):
        x.flags.writeable = False
    out = lab.paged_prefill_attention(q, k_cache, v_cache, table, 9, 4)
    check(out, expected, f"paged_prefill_attention on read-only {np.dtype(dtype).name} inputs (computed in float64?)")
    empty = lab.paged_prefill_attention(q[:0], k_cache, v_cache, table, 9, 4)
    labkit.assert_close(empty, np.zeros((0, 4, 16)), atol=0, what="paged_prefill_attention of an empty chunk",
                        dtype=np.float64)


# --------------------------------------------------------------------------------------------
# Step 3: write the chunk, then attend
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "chunks",
    [[40], [8, 16, 16], [5, 11, 7, 17], [13, 1, 1, 25], [1] * 40],
    ids=["one-shot", "on-block-boundaries", "inside-blocks", "single-tokens-between", "token-by-token"],
)
@pytest.mark.parametrize("kind", ["huge", "nan"])
def test_chunked_equals_one_shot(lab, chunks, kind):
    """A 40-token prompt prefilled chunk by chunk with prefill_chunk (blocks of 8, reserved up
    front, every unwritten slot poisoned) gives, token for token, one-shot causal attention over
    the whole prompt; afterwards the cache holds the prompt. Chunks start and end on block
    boundaries and inside blocks; ``token-by-token`` is 40 decode-sized steps. Chunking changes
    when the work is done, never what it computes.

    Catches: attending before the chunk is written (its own keys are poison), ignoring
    ``start`` in the slots or in the mask, a mask off by one, the prefix left out."""
    block_size = 8  # the chunks of each case add up to the 40 tokens of the prompt
    rng, q, k, v = random_prompt(sum(c * c for c in chunks), 40)
    k_cache, v_cache, table = paged_cache(rng, k, v, 0, block_size, kind=kind)
    expected = causal_prefill_f64(q, k, v, 0)  # one shot, the whole prompt
    prefill_in_chunks(lab, chunks, q, k, v, k_cache, v_cache, table, block_size, expected, f"(chunks {chunks})")
    axes = ("token", "kv_head", "dim")
    labkit.assert_close(labkit.gather_f64(k_cache, table, 40), k, atol=0, axes=axes, what="K in the cache afterwards")
    labkit.assert_close(labkit.gather_f64(v_cache, table, 40), v, atol=0, axes=axes, what="V in the cache afterwards")


@pytest.mark.parametrize("prefix", [0, 7, 8, 19])
def test_a_one_token_chunk_is_a_decode_step(lab, prefix):
    """A chunk of one token at position ``prefix`` is what a decode step computes: single-query
    attention over tokens 0 .. prefix, the new one included, for every head.

    Catches: the new token left out of its own attention (written after the read, or a mask
    with ``<``), a decode step that reads one slot too many."""
    rng, q, k, v = random_prompt(prefix, prefix + 1, num_heads=6, num_kv_heads=2)
    k_cache, v_cache, table = paged_cache(rng, k, v, prefix, 4, kind="nan")
    expected = labkit.attention_f64(q[prefix], k, v)[None]  # the decode formula of labs 02-06 and 04-01
    out = lab.prefill_chunk(q[prefix:], k[prefix:], v[prefix:], k_cache, v_cache, table, prefix, 4)
    check(out, expected, f"prefill_chunk of one token at position {prefix}")


def test_prefill_chunk_writes_only_the_chunks_slots(lab):
    """prefill_chunk changes the caches at the chunk's slots and nowhere else (the prefix, the
    reserved blocks, blocks of other sequences are left as they were), and its answer is right.

    Catches: writes through a wrong slot formula, a write into a copy (the next chunk then
    reads poison), writing new_k into the value cache."""
    block_size, start, chunk = 4, 10, 7
    rng, q, k, v = random_prompt(9, 30)
    k_cache, v_cache, table = paged_cache(rng, k, v, start, block_size, kind="huge")
    expected_k, expected_v = k_cache.copy(), v_cache.copy()
    for t in range(start, start + chunk):
        expected_k[table[t // block_size], t % block_size] = k[t]
        expected_v[table[t // block_size], t % block_size] = v[t]
    expected = causal_prefill_f64(q[start : start + chunk], k, v, start)
    out = lab.prefill_chunk(q[start : start + chunk], k[start : start + chunk], v[start : start + chunk],
                            k_cache, v_cache, table, start, block_size)
    check(out, expected, "prefill_chunk")
    axes = ("block", "slot", "kv_head", "dim")
    labkit.assert_close(k_cache, expected_k, atol=0, axes=axes, what="k_cache after prefill_chunk")
    labkit.assert_close(v_cache, expected_v, atol=0, axes=axes, what="v_cache after prefill_chunk")


# The contract (labkit.contract): the views engines pass, one layout at a time, the others contiguous.
NUMPY_LAYOUTS = {
    **{name: ("cache", name) for name in contract.CACHE_LAYOUTS if name != "contiguous"},
    **{name: ("q", name) for name in contract.Q_LAYOUTS if name != "contiguous"},
}


@pytest.mark.parametrize("layout", NUMPY_LAYOUTS)
def test_prefill_chunk_on_the_views_engines_pass(lab, layout):
    """A 16-token prompt prefilled in chunks of 6, 1 and 9 tokens (blocks of 4: chunks that end
    inside a block, a decode-sized one, one that fills the table) with the caches or ``q`` as the
    views an engine passes (``labkit.contract``: K and V as ``kv[:, 0]``, ``kv[:, 1]`` of one fused
    pool, a pool stored heads outside the slots, ``q`` a slice of the fused ``qkv``); every unwritten
    slot NaN. Each chunk's output is causal attention over the prompt so far, the views hold the
    prompt afterwards, and paged_prefill_attention reads them back for a chunk after a prefix of 5.

    Catches: the chunk written through ``cache.reshape(...)``, which for a view is a copy: the
    write is lost, and the chunk then attends to NaN where its own keys should be."""
    block_size, chunks = 4, [6, 1, 9]
    rng, q, k, v = random_prompt(83, sum(chunks))
    k_cache, v_cache, table = paged_cache(rng, k, v, 0, block_size, kind="nan")
    expected = causal_prefill_f64(q, k, v, 0)  # one shot, the whole prompt, before any call
    kind, name = NUMPY_LAYOUTS[layout]
    if kind == "cache":
        k_cache, v_cache = contract.CACHE_LAYOUTS[name].apply(k_cache, v_cache)
        described = contract.CACHE_LAYOUTS[name].describe
        hint = " (a write through a reshape of a view is lost: reshape copies it)"
    else:
        q = contract.Q_LAYOUTS[name].apply(q, k.shape[1])
        described, hint = contract.Q_LAYOUTS[name].describe, ""
    for x in (q, k, v, table):
        x.flags.writeable = False
    prefill_in_chunks(lab, chunks, q, k, v, k_cache, v_cache, table, block_size, expected, f"with {described}{hint}")
    axes = ("token", "kv_head", "dim")
    for cache, truth, which in ((k_cache, k, "K"), (v_cache, v, "V")):
        labkit.assert_close(labkit.gather_f64(cache, table, len(k)), truth, atol=0, axes=axes,
                            what=f"{which} in the cache after prefill_chunk, {described}")
    out = lab.paged_prefill_attention(q[5:], k_cache, v_cache, table, 5, block_size)
    check(out, expected[5:], f"paged_prefill_attention of tokens 5..15 with {described}")


NUMPY_BAD_INPUTS = {
    "negative start": ("start", lambda a: {**a, "start": -1}),
    "start not an int": ("start", lambda a: {**a, "start": 2.0}),
    "q not 3-D": ("q", lambda a: {**a, "q": a["q"][0]}),
    "heads not a multiple of kv heads": ("num_heads", lambda a: {**a, "q": a["q"][:, :3]}),
    "block_size disagrees with the cache": ("block_size", lambda a: {**a, "block_size": 8}),
    "table too short": ("block_table", lambda a: {**a, "block_table": a["block_table"][:2]}),
    "block id outside the cache": ("block_table", lambda a: {**a, "block_table": a["block_table"] + 100}),
    "head_dim mismatch": ("head_dim", lambda a: {**a, "q": a["q"][..., :8]}),
    "no kv heads": ("num_kv_heads", lambda a: {**a, "k_cache": a["k_cache"][:, :, :0],
                                               "v_cache": a["v_cache"][:, :, :0]}),
    "caches 3-D": ("k_cache", lambda a: {**a, "k_cache": a["k_cache"][:, 0], "v_cache": a["v_cache"][:, 0]}),
    "v_cache of another shape": ("v_cache", lambda a: {**a, "v_cache": a["v_cache"][..., :8]}),
    "block_table of floats": ("block_table", lambda a: {**a, "block_table": a["block_table"].astype(np.float64)}),
    "block_table 2-D": ("block_table", lambda a: {**a, "block_table": a["block_table"][:, None]}),
}


@pytest.mark.parametrize("name", list(NUMPY_BAD_INPUTS) + ["new_k of another length"])
def test_bad_input_gets_a_clear_error(lab, name):
    """Bad arguments raise ValueError naming what is wrong, before anything is read or written
    (never an IndexError from inside numpy, never a half-written cache).

    Catches: missing input checks; caches of no KV head divided by (a ZeroDivisionError)."""
    rng, q, k, v = random_prompt(2, 12)
    k_cache, v_cache, table = paged_cache(rng, k, v, 12, 4)
    args = {"q": q[4:], "k_cache": k_cache, "v_cache": v_cache, "block_table": table, "start": 4, "block_size": 4}
    if name == "new_k of another length":
        before = k_cache.copy()
        with pytest.raises(ValueError, match="new_k"):
            lab.prefill_chunk(q[4:], k[4:11], v[4:], k_cache, v_cache, table, 4, 4)
        labkit.assert_close(k_cache, before, atol=0, what="k_cache after a rejected prefill_chunk")
        return
    word, change = NUMPY_BAD_INPUTS[name]
    with pytest.raises(ValueError, match=word):
        lab.paged_prefill_attention(**change(args))


@pytest.mark.parametrize("name", ["table too short", "block_size disagrees with the cache",
                                  "block id outside the cache", "block_table of floats", "negative start"])
def test_prefill_chunk_checks_everything_before_writing(lab, name):
    """prefill_chunk refuses each bad argument of paged_prefill_attention with the same ValueError,
    and before it writes a single slot: the caches are as they were.

    Catches: prefill_chunk checking only the chunk's new keys and values, leaving the rest to the
    attention it calls after the write (a table too short, a wrong block size or a float table
    then writes the chunk into the wrong slots, or half of it, before the error)."""
    rng, q, k, v = random_prompt(3, 12)
    k_cache, v_cache, table = paged_cache(rng, k, v, 4, 4)
    args = {"q": q[4:], "k_cache": k_cache, "v_cache": v_cache, "block_table": table, "start": 4, "block_size": 4}
    word, change = NUMPY_BAD_INPUTS[name]
    bad = change(args)
    before_k, before_v = k_cache.copy(), v_cache.copy()
    labkit.assert_refused(lambda: lab.prefill_chunk(bad["q"], k[4:], v[4:], bad["k_cache"], bad["v_cache"],
                                                    bad["block_table"], bad["start"], bad["block_size"]),
                          word, what=f"prefill_chunk with {name}")
    labkit.assert_close(k_cache, before_k, atol=0, what=f"k_cache after prefill_chunk refused {name}")
    labkit.assert_close(v_cache, before_v, atol=0, what=f"v_cache after prefill_chunk refused {name}")


def test_takes_lists_as_arrays(lab):
    """q and the block table may be any array-like (nested lists here), as np.asarray takes them: the
    given checks convert them, and the answer is the one of arrays, for paged_prefill_attention and
    prefill_chunk alike.

    Catches: q or the table used as it came (a list has no ``.ndim`` and cannot be indexed by a
    block id), the given ``_as_block_table`` not called first."""
    block_size, start, chunk = 4, 6, 5
    rng, q, k, v = random_prompt(12, start + chunk)
    k_cache, v_cache, table = paged_cache(rng, k, v, start, block_size, kind="nan")
    expected = causal_prefill_f64(q[start:], k, v, start)
    q_list, table_list = q[start:].tolist(), table.tolist()
    out = lab.prefill_chunk(q_list, k[start:], v[start:], k_cache, v_cache, table_list, start, block_size)
    check(out, expected, "prefill_chunk with q and block_table as lists")
    out = lab.paged_prefill_attention(q_list, k_cache, v_cache, table_list, start, block_size)
    check(out, expected, "paged_prefill_attention with q and block_table as lists")


NUMPY_INTEGERS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


@pytest.mark.parametrize("dtype", NUMPY_INTEGERS)
def test_integer_arguments_take_numpy_integers(lab, dtype):
    """``start``, ``num_queries`` and ``block_size`` may be numpy integers of any width (the docstrings'
    ints; an engine often holds them in arrays), with the answers of Python ints: ``causal_mask``,
    ``prefill_chunk`` and ``paged_prefill_attention`` of a 10-token chunk after a prefix of 123 tokens
    (int8) or 250 (uint8 and wider), so that ``start + M`` does not fit a narrow type.

    Catches: the Python ints the given checks return dropped and the arithmetic done in the caller's
    type (``np.int8(123) + 10`` wraps to -123: no block read, every row NaN; ``np.uint8(250) + 10`` is 4),
    a check that refuses a numpy integer or overflows on one (``-seq_len // np.uint64(16)``)."""
    to = np.dtype(dtype).type
    block_size, chunk = 16, 10
    start = min(int(np.iinfo(dtype).max) - 4, 250)
    rng, q, k, v = random_prompt(21, start + chunk, num_heads=2, num_kv_heads=1, head_dim=4)
    k_cache, v_cache, table = paged_cache(rng, k, v, start, block_size, kind="nan")
    expected = causal_prefill_f64(q[start:], k, v, start)
    keys = np.arange(start + chunk + 3)
    expected_mask = keys[None, :] <= start + np.arange(chunk)[:, None]
    what = f"start={start}, num_queries={chunk}, block_size={block_size} as {dtype}"
    got = lab.causal_mask(to(start), to(chunk), keys)
    labkit.assert_equal(np.asarray(got), expected_mask, axes=("query", "key"), dtype=np.bool_,
                        what=f"causal_mask, {what}")
    out = lab.prefill_chunk(q[start:], k[start:], v[start:], k_cache, v_cache, table, to(start), to(block_size))
    check(out, expected, f"prefill_chunk, {what}")
    out = lab.paged_prefill_attention(q[start:], k_cache, v_cache, table, to(start), to(block_size))
    check(out, expected, f"paged_prefill_attention, {what}")


MASK_BAD_INPUTS = {  # (start, num_queries, key_positions), the argument the error must name
    "negative start": ((-1, 3, [0, 1]), "start"),
    "start not an int": ((1.5, 3, [0, 1]), "start"),
    "start a bool": ((True, 3, [0, 1]), "start"),
    "num_queries a numpy float": ((2, np.float64(2.0), [0, 1]), "num_queries"),
    "negative num_queries": ((2, -1, [0, 1]), "num_queries"),
    "num_queries not an int": ((2, 2.5, [0, 1]), "num_queries"),
    "key positions of floats": ((2, 3, [0.0, 1.0]), "key_positions"),
    "key positions 2-D": ((2, 3, [[0, 1], [2, 3]]), "key_positions"),
    "a key position of -1 among others": ((2, 3, [4, -1, 0]), "key_positions"),
}


@pytest.mark.parametrize("name", MASK_BAD_INPUTS)
def test_causal_mask_refuses_bad_arguments(lab, name):
    """causal_mask takes an int start >= 0, an int num_queries >= 0 and a 1-D sequence of integer
    positions >= 0; anything else is a ValueError naming the argument. Each condition alone: a 2-D
    integer array, a 1-D float one, one negative position among non-negative ones (exactly -1); a
    bool or a numpy float is no int.

    Catches: the given checks not called (a negative start shifts every row, a negative num_queries
    gives an empty mask, float or 2-D positions broadcast into a wrong shape)."""
    (start, num_queries, keys), word = MASK_BAD_INPUTS[name]
    labkit.assert_refused(lambda: lab.causal_mask(start, num_queries, keys), word, what=f"causal_mask with {name}")


@pytest.mark.parametrize("keys", [[], np.zeros((0, 3)), np.zeros(0, dtype=np.float32)], ids=["list", "0x3", "float32"])
def test_causal_mask_takes_any_empty_keys(lab, keys):
    """No key positions, in any shape or dtype (an empty list is float64 to numpy): a
    ``[num_queries, 0]`` mask, never an error.

    Catches: an empty array held to the 1-D integer rule."""
    got = np.asarray(lab.causal_mask(3, 2, keys))
    labkit.assert_equal(got, np.zeros((2, 0), dtype=bool), axes=("query", "key index"), dtype=np.bool_,
                        what=f"causal_mask(3, 2, an empty {np.asarray(keys).dtype} array of shape {np.shape(keys)})")


# --------------------------------------------------------------------------------------------
# Steps 4-6: the Triton kernel, a ragged batch of chunks (GPU, or CPU through the interpreter)
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch():
    """torch, or a skip with the install command when torch/triton are missing."""
    torch, _ = triton_env.require_torch_and_triton()
    return torch


DEVICE = triton_env.device() if triton_env.has_torch_and_triton() else "cpu"
ON_GPU = DEVICE == "cuda"
DTYPE_NAMES = ["float16", "float32"] + (["bfloat16"] if ON_GPU else [])  # the interpreter gets bf16 wrong
KERNEL_ATOL = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 2e-2}
SENTINEL = 7.0  # what the padding rows of `out` hold before the call, and must hold after it
SINK_QUERY, SINK_KEY, SINK_VALUE = 4.0, 11.5, 8.0  # make_batch(scores="sink"): an attention sink at token 0
SPREAD = 120.0  # make_batch(scores="plus-minus"): rows scoring near +SPREAD and near -SPREAD
# The kernel's tiles are the starter's INTERPRETER_TILES in the interpreter (16 rows, 16 keys) and GPU_TILES
# on a GPU (128 rows, 64 keys): a query tile holds 8 tokens of a group of 2 there, 64 here. The tests that
# exist for a mistake at a tile's edge scale their lengths by TILE_SCALE, so that on a GPU too they cross
# query and key tiles (lengths sized for the interpreter fit in one GPU tile, where such a mistake is harmless).
TILE_SCALE = 4 if ON_GPU else 1
PATTERN_SEGMENT = 16 * TILE_SCALE  # make_batch(scores=<a contract pattern>): the key tile the kernel walks
triton_test = pytest.mark.triton


@dataclass
class Batch:
    q: object  # [num_tokens (+ padding rows), num_heads, head_dim]
    k_cache: object
    v_cache: object
    block_tables: object
    query_start_loc: object
    seq_lens: object
    expected: np.ndarray  # float64 [query_start_loc[-1], num_heads, head_dim]

    @property
    def args(self):
        return self.q, self.k_cache, self.v_cache, self.block_tables, self.query_start_loc, self.seq_lens


def make_batch(torch, specs, *, num_heads=4, num_kv_heads=2, head_dim=32, block_size=16, dtype="float16",
               seed=0, kind="huge", pad_rows=16, q_scale=1.0, scores="random", pad_columns=1):
    """A ragged batch: ``specs`` lists ``(context_len, query_len)`` per sequence.

    Each sequence's ``context_len + query_len`` tokens are in the paged cache (the chunk's own
    included, as vLLM writes them before attention), through a shuffled table whose padding
    entries point at block 0, the null block. Every other slot, block 0's included, is poisoned
    with ``kind``. The chunks' queries are packed into ``q``, followed by ``pad_rows`` NaN rows
    that belong to no sequence (a batch padded to a CUDA graph's size; 16 by default, so that a
    kernel storing a whole query tile past a chunk's end writes into padding the test checks,
    never past the tensor). ``scores``: ``"random"``; ``"sink"``, each sequence's first token an
    attention sink; ``"plus-minus"``, every other token's scores near +120, the rest near -120
    (below); or a pattern of ``labkit.contract.SCORE_PATTERNS``, placed against key tiles of
    ``PATTERN_SEGMENT`` keys (16; 64 on a GPU).
    ``pad_columns``: the table's columns past the longest sequence's blocks (0: it fills its row).
    ``expected`` comes from the dtype-rounded values, computed here, before any call.
    """
    torch_dtype = getattr(torch, dtype)
    rng = np.random.default_rng(seed)
    lens = [c + n for c, n in specs]
    need = [blocks_needed(n, block_size) for n in lens]
    num_blocks = 2 * sum(need) + 2
    # Block 0 is vLLM's null block: no sequence owns it, the tables' padding entries point at it, and
    # it is poisoned like every other slot without a token. A masked load's ``other=0`` block id lands
    # there too, so a K or V read that is not masked reads poison.
    pool = 1 + rng.permutation(num_blocks - 1)
    tables = np.zeros((len(specs), max(need + [0]) + pad_columns), dtype=np.int32)
    used = 0
    for s, n in enumerate(need):
        tables[s, :n] = pool[used : used + n]
        used += n
    shape = (num_blocks, block_size, num_kv_heads, head_dim)
    num_tokens = sum(n for _, n in specs)
    k_np, v_np = rng.standard_normal(shape), rng.standard_normal(shape)
    q_np = q_scale * rng.standard_normal((num_tokens + pad_rows, num_heads, head_dim))
    if scores == "plus-minus":
        # Component 0 of every key is 1 and of each query +-SPREAD * sqrt(head_dim), by token: the
        # scores of a token are SPREAD or -SPREAD, plus noise of about 1. exp(-SPREAD) underflows
        # float32 to 0, so a row must be exponentiated against its own max.
        k_np[..., 0] = 1.0
        q_np[:num_tokens, :, 0] = np.where(np.arange(num_tokens) % 2 == 0, SPREAD, -SPREAD)[:, None] * math.sqrt(
            head_dim)
    if scores in contract.SCORE_PATTERNS:
        levels = [contract.score_levels(scores, n, PATTERN_SEGMENT, s) for s, n in enumerate(lens)]
        contract.steer_scores(q_np[:num_tokens], k_np, tables, lens, levels, seed=seed)
    if scores == "sink":
        # Component 0 of every query is SINK_QUERY and of every key 0, but the sequence's first key
        # has SINK_KEY there: its score is about 11.5, some 8 above any other key's, so it takes
        # most of every row's weight and the other keys share the rest in small parts. Values:
        # SINK_VALUE for the sink, about -1 for the others.
        q_np[..., 0] = SINK_QUERY
        k_np[..., 0], v_np = 0.0, 0.5 * v_np - 1.0
        for table in tables[: len(specs)]:
            k_np[table[0], 0, :, 0] = SINK_KEY * math.sqrt(head_dim) / 4
            v_np[table[0], 0] = SINK_VALUE
    k_cache = torch.from_numpy(k_np).to(torch_dtype)
    v_cache = torch.from_numpy(v_np).to(torch_dtype)
    labkit.poison_unused_slots(k_cache, tables, lens, kind=kind)
    labkit.poison_unused_slots(v_cache, tables, lens, kind=kind)
    q = torch.from_numpy(q_np).to(torch_dtype)
    q[num_tokens:] = float("nan")

    expected, row = [], 0
    for s, (context, query_len) in enumerate(specs):
        k = labkit.gather_f64(k_cache, tables[s], context + query_len)
        v = labkit.gather_f64(v_cache, tables[s], context + query_len)
        expected.append(causal_prefill_f64(q[row : row + query_len], k, v, context))
        row += query_len
    starts = np.concatenate([[0], np.cumsum([n for _, n in specs])]).astype(np.int32)
    return Batch(q.to(DEVICE), k_cache.to(DEVICE), v_cache.to(DEVICE), torch.from_numpy(tables).to(DEVICE),
                 torch.from_numpy(starts).to(DEVICE), torch.tensor(lens, dtype=torch.int32, device=DEVICE),
                 np.concatenate(expected) if expected else np.zeros((0, num_heads, head_dim)))


def check_kernel(lab, torch, batch, what, out_view=False, **kwargs):
    """Run paged_prefill on the batch; compare the chunks' rows with the truth, the padding rows
    of ``out`` with the sentinel they held before the call. ``out_view``: ``out`` is a view into
    a wider buffer (``labkit.contract.qkv_slice``: its rows further apart than q's)."""
    __tracebackhide__ = True
    # out is contiguous, but its storage runs on for as long again (holding the sentinel too): a row
    # written past out's end lands in memory the test owns and checks, instead of crashing the process.
    storage = torch.full((2 * batch.q.shape[0], *batch.q.shape[1:]), SENTINEL, dtype=batch.q.dtype,
                         device=batch.q.device)
    out = storage[: batch.q.shape[0]]
    if out_view:
        out = contract.qkv_slice(out, batch.k_cache.shape[2])
    got = lab.paged_prefill(*batch.args, out=out, **kwargs)
    if got is not out:
        raise AssertionError(f"{what}: paged_prefill must return the `out` tensor it was given (written in place), "
                             f"got {type(got).__name__} {tuple(getattr(got, 'shape', ()))}")
    if out.dtype != batch.q.dtype or out.device != batch.q.device:
        raise AssertionError(f"{what}: `out` is now {out.dtype} on {out.device}, expected {batch.q.dtype} on "
                             f"{batch.q.device} (it must be written in place, never replaced)")
    num_tokens = len(batch.expected)
    dtype = str(batch.q.dtype).removeprefix("torch.")
    labkit.assert_close(out[:num_tokens], batch.expected, atol=KERNEL_ATOL[dtype], axes=("token", "head", "dim"),
                        what=what, dtype=batch.q.dtype)
    labkit.assert_close(out[num_tokens:], np.full(out[num_tokens:].shape, SENTINEL), atol=0,
                        axes=("padding row", "head", "dim"),
                        what=f"{what}: rows of out past query_start_loc[-1] (padding, must not be written)")
    if not out_view:
        beyond = storage[batch.q.shape[0] :]
        labkit.assert_close(beyond, np.full(beyond.shape, SENTINEL), atol=0, axes=("row past out", "head", "dim"),
                            what=f"{what}: memory past the end of out (written with another tensor's strides?)")
    return out


@triton_test
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_kernel_one_prompt_from_scratch(lab, torch, dtype):
    """One 45-token prompt from scratch (context 0; 180 on a GPU, whose tiles are 4 times larger):
    several query tiles and key tiles, the causal diagonal crossing them, GQA 4/2, blocks of 16 in
    shuffled order.

    Catches: no causal mask, a mask off by one, no scale, a running max not corrected, the
    unmasked part of the key loop run up to the tile's last row instead of its first."""
    n = 45 * TILE_SCALE
    batch = make_batch(torch, [(0, n)], dtype=dtype, seed=1)
    check_kernel(lab, torch, batch, f"paged_prefill, one prompt of {n} tokens ({dtype})")


@triton_test
@pytest.mark.parametrize("context, query_len", [(32, 16), (37, 20), (16, 1), (50, 3), (300, 5)],
                         ids=["on-block-boundaries", "inside-blocks", "decode-on-boundary", "short-chunk",
                              "long-prefix"])
def test_kernel_chunk_after_a_cached_prefix(lab, torch, context, query_len):
    """A chunk after a cached prefix, starting on a block boundary and inside a block: query row
    j sits at position context + j and sees the prefix and the chunk up to itself. After 300 tokens,
    the keys every row sees run to 288, past 256 = 16 key tiles of 16.

    Catches: ignoring the prefix (positions counted from the chunk's start), the prefix length
    taken as seq_lens itself, the key range stopping at the chunk's end, an end of the unmasked
    range that is not a whole number of key tiles (a float: the interpreter then folds the key at
    the split into both calls, once past 256 keys)."""
    batch = make_batch(torch, [(context, query_len)], seed=context + query_len)
    check_kernel(lab, torch, batch, f"paged_prefill, {query_len} tokens after a prefix of {context}")


@triton_test
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_kernel_ragged_batch(lab, torch, dtype):
    """A batch as vLLM schedules it: a prompt from scratch, a chunk after a prefix, two decode
    tokens, a sequence with no token this step, packed in ``q`` by ``query_start_loc``, with 17
    padding rows (NaN) after the last chunk whose output rows must stay as they were (every
    kernel test has such rows; this one has more than a tile's worth). The inputs are left
    unchanged. Lengths are 4 times longer on a GPU (TILE_SCALE).

    Catches: rows of one chunk written into another's, padding rows of a query tile stored,
    reading the table or the lengths of the wrong sequence, writing into the inputs, a running max
    not corrected, the unmasked part of the key loop run up to the tile's last row."""
    t = TILE_SCALE
    batch = make_batch(torch, [(0, 21 * t), (19 * t, 13 * t), (40 * t, 1), (5 * t, 0), (33 * t, 1), (3 * t, 17 * t)],
                       dtype=dtype, seed=2, pad_rows=17 * t)
    before = [t.clone() for t in batch.args]
    check_kernel(lab, torch, batch, f"paged_prefill, a ragged batch ({dtype})")
    names = ["q", "k_cache", "v_cache", "block_tables", "query_start_loc", "seq_lens"]
    for name, then, now in zip(names, before, batch.args, strict=True):
        if then.is_floating_point():  # q's padding rows are NaN, and NaN != NaN
            then, now = then.float().nan_to_num(0.5), now.float().nan_to_num(0.5)
        labkit.assert_equal(now, then, what=f"paged_prefill's input {name} after the call (inputs are only read)")


@triton_test
@pytest.mark.parametrize("kind", labkit.POISON_KINDS)
def test_kernel_future_and_unused_slots_are_poison(lab, torch, kind):
    """Huge, NaN or inf in every slot that holds no token: tails of last blocks (the lengths end
    1, 7 and 15 tokens into a block), unused blocks, the block the table's padding points at.
    NaN and inf catch a key that is read and only masked in the scores (0 * NaN is NaN).

    Catches: the last block read to its end, loads not masked at the sequence's end, the table
    read past a sequence's blocks."""
    batch = make_batch(torch, [(10, 7), (0, 17), (20, 11)], seed=3, kind=kind)
    check_kernel(lab, torch, batch, f"paged_prefill with {kind} poison in every slot without a token (a NaN or a "
                 "huge value here means a slot was read: are the K and V loads masked at the range's end? block 0, "
                 "where the table's padding and a masked load's other=0 point, is poison too)")


@triton_test
@pytest.mark.parametrize("contexts", [[0, 5, 16, 31, 47]])
def test_kernel_one_token_chunks_are_decode_steps(lab, torch, contexts):
    """A batch of one-token chunks is a decode batch: each token attends to its whole sequence,
    itself included (contexts 0, inside and on block boundaries).

    Catches: a token that does not see itself, the tile's padding rows stored over other
    sequences' rows."""
    batch = make_batch(torch, [(c, 1) for c in contexts], seed=4)
    check_kernel(lab, torch, batch, "paged_prefill, one-token chunks")


@triton_test
@pytest.mark.parametrize("num_heads, num_kv_heads",
                         [(1, 1), (4, 4), (8, 2), (6, 2), (8, 1), (24, 2), (32, 1), (64, 1)],
                         ids=["one-head", "mha", "gqa4", "gqa3", "gqa8", "gqa12", "mqa32", "mqa64"])
def test_kernel_grouped_query_heads(lab, torch, num_heads, num_kv_heads):
    """The query heads of a group share a K/V tile: query head h reads KV head
    h // (num_heads // num_kv_heads). Groups of 1, 4, 3 (rows of a 16-row tile left over:
    padding), 8, 12, 32 and 64 (more heads than the tile's default rows; the checks accept any
    group, up to every query head on one KV head).

    Catches: interleaved groups (h % num_kv_heads), padding rows of the tile stored, a tile too
    small for the group."""
    batch = make_batch(torch, [(9, 12), (0, 5)], num_heads=num_heads, num_kv_heads=num_kv_heads,
                       seed=num_heads + num_kv_heads)
    group = num_heads // num_kv_heads
    what = f"paged_prefill, {num_heads} query heads over {num_kv_heads} KV heads"
    if group & (group - 1):  # not a power of two: it does not divide BLOCK_M, and rows are left over
        what += (f" (a group of {group} does not divide the tile's BLOCK_M rows: the rows from BLOCK_Q * GROUP on "
                 f"belong to no token of the tile, and are masked like padding on load and store)")
    check_kernel(lab, torch, batch, what)


@triton_test
@pytest.mark.parametrize("block_size, head_dim", [(1, 16), (5, 32), (8, 32), (64, 16), (16, 64), (16, 128), (16, 256)])
def test_kernel_block_sizes_and_head_dims(lab, torch, block_size, head_dim):
    """Blocks of 1, 5 (not a power of two), 8 (a key tile spans several blocks) and 64 (a block
    spans several key tiles), head_dim 16, 32, 64, 128 and 256.

    Catches: one block per key tile assumed, the slot stride confused with the block stride,
    block ids looked up per tile instead of per key, a head_dim the check should take refused."""
    batch = make_batch(torch, [(13, 9), (0, 20)], block_size=block_size, head_dim=head_dim, seed=block_size)
    check_kernel(lab, torch, batch, f"paged_prefill, blocks of {block_size}, head_dim {head_dim}")


@triton_test
@pytest.mark.parametrize("dtype", ["float16", "float32", *(["bfloat16"] if ON_GPU else [])])
def test_kernel_widest_rows_in_each_dtype(lab, torch, dtype):
    """head_dim 256, the largest the checks take, in each dtype the kernel takes here: a float32 row of
    q is 1 KiB, and on a GPU the tiles that suit narrower rows need more shared memory than it has.

    Catches: one set of GPU tiles for every row width (on an H100, float32 at head_dim 256 and
    GPU_TILES asks for 289 KiB of shared memory: Triton's OutOfResources)."""
    batch = make_batch(torch, [(37, 20), (0, 9)], head_dim=256, dtype=dtype, seed=256)
    check_kernel(lab, torch, batch, f"paged_prefill, head_dim 256, {dtype}")


@triton_test
@pytest.mark.parametrize("scores", ["random-near-100", "rows-at-plus-and-minus-120"])
def test_kernel_large_logits(lab, torch, scores):
    """Scores float32's exp cannot take (it overflows past ~88 and is 0 below ~-104), in float32:
    ``random-near-100``, random scores up to about +-100; ``rows-at-plus-and-minus-120``, the
    scores of every other token near +120 and of the rest near -120, so each tile holds rows of
    both kinds. The running max must be subtracted before exp, per row, from -inf on.

    Catches: exp of raw scores, a max shared by the rows of a tile, a max that starts at 0 (a row
    near -120 then weighs every key exp(-120) = 0: 0/0), a stale max."""
    if scores == "random-near-100":
        batch = make_batch(torch, [(20, 14), (0, 9)], dtype="float32", q_scale=35.0, seed=6)
    else:
        batch = make_batch(torch, [(20, 14), (0, 9)], dtype="float32", seed=6, scores="plus-minus")
    check_kernel(lab, torch, batch, f"paged_prefill with {scores} scores (a running max per row, starting at -inf, "
                 "subtracted before exp?)")


@triton_test
def test_kernel_long_float16_context(lab, torch):
    """A chunk of 8 tokens after a cached prefix of 2,040, in float16 (one KV head, two query
    heads, head_dim 16, one sequence: few programs, so the interpreter stays quick). The first
    token is an attention sink, as in trained models: it takes most of every row's weight and the
    2,047 others share the rest in small parts. The running state must be float32: a float16
    running sum has steps of 1/128 at 8 and drops each key tile's small contribution.

    Catches: the accumulator or the denominator kept in the inputs' type (float16) between key
    tiles, which every short test forgives."""
    batch = make_batch(torch, [(2040, 8)], num_heads=2, num_kv_heads=1, head_dim=16, seed=9, scores="sink")
    check_kernel(lab, torch, batch, "paged_prefill over a float16 context of 2,048 tokens with an attention sink "
                 "(is a running sum, acc or denom, kept in float16 between key tiles? it must be float32)")


@triton_test
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_kernel_max_query_len_takes_a_numpy_integer(lab, torch, dtype):
    """``max_query_len`` given as a numpy integer (the ``max()`` of an int32 or int64 lengths array, as
    an engine's metadata holds it; the docstring's int): the answer of the Python int, 26 tokens (104
    on a GPU) for the longest chunk.

    Catches: a check that takes only a Python int (a numpy one refused as "not an int"), while the
    numpy functions' ``start`` and ``block_size`` take them."""
    longest = 26 * TILE_SCALE
    batch = make_batch(torch, [(4, 3), (0, longest), (11, 9)], seed=7)
    given = np.dtype(dtype).type(longest)
    check_kernel(lab, torch, batch, f"paged_prefill(max_query_len=np.{dtype}({longest}))", max_query_len=given)


@triton_test
def test_kernel_max_query_len_given_or_found(lab, torch):
    """``max_query_len`` may be given (as vLLM's metadata carries it) or left to the function:
    the same answer either way, given exactly the longest chunk (26 tokens, 104 on a GPU: more query
    tiles than the first chunk's 3 tokens need) or more than needed.

    Catches: a grid sized from the first chunk's length instead of the longest."""
    longest = 26 * TILE_SCALE
    batch = make_batch(torch, [(4, 3), (0, longest), (11, 9)], seed=7)
    check_kernel(lab, torch, batch, "paged_prefill(max_query_len=None)")
    check_kernel(lab, torch, batch, f"paged_prefill(max_query_len={longest + 14})", max_query_len=longest + 14)
    check_kernel(lab, torch, batch, f"paged_prefill(max_query_len={longest}), exactly the longest chunk",
                 max_query_len=longest)


# The contract (labkit.contract): the views engines pass, lengths at every edge, score patterns.
KERNEL_LAYOUTS = {
    **{name: {"cache": name} for name in contract.CACHE_LAYOUTS if name != "contiguous"},
    **{name: {"q": name} for name in contract.Q_LAYOUTS if name != "contiguous"},
    **{name: {"table": name} for name in contract.TABLE_LAYOUTS if name != "contiguous"},
    "out_view": {"out": True},
    "all_at_once": {"cache": "kv_pool_views", "q": "q_slice_of_qkv", "table": "table_every_other_row", "out": True},
}


@triton_test
@pytest.mark.parametrize("layout", KERNEL_LAYOUTS)
def test_kernel_memory_layouts_engines_pass(lab, torch, layout):
    """The API takes any strides with the last dimension contiguous, and engines pass views: K and V
    as the halves ``kv[:, 0]``, ``kv[:, 1]`` of one fused pool or a pool stored heads-outside-slots,
    ``q`` as a slice of the fused ``qkv`` projection (``out`` too may be a view into a wider
    buffer), a table cut from a wider one or every other row of a taller one. The memory beside
    each view is poison, and ``out``'s padding rows must keep their sentinel.

    Catches offsets computed as if a tensor were contiguous: the caches' strides from their shape
    (``kernel_cache_strides_from_shape``), q's row stride as ``num_heads * head_dim``
    (``kernel_q_stride_from_shape``), the table's row stride as ``max_blocks``
    (``kernel_table_stride_from_shape``), out's rows at q's strides (``kernel_out_at_q_strides``)."""
    picks = KERNEL_LAYOUTS[layout]
    batch = make_batch(torch, [(9, 12), (0, 5), (20, 3)], seed=12, kind="nan")
    k_cache, v_cache = contract.CACHE_LAYOUTS[picks.get("cache", "contiguous")].apply(batch.k_cache, batch.v_cache)
    q = contract.Q_LAYOUTS[picks.get("q", "contiguous")].apply(batch.q, batch.k_cache.shape[2])
    table = contract.TABLE_LAYOUTS[picks.get("table", "contiguous")].apply(batch.block_tables, 0)  # block 0: poison
    batch = Batch(q, k_cache, v_cache, table, batch.query_start_loc, batch.seq_lens, batch.expected)
    described = [contract.CACHE_LAYOUTS[picks["cache"]].describe] if "cache" in picks else []
    described += [contract.Q_LAYOUTS[picks["q"]].describe] if "q" in picks else []
    described += [contract.TABLE_LAYOUTS[picks["table"]].describe] if "table" in picks else []
    described += ["out as a view of a wider buffer (its rows further apart than q's)"] if "out" in picks else []
    check_kernel(lab, torch, batch, f"paged_prefill with {', '.join(described)}", out_view=picks.get("out", False))


@triton_test
def test_kernel_lengths_at_every_boundary(lab, torch):
    """One batch whose lengths sit at every edge (``labkit.contract.boundary_lengths``): prompts of
    1, 7, 8, 9 tokens (a query tile holds 8 tokens of a group of 2 on the interpreter; on a GPU 64,
    and the prompts are 1, 63, 64, 65) and of 15, 16, 17 (a block, and the interpreter's key tile of
    16; on a GPU 63, 64, 65 too); chunks of 3 tokens closing sequences of 15, 16, 17 and 35 tokens,
    and of 48, the table's full capacity (the longest sequence fills its row: no padding column; on a
    GPU 63, 65, 131 and 192 too). Catches boundaries off by one: a tail mask at the block's end, a
    query tile that drops its last token, a key range that stops a tile short, the table's last
    column never read."""
    query_tile, key_tile = 8 * TILE_SCALE, 16 * TILE_SCALE  # tokens of a query tile (a group of 2); keys of a key tile
    named = contract.boundary_lengths(16, segment=key_tile, capacity=48 * TILE_SCALE)
    prompts = sorted({1, query_tile - 1, query_tile, query_tile + 1, 15, 16, 17, key_tile - 1, key_tile, key_tile + 1})
    specs = [(0, n) for n in prompts] + [(n - 3, 3) for n in named.values() if n >= 3]
    batch = make_batch(torch, specs, num_heads=2, num_kv_heads=1, seed=13, kind="nan", pad_columns=0)
    listing = ", ".join(f"[{s}] {c} + {n}" for s, (c, n) in enumerate(specs))
    check_kernel(lab, torch, batch, f"paged_prefill, sequences (context + chunk) {listing}")


@triton_test
@pytest.mark.parametrize("pattern", contract.SCORE_PATTERNS)
def test_kernel_score_patterns_across_key_tiles(lab, torch, pattern):
    """Scores placed against the key tiles the kernel walks (``labkit.contract.SCORE_PATTERNS``, the
    segment being 16 keys, 64 on a GPU, and the lengths scaled with it): flat near +1000 or -1000,
    one key 100 above the rest in the first or in the last tile, the mass clustered in a middle
    tile, the first tile near -1000 and the rest near 0, neighbours of the batch at +1000 and -1000.
    Every row's running max must hold the largest score it has seen. Catches a running max replaced
    by each tile's own max (``kernel_running_max_is_tile_max``: after a peak in the first tile,
    exp(+100) overflows), a max that starts at 0, one max for the whole tile."""
    t = TILE_SCALE
    batch = make_batch(torch, [(40 * t, 9 * t), (0, 20 * t), (17 * t, 4 * t)], num_heads=2, num_kv_heads=1, seed=14,
                       scores=pattern)
    check_kernel(lab, torch, batch, f"paged_prefill, scores {pattern} ({contract.SCORE_PATTERNS[pattern]})")


KERNEL_BAD_INPUTS = {
    "q is 2-D": lambda a: {**a, "q": a["q"][0]},
    "heads not a multiple of kv heads": lambda a: {**a, "q": a["q"][:, :3].contiguous()},
    "block_tables int64": lambda a: {**a, "block_tables": a["block_tables"].long()},
    "query_start_loc of another batch": lambda a: {**a, "query_start_loc": a["query_start_loc"][:-1]},
    "seq_lens int64": lambda a: {**a, "seq_lens": a["seq_lens"].long()},
    "v_cache of another dtype": lambda a: {**a, "v_cache": a["v_cache"].double()},
    "head_dim 24": lambda a: {**a, "q": a["q"][..., :24].contiguous(), "k_cache": a["k_cache"][..., :24].contiguous(),
                               "v_cache": a["v_cache"][..., :24].contiguous()},
    "out of another shape": lambda a: {**a, "out": a["q"][:-1].clone()},
    "max_query_len negative": lambda a: {**a, "max_query_len": -1},
    "no kv heads": lambda a: {**a, "k_cache": a["k_cache"][:, :, :0], "v_cache": a["v_cache"][:, :, :0]},
    "q on another device": lambda a: {**a, "q": a["q"].to("meta")},
}
VALUE_BAD_INPUTS = {  # checked only on the CPU: on a GPU the check would cost a synchronization
    "chunk longer than seq_len": lambda a: {**a, "seq_lens": a["seq_lens"] - 5},  # [6, 3] for chunks of [6, 8]
    "seq_len past the table": lambda a: {**a, "seq_lens": a["seq_lens"] + 100},
    "query_start_loc decreasing": lambda a: {**a, "query_start_loc": a["query_start_loc"].flip(0).contiguous()},
}


@triton_test
@pytest.mark.parametrize("name", list(KERNEL_BAD_INPUTS) + ([] if ON_GPU else list(VALUE_BAD_INPUTS)))
def test_kernel_bad_input_gets_a_clear_error(lab, torch, name):
    """Wrong shapes, dtypes and lengths raise ValueError or TypeError naming paged_prefill,
    before any kernel runs (never a Triton traceback, an illegal address or a silent wrong
    answer). Values inside the index tensors are checked only when they live on the CPU.

    Catches: missing input checks; caches of no KV head divided by (a ZeroDivisionError); tensors
    on two devices let through (``q`` on the meta device, the others on the test's)."""
    batch = make_batch(torch, [(5, 6), (0, 8)], seed=8)
    args = dict(zip(["q", "k_cache", "v_cache", "block_tables", "query_start_loc", "seq_lens"], batch.args,
                    strict=True))
    args = {**KERNEL_BAD_INPUTS, **VALUE_BAD_INPUTS}[name](args)
    with pytest.raises((ValueError, TypeError), match="paged_prefill"):
        lab.paged_prefill(**args)


def _strided(torch, t, dim):
    """``t``'s values in a tensor whose dimension ``dim`` steps by 2 (every other element of a buffer
    twice as wide there, the rest poison)."""
    shape = list(t.shape)
    shape[dim] *= 2
    fill = -1 if not t.is_floating_point() else float("nan")
    wide = torch.full(shape, fill, dtype=t.dtype, device=t.device)
    view = wide[(slice(None),) * (dim % t.dim()) + (slice(None, None, 2),)]
    view.copy_(t)
    return view


def _with_room(torch, t, before=1, after=1):
    """``t`` as a view of a buffer with ``before`` spare rows in front and ``after`` behind (zeros): a
    row read or written just outside ``t`` lands in memory the test owns."""
    wide = torch.zeros((before + t.shape[0] + after, *t.shape[1:]), dtype=t.dtype, device=t.device)
    wide[before : before + t.shape[0]] = t
    return wide[before : before + t.shape[0]]


def _ids(torch, values, like):
    """``values`` as an int32 tensor on ``like``'s device."""
    return torch.tensor(values, dtype=torch.int32, device=like.device)


def _meta_like(torch, like):
    """An empty tensor like ``like`` on the meta device."""
    return torch.empty(like.shape, dtype=like.dtype, device="meta")


def _zeros_like(t):
    """Zeros shaped, typed and placed like ``t``, contiguous (``t`` may be a view)."""
    return t.new_zeros(t.shape)


def _block_past_the_cache(torch, a):
    """Sequence 0's block replaced by the id one past the cache's blocks; the caches are views of pools
    one block longer, so that a version that lets the id through reads memory the test owns."""
    tables = a["block_tables"].clone()
    tables[0, 0] = a["k_cache"].shape[0]
    k, v = (_with_room(torch, a[n], before=0, after=1) for n in ("k_cache", "v_cache"))
    return {"block_tables": tables, "k_cache": k, "v_cache": v}


# (how the arguments change, the words the error must hold). The batch: chunks of 6 and 8 tokens after
# prefixes of 5 and 0 (seq_lens [11, 8]), 14 rows of q and 16 padding rows, tables [2, 2] of blocks of 16.
KERNEL_REFUSED_FOR_A_REASON = {
    "out a numpy array": (lambda t, a: {**a, "out": a["q"].cpu().numpy()}, ["out must be a torch.Tensor"]),
    "out on another device": (lambda t, a: {**a, "out": _meta_like(t, a["q"])}, ["one device"]),
    "block_tables a numpy array": (lambda t, a: {**a, "block_tables": a["block_tables"].cpu().numpy()},
                                   ["block_tables must be a torch.Tensor"]),
    "caches 3-D": (lambda t, a: {**a, "k_cache": a["k_cache"][:, 0], "v_cache": a["v_cache"][:, 0]},
                   ["k_cache and v_cache must both be"]),
    "v_cache of another shape": (lambda t, a: {**a, "v_cache": a["v_cache"][..., :16].contiguous()},
                                 ["k_cache and v_cache must both be"]),
    "q's head_dim not the caches'": (lambda t, a: {**a, "q": a["q"][..., :16].contiguous()},
                                     ["q has head_dim 16, the caches 32"]),
    "head_dim 512": (lambda t, a: {**a, **{n: a[n].repeat(1, 1, 16) if n == "q" else a[n].repeat(1, 1, 1, 16)
                                          for n in ("q", "k_cache", "v_cache")}}, ["head_dim must be"]),
    "blocks of 0 tokens": (lambda t, a: {**a, "k_cache": a["k_cache"][:, :0], "v_cache": a["v_cache"][:, :0]},
                           ["block_size (k_cache.shape[1]) must be >= 1"]),
    "max_query_len a float": (lambda t, a: {**a, "max_query_len": 40.0}, ["max_query_len must be None or an int"]),
    "max_query_len a bool": (lambda t, a: {**a, "max_query_len": True}, ["max_query_len must be None or an int"]),
    "max_query_len -1": (lambda t, a: {**a, "max_query_len": -1}, ["max_query_len must be None or an int >= 0"]),
    "max_query_len below the longest chunk": (lambda t, a: {**a, "max_query_len": 7},
                                              ["max_query_len=7 but a chunk has 8"]),
    "q's last dimension strided": (lambda t, a: {**a, "q": _strided(t, a["q"], -1)}, ["q must have its last"]),
    "out's last dimension strided": (lambda t, a: {**a, "out": _strided(t, _zeros_like(a["q"]), -1)},
                                     ["out must have its last"]),
    "caches' last dimension strided": (lambda t, a: {**a, "k_cache": _strided(t, a["k_cache"], -1),
                                                     "v_cache": _strided(t, a["v_cache"], -1)},
                                       ["k_cache must have its last"]),
    "v_cache heads-outside-slots, k_cache not": (
        lambda t, a: {**a, "v_cache": contract.heads_outside_slots(a["k_cache"], a["v_cache"])[1]},
        ["same strides"]),
    "block_tables rows strided": (lambda t, a: {**a, "block_tables": _strided(t, a["block_tables"], -1)},
                                  ["must be contiguous"]),
    "query_start_loc strided": (lambda t, a: {**a, "query_start_loc": _strided(t, a["query_start_loc"], 0)},
                                ["must be contiguous"]),
    "seq_lens strided": (lambda t, a: {**a, "seq_lens": _strided(t, a["seq_lens"], 0)}, ["must be contiguous"]),
    # The values, checked on the CPU only. q and out get a spare row on each side: a version that lets
    # the bad value through then reads and writes that row, not memory outside the test's tensors.
    "query_start_loc from -1": (lambda t, a: {**a, "query_start_loc": _ids(t, [-1, 6, 14], a["seq_lens"])},
                                ["query_start_loc must be non-decreasing"]),
    "query_start_loc one step back": (lambda t, a: {**a, "query_start_loc": _ids(t, [0, 7, 6], a["seq_lens"])},
                                      ["query_start_loc must be non-decreasing"]),
    "query_start_loc past q only at its end": (
        lambda t, a: {**a, "q": a["q"][:14], "out": _with_room(t, _zeros_like(a["q"][:14])),
                      "query_start_loc": _ids(t, [0, 6, 15], a["seq_lens"]),
                      "seq_lens": _ids(t, [11, 9], a["seq_lens"])},
        ["query_start_loc must be non-decreasing"]),
    "the second chunk longer than its seq_len": (lambda t, a: {**a, "seq_lens": a["seq_lens"] - 5},  # [6, 3]
                                                 ["sequence 1 has a chunk of 8 tokens but seq_lens[1] = 3"]),
    "both chunks longer than their seq_len": (lambda t, a: {**a, "seq_lens": _ids(t, [5, 3], a["seq_lens"])},
                                              ["sequence 0 has a chunk of 6 tokens but seq_lens[0] = 5"]),
    "the first seq_len past the table": (lambda t, a: {**a, "seq_lens": _ids(t, [40, 8], a["seq_lens"])},
                                         ["seq_lens must be <= max_blocks * block_size = 32, got 40"]),
    "a block id one past the cache": (lambda t, a: {**a, **_block_past_the_cache(t, a)}, ["block ids outside"]),
}
CPU_ONLY = {"query_start_loc from -1", "query_start_loc one step back", "query_start_loc past q only at its end",
            "the second chunk longer than its seq_len", "both chunks longer than their seq_len",
            "the first seq_len past the table", "a block id one past the cache",
            "max_query_len below the longest chunk"}


@triton_test
@pytest.mark.parametrize("name", [n for n in KERNEL_REFUSED_FOR_A_REASON if not (ON_GPU and n in CPU_ONLY)])
def test_kernel_refuses_each_bad_input_for_its_reason(lab, torch, name):
    """Each condition of paged_prefill's checks alone, and the error says which: a tensor of another
    type, device or shape, a head_dim or block size the kernel cannot take, strides it cannot follow
    (a last dimension that is not contiguous, K and V laid out differently, index tensors that are
    views with gaps), a max_query_len that is not an int or, on the CPU, shorter than a chunk; and on
    the CPU the index values: query_start_loc below 0, stepping back by one, past q only at its end,
    the first sequence whose chunk is longer than its seq_len named, one seq_len past its table, a
    block id just outside the cache.

    Catches: a check that tests only one of its conditions (``or`` read as ``and``), one that misses
    a value by one, one that looks at the wrong element (the first start and not the last, the
    shortest length and not the longest), ``out`` left out of the tensor checks, a check dropped
    (the kernel then reads with the wrong strides, or past a tensor, without a word)."""
    batch = make_batch(torch, [(5, 6), (0, 8)], seed=8)
    args = dict(zip(["q", "k_cache", "v_cache", "block_tables", "query_start_loc", "seq_lens"], batch.args,
                    strict=True))
    args["q"], args["out"] = _with_room(torch, args["q"]), _with_room(torch, _zeros_like(args["q"]))
    change, words = KERNEL_REFUSED_FOR_A_REASON[name]
    bad = change(torch, args)
    labkit.assert_refused(lambda: lab.paged_prefill(**bad), "paged_prefill", *words, errors=(ValueError, TypeError),
                          what=f"paged_prefill with {name}")


@triton_test
@pytest.mark.skipif(ON_GPU, reason="the interpreter's own checks: CPU only")
# The environment a test sets stays in its own process: under labs grade the submission runs in another,
# so the second case checks the given check there only (ungraded).
@pytest.mark.parametrize("case", ["bfloat16", pytest.param("not interpreted", marks=pytest.mark.ungraded)])
def test_kernel_refuses_what_the_interpreter_cannot_run(lab, torch, monkeypatch, case):
    """On the CPU the kernel runs only through Triton's interpreter, and the interpreter computes
    bfloat16 wrongly: bfloat16 tensors, and CPU tensors in a process where TRITON_INTERPRET is not 1,
    are refused with a ValueError saying so.

    Catches: either check dropped (a wrong bfloat16 answer without a word; a launch that needs a
    GPU), the device test turned around."""
    batch = make_batch(torch, [(5, 6), (0, 8)], seed=8)
    args = batch.args
    if case == "bfloat16":
        args = (args[0].bfloat16(), args[1].bfloat16(), args[2].bfloat16(), *args[3:])
        word = "bfloat16"
    else:
        monkeypatch.setenv("TRITON_INTERPRET", "0")
        word = "interpreter"
    labkit.assert_refused(lambda: lab.paged_prefill(*args), "paged_prefill", word, what=f"paged_prefill, {case}")


@triton_test
@pytest.mark.parametrize("case", ["no sequences", "every chunk empty", "every chunk empty, max_query_len 0",
                                  "no query heads"])
def test_kernel_batches_with_nothing_to_compute(lab, torch, case):
    """A batch with no sequence, one whose chunks are all empty (max_query_len found or given as 0,
    the smallest value allowed), q with no query head: nothing to compute, and paged_prefill returns
    the ``out`` it was given with every row as it was (their sentinel), without an error.

    Catches: ``out`` not returned on the early exit, an empty batch's lengths reduced (the max of an
    empty tensor raises), max_query_len 0 refused, a group of 0 heads divided by."""
    kwargs = {"max_query_len": 0} if case.endswith("max_query_len 0") else {}
    if case == "no sequences":
        batch = make_batch(torch, [], seed=15)
        # An empty table made by torch (numpy's empty [0, 1] array has strides of 0, which the check refuses).
        table = torch.zeros((0, 1), dtype=torch.int32, device=DEVICE)
        batch = Batch(*batch.args[:3], table, *batch.args[4:], batch.expected)
    elif case == "no query heads":
        batch = make_batch(torch, [(5, 6), (0, 8)], num_heads=2, num_kv_heads=2, seed=15)
        batch = Batch(batch.q[:, :0], batch.k_cache[:, :, :1], batch.v_cache[:, :, :1], *batch.args[3:],
                      batch.expected[:, :0])
    else:
        batch = make_batch(torch, [(5, 0), (0, 0), (9, 0)], seed=15)
    check_kernel(lab, torch, batch, f"paged_prefill, {case}", **kwargs)


@triton_test
@pytest.mark.parametrize("case", ["a ragged batch", "nothing to compute"])
def test_kernel_new_out_is_zero_where_nothing_is_written(lab, torch, case):
    """Without ``out``, paged_prefill returns a new tensor shaped and typed like ``q``: the chunks' rows
    hold their attention and every other row (q's padding rows; all of them when every chunk is empty)
    is zero, as the docstring promises ("a new zero tensor"). The call runs with uninitialized memory
    filled with NaN (``labkit.uninitialized_memory_is_nan``), so an output allocated without zeroing shows in
    the rows the kernel never writes every time, not only when the allocator hands back dirty memory.
    (Under ``labs grade`` as well: the grader carries the setting to the student's process for each
    call.)

    Catches: the new output allocated with ``torch.empty_like`` (``new_out_not_zeroed``), its padding
    rows then whatever the memory held."""
    specs = [(5, 6), (0, 8), (9, 1)] if case == "a ragged batch" else [(5, 0), (9, 0)]
    batch = make_batch(torch, specs, seed=16)
    what = f"paged_prefill without out, {case} (chunks of {[n for _, n in specs]} tokens, 16 padding rows of q)"
    with labkit.uninitialized_memory_is_nan():
        got = lab.paged_prefill(*batch.args)
    labkit.require(isinstance(got, torch.Tensor) and got is not batch.q and got.shape == batch.q.shape,
                   f"{what}: expected a new tensor shaped like q {tuple(batch.q.shape)}, got "
                   f"{'q itself' if got is batch.q else type(got).__name__} {tuple(getattr(got, 'shape', ()))}")
    num_tokens = len(batch.expected)
    dtype = str(batch.q.dtype).removeprefix("torch.")
    labkit.assert_close(got[:num_tokens], batch.expected, atol=KERNEL_ATOL[dtype], axes=("token", "head", "dim"),
                        what=what, dtype=batch.q.dtype)
    labkit.assert_close(got[num_tokens:], np.zeros(got[num_tokens:].shape), atol=0,
                        axes=("padding row", "head", "dim"),
                        what=f"{what}: rows past query_start_loc[-1] of the new out (never written: they must be "
                             f"the zeros it was created with, torch.zeros_like, not torch.empty_like)")


@triton_test
def test_kernel_table_padding_is_never_checked(lab, torch):
    """Table entries past a sequence's blocks are padding, whatever they hold (-1 here, as some
    engines pad): the kernel never reads them and the CPU's value check must not refuse them.
    Sequences of 21 and 9 tokens in blocks of 16 end inside a block, so the entry right after their
    last block is padding too. Catches the blocks in use counted with a true division (21 / 16 >
    1 lets entry 2 count as used) or the whole table checked."""
    batch = make_batch(torch, [(13, 8), (0, 9), (30, 4)], block_size=16, seed=21)
    tables = batch.block_tables.clone()
    lens = batch.seq_lens.tolist()
    for s, seq_len in enumerate(lens):
        tables[s, -(-seq_len // 16):] = -1  # every entry past the sequence's last block
    batch = Batch(batch.q, batch.k_cache, batch.v_cache, tables, batch.query_start_loc, batch.seq_lens,
                  batch.expected)
    check_kernel(lab, torch, batch, "paged_prefill, the tables' padding entries -1 (sequences of 21, 9 and 34 "
                                    "tokens in blocks of 16)")


@triton_test
# q and out are views whose rows overlap: under labs grade such a view crosses to the submission as a copy
# (its elements overlap in memory), so the kernel's writes would not reach this out. Run by pytest only.
@pytest.mark.ungraded
def test_kernel_rows_of_q_past_2_24(lab, torch):
    """A one-token chunk at row 2**24 + 1 of q (the rows before it are padding), a prompt of 3 tokens:
    float32 holds no odd integer past 2**24, so a row index that goes through float32 lands on the
    row next to it. q and out are views whose rows overlap, one element apart (any strides with the
    last dimension contiguous), so that 2**24 rows cost 32 MB; only one row is written.

    Catches: the tile's token index computed with ``/`` (``r / GROUP``, a float) instead of ``//``,
    which puts the chunk's row offset through float32: the row next to it is read and written."""
    head_dim, row, block_size = 16, 2**24 + 1, 4
    rng = np.random.default_rng(24)
    num_tokens = row + 1
    q_base = torch.zeros(num_tokens + 2 * head_dim, dtype=torch.float16)  # random around the chunk's row, the rest 0
    q_base[row - 2 * head_dim : row + 2 * head_dim] = torch.from_numpy(rng.standard_normal(4 * head_dim))
    q = q_base.as_strided((num_tokens, 1, head_dim), (1, head_dim, 1))
    k_np, v_np = rng.standard_normal((2, block_size, 1, head_dim)), rng.standard_normal((2, block_size, 1, head_dim))
    k_cache, v_cache = torch.from_numpy(k_np).to(torch.float16), torch.from_numpy(v_np).to(torch.float16)
    table = torch.tensor([[1, 0]], dtype=torch.int32)
    starts, lens = torch.tensor([row, row + 1], dtype=torch.int32), torch.tensor([3], dtype=torch.int32)
    labkit.poison_unused_slots(k_cache, table.numpy(), [3], kind="nan")
    labkit.poison_unused_slots(v_cache, table.numpy(), [3], kind="nan")
    expected = causal_prefill_f64(q[row : row + 1], labkit.gather_f64(k_cache, table[0], 3),
                                  labkit.gather_f64(v_cache, table[0], 3), 2)
    out_base = torch.full((num_tokens + head_dim,), SENTINEL, dtype=torch.float16)
    out = out_base.as_strided(q.shape, q.stride())
    args = [t.to(DEVICE) for t in (q, k_cache, v_cache, table, starts, lens)]
    if ON_GPU:  # the views, rebuilt over the device's copies of their buffers
        args[0] = q_base.to(DEVICE).as_strided(q.shape, q.stride())
        out_base = out_base.to(DEVICE)
        out = out_base.as_strided(q.shape, q.stride())
    lab.paged_prefill(*args, out=out)
    labkit.assert_close(out[row : row + 1], expected, atol=KERNEL_ATOL["float16"], axes=("token", "head", "dim"),
                        what=f"paged_prefill, the chunk at row {row} of q (read or written at row {row - 1}?)",
                        dtype=torch.float16)
    written = torch.nonzero(out_base != SENTINEL).flatten().cpu().numpy()
    if written.size and (written.min() < row or written.max() >= row + head_dim):
        raise AssertionError(f"paged_prefill wrote out's buffer at elements {written.min()} .. {written.max()}, "
                             f"outside row {row} (elements {row} .. {row + head_dim - 1}): the row index went "
                             "through float32?")


# The check of a cache of more than 2**31 elements runs in a child process (_big_cache_child.py,
# through labkit.testing.child), on the GPU when there is one and through the interpreter otherwise:
# 4 GiB must not live in the test's process, nor cross the pipe of `labs grade` (there the child
# runs in the student's sandbox). The child sends back the output only; the expectation is computed
# here, from the same blocks rebuilt by the child script's own inputs(), so nothing the
# implementation under test does can change it.
BIG_CACHE_CHILD = Path(__file__).with_name("_big_cache_child.py")


def _child_batch_f64(specs, q, block_tables, query_start_loc, seq_lens, k_blocks, v_blocks) -> np.ndarray:
    """The float64 truth of the big-cache child's batch, from the blocks it placed (``specs``: its
    ``(context_len, query_len)`` per sequence)."""
    expected = []
    for s, (context, _) in enumerate(specs):
        rows = slice(int(query_start_loc[s]), int(query_start_loc[s + 1]))
        k = labkit.gather_f64(k_blocks, block_tables[s], int(seq_lens[s]))
        v = labkit.gather_f64(v_blocks, block_tables[s], int(seq_lens[s]))
        expected.append(causal_prefill_f64(q[rows], k, v, context))
    return np.concatenate(expected)


@triton_test
def test_kernel_heads_further_apart_than_2_31_elements(lab, torch):
    """q, out and both caches as views into one reservation of more than 2**31 float16 elements,
    each stored heads outermost with its heads 2**30 elements apart (any strides with the last
    dimension contiguous are taken): head 2 of q and out, and KV head 2 of the caches, start 2**31
    elements in. A ragged batch of 3 query heads on 3 KV heads, a chunk after a prefix and a prompt
    from scratch, unused slots poisoned. Runs in the same child process as the big cache's check
    (its ``heads`` mode): only the elements of the views are written, and an offset that wraps
    around reads outside the reservation.

    Catches: a head index multiplied by its stride in int32 (``head * stride_q_head``,
    ``head * stride_out_head``, ``kv_head * stride_kv_head``): the product wraps around to a negative
    offset, and the kernel reads or writes another head's data, or crashes the child process."""
    out = child.run(BIG_CACHE_CHILD, "heads", timeout=300, failed=(
        "paged_prefill failed on tensors whose heads lie 2**30 elements apart (head 2 at 2**31): is a head index "
        "multiplied by its stride in int32? (widen it to int64 first, as the block ids)"))
    big = child.script_module(BIG_CACHE_CHILD)
    expected = _child_batch_f64(big.HEAD_SPECS, *big.head_inputs(torch))
    labkit.assert_close(out, expected, atol=KERNEL_ATOL["float16"], axes=("token", "head", "dim"),
                        dtype=np.float16, what="paged_prefill with q, out and the caches' heads 2**30 elements apart "
                        "(a head's offset computed in int32 wraps around past 2**31)")


@triton_test
def test_kernel_cache_beyond_2_31_elements(lab, torch):
    """A key and a value cache of more than 2**31 float16 elements each, a ragged batch (a chunk
    after a prefix, a prompt from scratch; GQA) in their top blocks, the tails of the last blocks
    and the padding entries' block poisoned: element offsets no longer fit in int32. Catches block
    ids multiplied by the block stride in int32 (the offset wraps around and the kernel reads
    another block, or the child process crashes on an address outside the cache)."""
    out = child.run(BIG_CACHE_CHILD, timeout=300, failed=(
        "paged_prefill failed on a cache of more than 2**31 elements with the sequences in its top blocks: are "
        "element offsets computed in int32? (block ids must be widened to int64 before they multiply the block "
        "stride)"))
    big = child.script_module(BIG_CACHE_CHILD)
    expected = _child_batch_f64(big.SPECS, *big.inputs(torch))
    labkit.assert_close(out, expected, atol=KERNEL_ATOL["float16"], axes=("token", "head", "dim"), dtype=np.float16,
                        what="paged_prefill on a cache of more than 2**31 elements (block ids multiplied by the "
                             "block stride in int32 wrap around to another block)")
