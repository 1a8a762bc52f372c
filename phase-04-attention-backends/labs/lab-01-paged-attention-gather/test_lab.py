"""Tests of lab 04-01: dense attention and streaming paged attention (numpy, float64).

Every expected value comes from ``labkit.reference`` (float64 brute force over a
contiguous copy of the tokens), never from another function of the implementation
under test. Unused cache slots hold 1e6 ("poison"): random numbers or zeros in the
padding are quiet, an off-by-one reading them would shift the answer only a little;
poison makes it shift by orders of magnitude.

Tolerances: ``dense_attention`` does the reference's arithmetic in the reference's
order, so 1e-12. The streaming version adds the same terms in another order (block
by block, rescaled whenever the max rises), so its float64 rounding differs from the
reference's by ~1e-15 per step; 1e-10 leaves room for that and for long sequences
while any algorithmic error (a missing correction, an extra row) is >= 1e-3.
"""

from __future__ import annotations

import numpy as np
import pytest

import labkit
from labkit.testing.cases import random_block_table

POISON = 1.0e6
STREAM_ATOL = 1e-10  # streaming vs the reference: same math, another summation order


# --- helpers: the test's own placement of contiguous tokens into a paged cache ---


def _paged_copy(rng, k, v, block_size, block_table, num_blocks):
    """Caches ``[num_blocks, block_size, d]`` holding token ``t`` of ``k``/``v`` at
    ``[block_table[t // block_size], t % block_size]``; every other slot poisoned."""
    seq_len, d = k.shape
    k_cache = rng.standard_normal((num_blocks, block_size, d))
    v_cache = rng.standard_normal((num_blocks, block_size, d))
    for t in range(seq_len):
        k_cache[block_table[t // block_size], t % block_size] = k[t]
        v_cache[block_table[t // block_size], t % block_size] = v[t]
    labkit.poison_unused_slots(k_cache, block_table, seq_len, POISON)
    labkit.poison_unused_slots(v_cache, block_table, seq_len, POISON)
    return k_cache, v_cache



def _random_tokens(seed, seq_len, d=16):
    rng = np.random.default_rng(seed)
    return rng, rng.standard_normal(d), rng.standard_normal((seq_len, d)), rng.standard_normal((seq_len, d))


def _check(out, q, k, v, what, atol=STREAM_ATOL):
    labkit.assert_close(out, labkit.attention_f64(q, k, v), atol=atol, axes=("dim",), what=what)


def _block_maxima(q, k, block_size):
    scores = k @ q / np.sqrt(q.shape[0])
    return [scores[i : i + block_size].max() for i in range(0, len(scores), block_size)]


# --- step 1: the dense oracle ---


@pytest.mark.parametrize("n", [0, 1, 7, 33])
def test_dense_attention_matches_reference(lab, n):
    """dense_attention(q, k, v) = softmax(k @ q / sqrt(d)) @ v, to 1e-12 (same arithmetic as the
    reference); n = 0 gives zeros.

    Catches: no 1/sqrt(d) scale, weights not normalized, 0/0 on an empty row."""
    _, q, k, v = _random_tokens(n, n)
    out = lab.dense_attention(q, k, v)
    _check(out, q, k, v, what=f"dense_attention over n={n} keys", atol=1e-12)


@pytest.mark.parametrize("logit", [1000.0, -1000.0])
def test_dense_attention_survives_large_logits(lab, logit):
    """Scores near +-1000: exp overflows past ~709 and underflows below ~-745 in float64, so
    even the oracle must subtract the max first.

    Catches: exp(scores) / sum(exp(scores)) (inf/inf or 0/0 = NaN)."""
    rng, q, k, v = _random_tokens(11, 20)
    k[:, 0] = 1.0 + 0.005 * rng.standard_normal(20)  # every score ~logit, spread by a few units
    q[0] = logit * np.sqrt(q.shape[0])
    out = lab.dense_attention(q, k, v)
    _check(out, q, k, v, what=f"dense_attention with scores near {logit:g}")


# --- steps 2-4: the streaming pass ---


def test_matches_dense_block_aligned(lab):
    """16 tokens in 4 full blocks of 4, scattered over the pool as [3, 1, 7, 0]: the recurrence
    (m, denom, acc, corr) must give dense attention's answer. The data are chosen so that
    the running max rises after the first block, which is when a wrong correction shows.

    Catches: a missing correction factor, denom not rescaled, blocks normalized separately,
    blocks read in physical order, no 1/sqrt(d) scale."""
    rng, q, k, v = _random_tokens(3, 16)
    table = np.array([3, 1, 7, 0])
    maxima = _block_maxima(q, k, 4)
    assert max(maxima[1:]) > maxima[0], "test data: the running max should rise after block 0"
    k_cache, v_cache = _paged_copy(rng, k, v, 4, table, num_blocks=8)
    out = lab.paged_online_attention(q, k_cache, v_cache, table, 16, 4)
    _check(out, q, k, v, what="paged_online_attention, 16 tokens over blocks [3, 1, 7, 0]")


@pytest.mark.parametrize("order", ["rising", "falling", "peak-in-the-middle"])
def test_running_max_rises_and_falls(lab, order):
    """The two behaviours of the recurrence: a block with a new maximum (corr < 1 shrinks
    the history) and a block below it (corr = 1, nothing rescales). Block maxima are
    forced to rise every block, fall every block, or peak in the middle, by +-3 per block.

    Catches: a missing or misplaced correction, a denominator or accumulator left on the
    old scale, weights computed with the max from before the block."""
    block_size, num_blocks_used, d = 4, 5, 8
    seq_len = block_size * num_blocks_used - 1  # and a partial last block
    rng, q, k, v = _random_tokens(5, seq_len, d)
    levels = {"rising": [0, 3, 6, 9, 12], "falling": [12, 9, 6, 3, 0], "peak-in-the-middle": [0, 6, 12, 6, 0]}[order]
    # Shift block b's scores by levels[b] along q: score(t) += levels[b].
    direction = q / np.dot(q, q) * np.sqrt(d)
    for t in range(seq_len):
        k[t] += levels[t // block_size] * direction
    table, num_blocks = random_block_table(rng, seq_len, block_size)
    k_cache, v_cache = _paged_copy(rng, k, v, block_size, table, num_blocks)
    out = lab.paged_online_attention(q, k_cache, v_cache, table, seq_len, block_size)
    _check(out, q, k, v, what=f"paged_online_attention, block maxima {order}")


@pytest.mark.parametrize("spare_entries", [0, 2])
def test_matches_dense_partial_last_block(lab, spare_entries):
    """13 tokens with blocks of 4: three full blocks and one holding a single token. The other
    3 slots of that block are poisoned; only min(block_size, seq_len - start) rows of the
    last block may be read. With ``spare_entries`` the table also lists two (poisoned)
    blocks past the sequence's end, as a table padded to a batch's longest sequence does.

    Catches: reading the whole last block, reading one row too many, looping over every
    entry of the block table instead of the blocks that cover seq_len."""
    rng, q, k, v = _random_tokens(13, 13)
    table = np.array([6, 2, 4, 0])
    k_cache, v_cache = _paged_copy(rng, k, v, 4, table, num_blocks=8)
    assert np.all(k_cache[0, 1:] == POISON)  # the poisoned tail really is there
    table = np.concatenate([table, np.array([5, 1][:spare_entries], dtype=table.dtype)])
    out = lab.paged_online_attention(q, k_cache, v_cache, table, 13, 4)
    _check(out, q, k, v, what=f"paged_online_attention, 13 tokens (last block holds 1), table {table.tolist()}")


def test_paging_invariance(lab):
    """The same 10 logical tokens stored at physical blocks [0, 1, 2] and at [7, 3, 5] give the
    same output, and both the dense one: the block table is the only link between logical
    and physical positions.

    Catches: ignoring the block table (reading physical block i for logical block i)."""
    rng, q, k, v = _random_tokens(21, 10)
    outputs = []
    for table in (np.array([0, 1, 2]), np.array([7, 3, 5])):
        k_cache, v_cache = _paged_copy(rng, k, v, 4, table, num_blocks=8)
        out = lab.paged_online_attention(q, k_cache, v_cache, table, 10, 4)
        _check(out, q, k, v, what=f"paged_online_attention with block_table {table.tolist()}")
        outputs.append(out)
    labkit.assert_close(outputs[1], outputs[0], atol=1e-12, axes=("dim",), what="output under two layouts")


@pytest.mark.parametrize("block_size", [1, 2, 3, 5, 8, 16, 32, 64])
def test_many_block_sizes(lab, block_size):
    """29 tokens under shuffled tables for block sizes from 1 (every token its own block) to 64
    (one partial block holding everything); unused slots poisoned.

    Catches: bounds that only work for one block size, a last block read in full."""
    rng, q, k, v = _random_tokens(100 + block_size, 29)
    table, num_blocks = random_block_table(rng, 29, block_size)
    k_cache, v_cache = _paged_copy(rng, k, v, block_size, table, num_blocks)
    out = lab.paged_online_attention(q, k_cache, v_cache, table, 29, block_size)
    _check(out, q, k, v, what=f"paged_online_attention, block_size={block_size}")


def test_seq_len_one(lab):
    """A single token: its weight is 1, so the output is its value row.

    Catches: a first block mishandled when it is also the last, a poisoned row read."""
    rng, q, k, v = _random_tokens(1, 1)
    table = np.array([2])
    k_cache, v_cache = _paged_copy(rng, k, v, 4, table, num_blocks=4)
    out = lab.paged_online_attention(q, k_cache, v_cache, table, 1, 4)
    _check(out, q, k, v, what="paged_online_attention, seq_len=1")


def test_inputs_are_left_unchanged(lab):
    """Both functions only read: the query, keys, values, caches and block table are unchanged
    afterwards (an engine reuses them for the next head, layer and step).

    Catches: scaling the query in place (``q *= scale`` on the caller's float64 array),
    overwriting unused cache slots to "mask" them."""
    rng, q, k, v = _random_tokens(8, 11)
    table, num_blocks = random_block_table(rng, 11, 4)
    k_cache, v_cache = _paged_copy(rng, k, v, 4, table, num_blocks)
    inputs = {"q": q, "k": k, "v": v, "k_cache": k_cache, "v_cache": v_cache, "block_table": table}
    before = {name: x.copy() for name, x in inputs.items()}
    lab.dense_attention(q, k, v)
    lab.paged_online_attention(q, k_cache, v_cache, table, 11, 4)
    for name, x in inputs.items():
        labkit.assert_close(x, before[name], atol=0, what=f"{name} after the calls (it must not be modified)")


@pytest.mark.parametrize("table", [[], [2]], ids=["empty-table", "reserved-block"])
def test_empty_sequence_gives_zeros(lab, table):
    """seq_len=0 (nothing cached yet, with or without a block reserved) gives zeros, never
    NaN: the loop runs zero times and acc / denom would be 0/0.

    Catches: no seq_len == 0 case, an unguarded first-block corr = exp(-inf - (-inf))."""
    rng = np.random.default_rng(0)
    q = rng.standard_normal(8)
    k_cache = np.full((4, 4, 8), POISON)
    v_cache = np.full_like(k_cache, POISON)
    out = lab.paged_online_attention(q, k_cache, v_cache, np.array(table, dtype=np.int64), 0, 4)
    labkit.assert_close(out, np.zeros(8), atol=0, axes=("dim",), what="seq_len=0 output")


@pytest.mark.parametrize("case", ["late-spike", "first-spike", "all-near-minus-1000"])
def test_large_logits_need_a_running_max(lab, case):
    """Scores float64's exp cannot take: a single ~1000 logit in the last block ("late-spike":
    exp(1000 - m) overflows unless m is the running max, updated before the block is
    exponentiated), ~1000 in the first block ("first-spike": later blocks underflow to 0,
    which is right), or every score ~-1000 ("all-near-minus-1000": without a max, 0/0).

    Catches: a stale running max (kept from the first block, or the old max used for the
    new block's weights), no max at all."""
    block_size, seq_len, d = 4, 14, 8
    rng, q, k, v = _random_tokens(17, seq_len, d)
    unit = q / np.linalg.norm(q)
    scale = np.sqrt(d)
    if case == "late-spike":
        k[12] = unit * 1000.0 * scale / np.linalg.norm(q)  # score(12) = 1000, in the last block
    elif case == "first-spike":
        k[1] = unit * 1000.0 * scale / np.linalg.norm(q)  # score(1) = 1000, in the first block
    else:
        k -= unit * 1000.0 * scale / np.linalg.norm(q)  # every score shifted down by 1000
    table, num_blocks = random_block_table(rng, seq_len, block_size)
    k_cache, v_cache = _paged_copy(rng, k, v, block_size, table, num_blocks)
    out = lab.paged_online_attention(q, k_cache, v_cache, table, seq_len, block_size)
    _check(out, q, k, v, what=f"paged_online_attention, {case}")


def test_streams_block_by_block(lab, monkeypatch):
    """One streaming pass: np.exp is never handed more than block_size scores at once (one
    block's worth, or the scalar correction), so the whole score row never exists. The
    output must still be right.

    Catches: a two-pass version that gathers every score first and runs an ordinary
    softmax over the row (correct numbers, but not the algorithm this lab is about).
    Only np.exp is watched: a version that avoids it (math.exp in a Python loop) passes."""
    block_size, seq_len = 4, 30
    rng, q, k, v = _random_tokens(30, seq_len)
    table, num_blocks = random_block_table(rng, seq_len, block_size)
    k_cache, v_cache = _paged_copy(rng, k, v, block_size, table, num_blocks)
    expected = labkit.attention_f64(q, k, v)

    real_exp = np.exp

    def watched_exp(x, *args, **kwargs):
        if np.size(x) > block_size:
            raise AssertionError(
                f"np.exp was called on {np.size(x)} values at once with block_size={block_size}: "
                "a streaming pass exponentiates one block's scores at a time (README step 3)"
            )
        return real_exp(x, *args, **kwargs)

    monkeypatch.setattr(np, "exp", watched_exp)
    out = lab.paged_online_attention(q, k_cache, v_cache, table, seq_len, block_size)
    monkeypatch.undo()
    labkit.assert_close(out, expected, atol=STREAM_ATOL, axes=("dim",), what="paged_online_attention (streamed)")
