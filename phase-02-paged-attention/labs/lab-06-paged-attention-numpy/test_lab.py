"""Tests of lab 02-06: slot mapping, KV scatter, paged attention (numpy, float64).

Every expected value is computed here or by ``labkit.reference`` (float64 brute
force over a contiguous copy of the tokens), never by another function of the
implementation under test. Unused cache slots hold 1e6 ("poison"): reading one
by mistake moves the answer by orders of magnitude instead of by a little.

Tolerances: paged attention is the same float64 arithmetic as the dense
reference, so 1e-12; the one exception (logits of ~1000) says why it is looser.
"""

from __future__ import annotations

import numpy as np
import pytest

import labkit
from labkit.testing.cases import random_block_table

POISON = 1.0e6


# --- helpers: the test's own placement of contiguous tokens into a paged cache ---


def _slots_by_loop(block_table, block_size, start, num_tokens):
    """The slot formula, one token at a time: the truth for build_slot_mapping."""
    return np.array(
        [int(block_table[t // block_size]) * block_size + t % block_size for t in range(start, start + num_tokens)],
        dtype=np.int64,
    )



def _paged_copy(rng, k, v, block_size, block_table, num_blocks):
    """Caches ``[num_blocks, block_size, num_kv_heads, head_dim]`` holding token ``t`` of
    ``k``/``v`` at ``[block_table[t // block_size], t % block_size]``; every other slot poisoned."""
    seq_len = k.shape[0]
    k_cache = rng.standard_normal((num_blocks, block_size, *k.shape[1:]))
    v_cache = rng.standard_normal((num_blocks, block_size, *v.shape[1:]))
    for t in range(seq_len):
        k_cache[block_table[t // block_size], t % block_size] = k[t]
        v_cache[block_table[t // block_size], t % block_size] = v[t]
    labkit.poison_unused_slots(k_cache, block_table, seq_len, POISON)
    labkit.poison_unused_slots(v_cache, block_table, seq_len, POISON)
    return k_cache, v_cache


def _problem(seed, seq_len, block_size, num_heads=4, num_kv_heads=4, head_dim=16):
    """A query, contiguous K/V, and the same K/V paged through a shuffled table."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((num_heads, head_dim))
    k = rng.standard_normal((seq_len, num_kv_heads, head_dim))
    v = rng.standard_normal((seq_len, num_kv_heads, head_dim))
    table, num_blocks = random_block_table(rng, seq_len, block_size)
    k_cache, v_cache = _paged_copy(rng, k, v, block_size, table, num_blocks)
    return q, k, v, k_cache, v_cache, table


def _check_attention(out, q, k, v, atol=1e-12, what="paged_attention"):
    expected = labkit.attention_f64(q, k, v)
    labkit.assert_close(out, expected, atol=atol, axes=("head", "dim"), what=what)


# --- step 1: the write map ---


@pytest.mark.parametrize("block_size", [1, 3, 4, 16])
def test_slot_mapping_formula(lab, block_size):
    """slot(t) = block_table[t // block_size] * block_size + t % block_size over token ranges
    that start at 0, mid-block, on a block boundary, and a single decode token.

    Catches: no ``//`` (block_table[t]), ``//`` and ``%`` swapped, ignoring ``start``,
    a float or int32 result."""
    rng = np.random.default_rng(block_size)
    seq_len = 5 * block_size + 2
    table, _ = random_block_table(rng, seq_len, block_size, spare_blocks=6)
    ranges = [
        (0, seq_len),  # a whole prompt
        (block_size - 1, 2),  # straddles the first block boundary
        (2 * block_size, 1),  # the first token of a block
        (3 * block_size - 1, 1),  # the last token of a block
        (seq_len - 1, 1),  # a decode step: one token at start = the number already cached
        (block_size + 1, 2 * block_size + 1),  # a prefill chunk that starts mid-sequence
        (seq_len, 0),  # nothing to write
    ]
    for start, num_tokens in ranges:
        got = lab.build_slot_mapping(table, block_size, start, num_tokens)
        what = f"build_slot_mapping(table, block_size={block_size}, start={start}, num_tokens={num_tokens})"
        assert isinstance(got, np.ndarray) and got.dtype == np.int64, f"{what}: expected an int64 numpy array"
        labkit.assert_equal(
            got,
            _slots_by_loop(table, block_size, start, num_tokens),
            axes=("token",),
            what=what,
            where=lambda i, start=start: f"logical token {start + i[0]}",
        )


def test_slot_mapping_accepts_int64_tables(lab):
    """Any 1-D integer array is a block table (vLLM's are int32; numpy's default is int64)."""
    table = np.array([7, 0, 12, 3], dtype=np.int64)
    labkit.assert_equal(
        lab.build_slot_mapping(table, 8, 5, 20), _slots_by_loop(table, 8, 5, 20), what="slot_mapping"
    )


# --- step 2: the scatter ---


def test_write_kv_scatters_in_place(lab):
    """Row i of new_k/new_v lands at flat slot slot_mapping[i] of the caches the caller
    holds, and nothing else changes.

    Catches: writing into a copy (or a reshaped copy) of the caches, swapping the
    (block, offset) split, writing new_k into the value cache."""
    rng = np.random.default_rng(1)
    num_blocks, block_size, num_kv_heads, head_dim = 6, 4, 2, 8
    k_cache = rng.standard_normal((num_blocks, block_size, num_kv_heads, head_dim))
    v_cache = rng.standard_normal((num_blocks, block_size, num_kv_heads, head_dim))
    slots = np.array([17, 2, 23, 8, 9, 0, 14], dtype=np.int64)  # any distinct slots, in any order
    new_k = rng.standard_normal((len(slots), num_kv_heads, head_dim))
    new_v = rng.standard_normal((len(slots), num_kv_heads, head_dim))

    expected_k, expected_v = k_cache.copy(), v_cache.copy()
    for i, slot in enumerate(slots):
        expected_k[slot // block_size, slot % block_size] = new_k[i]
        expected_v[slot // block_size, slot % block_size] = new_v[i]

    lab.write_kv(k_cache, v_cache, new_k, new_v, slots)
    axes = ("block", "offset", "kv_head", "dim")
    labkit.assert_close(k_cache, expected_k, atol=0, axes=axes, what="k_cache after write_kv (must change in place)")
    labkit.assert_close(v_cache, expected_v, atol=0, axes=axes, what="v_cache after write_kv (must change in place)")


@pytest.mark.parametrize("block_size", [1, 4, 16])
def test_write_then_gather_round_trips(lab, block_size):
    """The write map (slot_mapping) and the read map (block_table) describe one layout:
    tokens written through build_slot_mapping + write_kv come back, in order, when the
    reference gathers them through the block table.

    Catches: any slot formula that disagrees with the gather, writes outside the table."""
    rng = np.random.default_rng(10 + block_size)
    seq_len, num_kv_heads, head_dim = 35, 2, 8
    table, num_blocks = random_block_table(rng, seq_len, block_size)
    k_cache = np.full((num_blocks, block_size, num_kv_heads, head_dim), POISON)
    v_cache = np.full_like(k_cache, POISON)
    new_k = rng.standard_normal((seq_len, num_kv_heads, head_dim))
    new_v = rng.standard_normal((seq_len, num_kv_heads, head_dim))

    slots = lab.build_slot_mapping(table, block_size, 0, seq_len)
    lab.write_kv(k_cache, v_cache, new_k, new_v, slots)

    axes = ("token", "kv_head", "dim")
    labkit.assert_close(labkit.gather_f64(k_cache, table, seq_len), new_k, atol=0, axes=axes, what="gathered K")
    labkit.assert_close(labkit.gather_f64(v_cache, table, seq_len), new_v, atol=0, axes=axes, what="gathered V")


# --- step 3: the gather and the attention ---


@pytest.mark.parametrize(
    "seq_len, block_size", [(1, 4), (16, 4), (37, 8), (35, 16), (50, 1), (23, 5), (64, 32)]
)
def test_paged_matches_dense_exactly(lab, seq_len, block_size):
    """Paged attention under a shuffled block table equals dense float64 attention over the
    same tokens laid out contiguously, to 1e-12: the same arithmetic, so any larger
    difference is an indexing bug, not rounding.

    Catches: no 1/sqrt(head_dim) scale, softmax over the wrong axis, reading the cache in
    physical instead of logical order, rows past seq_len (poisoned)."""
    q, k, v, k_cache, v_cache, table = _problem(seq_len, seq_len, block_size)
    out = lab.paged_attention(q, k_cache, v_cache, table, seq_len, block_size)
    _check_attention(out, q, k, v)


@pytest.mark.parametrize("spare_entries", [0, 2])
def test_partial_tail_block_is_masked(lab, spare_entries):
    """seq_len=35 with blocks of 16 fills two blocks and 3 slots of a third; the other 13
    slots of that block, and every block the sequence does not own, hold 1e6. Reading any
    of them shifts the output by orders of magnitude.

    Catches: gathering len(block_table) * block_size rows, gathering seq_len + 1 rows.
    With ``spare_entries`` the table also lists blocks past the sequence's end (a table
    padded to a batch's longest sequence), which must never be read either."""
    seq_len, block_size = 35, 16
    q, k, v, k_cache, v_cache, table = _problem(100 + spare_entries, seq_len, block_size)
    unused_blocks = sorted(set(range(k_cache.shape[0])) - set(table.tolist()))
    table = np.concatenate([table, np.array(unused_blocks[:spare_entries], dtype=table.dtype)])
    assert np.all(k_cache[table[2], 3:] == POISON)  # the poisoned tail really is there

    out = lab.paged_attention(q, k_cache, v_cache, table, seq_len, block_size)
    _check_attention(out, q, k, v, what="paged_attention over a partial last block")


def test_indirection_is_the_identity(lab):
    """The same logical tokens placed in two different sets of physical blocks give the same
    output (and the dense one): where a block lives is invisible to the math.

    Catches: reading blocks by physical id order, ignoring the block table."""
    rng = np.random.default_rng(7)
    seq_len, block_size, num_heads, head_dim = 29, 8, 2, 16
    q = rng.standard_normal((num_heads, head_dim))
    k = rng.standard_normal((seq_len, num_heads, head_dim))
    v = rng.standard_normal((seq_len, num_heads, head_dim))
    outputs = []
    for table in (np.array([0, 1, 2, 3]), np.array([6, 2, 7, 4])):
        k_cache, v_cache = _paged_copy(rng, k, v, block_size, table, num_blocks=8)
        out = lab.paged_attention(q, k_cache, v_cache, table, seq_len, block_size)
        _check_attention(out, q, k, v, what=f"paged_attention with block_table {table.tolist()}")
        outputs.append(out)
    labkit.assert_close(outputs[1], outputs[0], atol=1e-12, axes=("head", "dim"), what="output under two layouts")


@pytest.mark.parametrize("num_heads, num_kv_heads", [(4, 4), (4, 2), (8, 2), (6, 3), (8, 1), (6, 2)])
def test_gqa_matches_dense(lab, num_heads, num_kv_heads):
    """Grouped-query attention: query head h reads KV head h // (num_heads // num_kv_heads);
    num_kv_heads == 1 is multi-query attention, num_kv_heads == num_heads plain multi-head.

    Catches: h % num_kv_heads, h // num_kv_heads, always KV head 0."""
    seq_len, block_size = 29, 8
    q, k, v, k_cache, v_cache, table = _problem(num_heads * 10 + num_kv_heads, seq_len, block_size,
                                                num_heads, num_kv_heads)
    out = lab.paged_attention(q, k_cache, v_cache, table, seq_len, block_size)
    _check_attention(out, q, k, v, what=f"paged_attention, {num_heads} query heads over {num_kv_heads} KV heads")


@pytest.mark.parametrize("block_size, chunk", [(16, 16), (6, 16), (6, 7), (4, 1)])
def test_chunked_prefill_write_path(lab, block_size, chunk):
    """A 40-token prompt written chunk by chunk (build_slot_mapping with start = tokens
    already written, then write_kv), attended after every chunk over the prefix so far.
    chunk=1 is a run of decode steps. Chunking changes when tokens are written, never where.

    Catches: ignoring ``start`` (each chunk overwrites the first), slot formulas that only
    work from the start of a block, writes that are lost (a copy)."""
    rng = np.random.default_rng(1000 * block_size + chunk)
    prompt_len, num_heads, num_kv_heads, head_dim = 40, 4, 2, 8
    table, num_blocks = random_block_table(rng, prompt_len, block_size)  # reserved up front
    k_cache = np.full((num_blocks, block_size, num_kv_heads, head_dim), POISON)
    v_cache = np.full_like(k_cache, POISON)
    k = rng.standard_normal((prompt_len, num_kv_heads, head_dim))
    v = rng.standard_normal((prompt_len, num_kv_heads, head_dim))
    q = rng.standard_normal((num_heads, head_dim))

    for start in range(0, prompt_len, chunk):
        end = min(start + chunk, prompt_len)
        slots = lab.build_slot_mapping(table, block_size, start, end - start)
        lab.write_kv(k_cache, v_cache, k[start:end], v[start:end], slots)
        out = lab.paged_attention(q, k_cache, v_cache, table, end, block_size)
        _check_attention(out, q, k[:end], v[:end], what=f"paged_attention after writing tokens {start}..{end - 1}")

    axes = ("token", "kv_head", "dim")
    labkit.assert_close(labkit.gather_f64(k_cache, table, prompt_len), k, atol=0, axes=axes, what="K after prefill")
    labkit.assert_close(labkit.gather_f64(v_cache, table, prompt_len), v, atol=0, axes=axes, what="V after prefill")


def test_paged_attention_leaves_its_inputs_alone(lab):
    """paged_attention only reads: the query, both caches and the block table are unchanged
    afterwards (the engine reuses all of them in the next layer and the next step).

    Catches: scaling the query in place (``q *= scale`` on the caller's float64 array),
    "masking" unused cache slots by overwriting them."""
    q, _, _, k_cache, v_cache, table = _problem(5, 19, 4, num_heads=4, num_kv_heads=2)
    before = [x.copy() for x in (q, k_cache, v_cache, table)]
    lab.paged_attention(q, k_cache, v_cache, table, 19, 4)
    for name, now, then in zip(("q", "k_cache", "v_cache", "block_table"), (q, k_cache, v_cache, table), before,
                               strict=True):
        labkit.assert_close(now, then, atol=0, what=f"{name} after paged_attention (it must not be modified)")


@pytest.mark.parametrize("table", [[], [3]], ids=["empty-table", "reserved-block"])
def test_empty_sequence_gives_zeros(lab, table):
    """seq_len=0 (a request with nothing cached yet, whether or not a block is reserved for
    it) gives zeros of shape [num_heads, head_dim], never NaN from 0/0.

    Catches: a softmax over an empty row (max of nothing, 0/0), reading the reserved block."""
    rng = np.random.default_rng(3)
    num_heads, num_kv_heads, head_dim, block_size = 4, 2, 8, 4
    q = rng.standard_normal((num_heads, head_dim))
    k_cache = np.full((5, block_size, num_kv_heads, head_dim), POISON)
    v_cache = np.full_like(k_cache, POISON)
    out = lab.paged_attention(q, k_cache, v_cache, np.array(table, dtype=np.int64), 0, block_size)
    labkit.assert_close(out, np.zeros((num_heads, head_dim)), atol=0, axes=("head", "dim"), what="seq_len=0 output")


@pytest.mark.parametrize("logit", [1000.0, -1000.0])
def test_large_logits_do_not_overflow(lab, logit):
    """Scores near +-1000: float64 exp overflows past ~709 and underflows to 0 below ~-745,
    so softmax must subtract the row's max first. Tolerance 1e-10, not 1e-12: a score of
    1000 carries a rounding of ~1e-13 (one ulp), which exp turns into a relative error of
    the same size in the weights, and implementations may round the score differently.

    Catches: exp(scores) without the max subtracted (inf/inf or 0/0 = NaN)."""
    rng = np.random.default_rng(5)
    seq_len, block_size, num_heads, head_dim = 21, 4, 2, 8
    k = rng.standard_normal((seq_len, num_heads, head_dim))
    v = rng.standard_normal((seq_len, num_heads, head_dim))
    # Every score is ~logit: component 0 of each key is ~1 and the query puts
    # logit * sqrt(head_dim) there; the other components spread the scores by a few units.
    k[:, :, 0] = 1.0 + 0.005 * rng.standard_normal((seq_len, num_heads))
    q = rng.standard_normal((num_heads, head_dim))
    q[:, 0] = logit * np.sqrt(head_dim)
    table, num_blocks = random_block_table(rng, seq_len, block_size)
    k_cache, v_cache = _paged_copy(rng, k, v, block_size, table, num_blocks)
    out = lab.paged_attention(q, k_cache, v_cache, table, seq_len, block_size)
    _check_attention(out, q, k, v, atol=1e-10, what=f"paged_attention with scores near {logit:g}")
