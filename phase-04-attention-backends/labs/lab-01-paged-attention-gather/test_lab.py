"""Tests of lab 04-01: dense attention and streaming paged attention (numpy, float64).

Every expected value comes from ``labkit`` (float64 brute force over a contiguous copy of the
tokens), never from another function of the implementation under test, and is computed **before**
the call under test. Inputs a function must only read are handed over read-only
(``labkit.cases.read_only``): an implementation that writes into them fails at once instead of
quietly changing the data an expectation is computed from.

Unused cache slots are poisoned: a huge finite value (1e6), NaN or inf. Random numbers or zeros in
the padding are quiet (an off-by-one reading them would shift the answer only a little); poison
makes it shift by orders of magnitude, and NaN/inf also catch a read that is multiplied by a zero
weight (``0 * 1e6`` is 0, ``0 * NaN`` is NaN).

Tolerances: ``dense_attention`` does the reference's arithmetic in the reference's order, so 1e-12.
The streaming version adds the same terms in another order (block by block, rescaled whenever the
max rises), so its float64 rounding differs from the reference's by ~1e-15 per step; 1e-10 leaves
room for that and for long sequences while any algorithmic error (a missing correction, an extra
row) is >= 1e-3.
"""

from __future__ import annotations

import numpy as np
import pytest

import labkit
from labkit.testing import contract
from labkit.testing.cases import padded_block_table, paged_copy, random_block_table, read_only

STREAM_ATOL = 1e-10  # streaming vs the reference: same math, another summation order


# --- the test's own inputs and truth ---


def _random_tokens(seed, seq_len, d=16):
    rng = np.random.default_rng(seed)
    return rng, rng.standard_normal(d), rng.standard_normal((seq_len, d)), rng.standard_normal((seq_len, d))


def _paged(q, k, v, block_table, num_blocks, block_size, poison="huge"):
    """The tokens of ``k``/``v`` paged through ``block_table`` (every other slot poisoned), the
    inputs read-only, and the float64 truth, computed now: ``(q, k_cache, v_cache, table, expected)``."""
    expected = labkit.attention_f64(q, k, v)
    k_cache, v_cache = paged_copy(k, v, block_table, num_blocks, block_size, poison=poison)
    q, k_cache, v_cache, block_table = read_only(q.copy(), k_cache, v_cache, np.array(block_table))
    return q, k_cache, v_cache, block_table, expected


def _check(out, expected, what, atol=STREAM_ATOL):
    labkit.assert_close(out, expected, atol=atol, axes=("dim",), what=what, dtype=np.float64)


def _block_maxima(q, k, block_size):
    scores = k @ q / np.sqrt(q.shape[0])
    return [scores[i : i + block_size].max() for i in range(0, len(scores), block_size)]


# --- step 1: the dense oracle ---


@pytest.mark.parametrize("n", [0, 1, 7, 33])
def test_dense_attention_matches_reference(lab, n):
    """dense_attention(q, k, v) = softmax(k @ q / sqrt(d)) @ v, to 1e-12 (same arithmetic as the
    reference); n = 0 gives zeros; a float64 result.

    Catches: no 1/sqrt(d) scale, weights not normalized, 0/0 on an empty row."""
    _, q, k, v = _random_tokens(n, n)
    expected = labkit.attention_f64(q, k, v)
    q, k, v = read_only(q, k, v)
    _check(lab.dense_attention(q, k, v), expected, what=f"dense_attention over n={n} keys", atol=1e-12)


@pytest.mark.parametrize("case", ["near +1000", "near -1000", "-1000 first, then +1000"])
def test_dense_attention_survives_large_logits(lab, case):
    """Scores near +-1000: exp overflows past ~709 and underflows below ~-745 in float64, so
    even the oracle must subtract the max first. The last case mixes scores near -1000 (the
    first of them) with scores near +1000 in one row: only the max keeps every exponent <= 0.

    Catches: exp(scores) / sum(exp(scores)) (inf/inf or 0/0 = NaN); a shift by the min, the
    mean or the first score instead of the max (right while the scores are close together,
    exp(~2000) = inf once they are not)."""
    rng, q, k, v = _random_tokens(11, 20)
    k[:, 0] = 1.0 + 0.005 * rng.standard_normal(20)  # every score ~logit, spread by a few units
    logit = -1000.0 if case == "near -1000" else 1000.0
    if case.endswith("then +1000"):
        k[::2, 0] *= -1.0  # keys 0, 2, 4, ... score near -1000, the others near +1000
    q[0] = logit * np.sqrt(q.shape[0])
    expected = labkit.attention_f64(q, k, v)
    q, k, v = read_only(q, k, v)
    with np.errstate(over="ignore", invalid="ignore"):
        out = lab.dense_attention(q, k, v)
    _check(out, expected, what=f"dense_attention with scores {case} (the max must be subtracted before exp)")


@pytest.mark.parametrize("kind", ["float32", "float16", "lists"])
def test_dense_attention_returns_float64_for_any_input(lab, kind):
    """q, k, v in float32, in float16, or as plain Python lists: the result is a float64 array equal
    to float64 attention over the values given (widening a float to float64 is exact, so nothing is
    lost), to 1e-12.

    Catches: the inputs used as given (a float32 result, or a list with no ``@``)."""
    _, q, k, v = _random_tokens(12, 9)
    if kind == "lists":
        inputs = (q.tolist(), k.tolist(), v.tolist())
    else:
        inputs = read_only(*(x.astype(kind) for x in (q, k, v)))
    expected = labkit.attention_f64(*(np.asarray(x, dtype=np.float64) for x in inputs))
    _check(lab.dense_attention(*inputs), expected, what=f"dense_attention over {kind} inputs (a float64 result)",
           atol=1e-12)


# --- steps 2-4: the streaming pass ---


def test_matches_dense_block_aligned(lab):
    """16 tokens in 4 full blocks of 4, scattered over the pool as [3, 1, 7, 0]: the recurrence
    (m, denom, acc, corr) must give dense attention's answer. The data are chosen so that
    the running max rises after the first block, which is when a wrong correction shows.

    Catches: a missing correction factor, denom not rescaled, blocks normalized separately,
    blocks read in physical order, no 1/sqrt(d) scale."""
    _, q, k, v = _random_tokens(3, 16)
    maxima = _block_maxima(q, k, 4)
    if not max(maxima[1:]) > maxima[0]:
        raise AssertionError(f"test data: the running max should rise after block 0, block maxima {maxima}")
    q, k_cache, v_cache, table, expected = _paged(q, k, v, [3, 1, 7, 0], 8, 4)
    out = lab.paged_online_attention(q, k_cache, v_cache, table, 16, 4)
    _check(out, expected, what="paged_online_attention, 16 tokens over blocks [3, 1, 7, 0], "
           "the running max rising after block 0")


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
    q, k_cache, v_cache, table, expected = _paged(q, k, v, table, num_blocks, block_size)
    out = lab.paged_online_attention(q, k_cache, v_cache, table, seq_len, block_size)
    _check(out, expected, what=f"paged_online_attention, block maxima {order}")


@pytest.mark.parametrize("pad_columns", [0, 2], ids=["no-padding", "padded-with-null-block"])
@pytest.mark.parametrize("poison", labkit.POISON_KINDS)
def test_matches_dense_partial_last_block(lab, poison, pad_columns):
    """13 tokens with blocks of 4: three full blocks and one holding a single token. The other
    3 slots of that block are poisoned (1e6, NaN or inf); only min(block_size, seq_len - start)
    rows of the last block may be read. With ``pad_columns`` the table also lists two entries
    past the sequence's end that point at block 0, vLLM's null block (poisoned too), as a
    table padded to a batch's longest sequence does.

    Catches: reading the whole last block, reading one row too many, looping over every
    entry of the block table instead of the blocks that cover seq_len, reading whole blocks
    and masking only the scores (only NaN and inf see a poison multiplied by a zero weight)."""
    _, q, k, v = _random_tokens(13, 13)
    table = np.array([6, 2, 4, 1] + [0] * pad_columns)
    q, k_cache, v_cache, table, expected = _paged(q, k, v, table, 8, 4, poison=poison)
    tail = k_cache[1, 1:]
    if not (np.isnan(tail) if poison == "nan" else tail == labkit.poison_value(np.float64, poison)).all():
        raise AssertionError(f"test data: the last block's unused slots should hold {poison} poison, got {tail}")
    out = lab.paged_online_attention(q, k_cache, v_cache, table, 13, 4)
    _check(out, expected, what=f"paged_online_attention, 13 tokens (last block holds 1), {poison} poison, "
                               f"table {table.tolist()}")


def test_paging_invariance(lab):
    """The same 10 logical tokens stored at physical blocks [0, 1, 2] and at [7, 3, 5] give the
    same output, and both the dense one: the block table is the only link between logical
    and physical positions.

    Catches: ignoring the block table (reading physical block i for logical block i)."""
    _, q, k, v = _random_tokens(21, 10)
    outputs = []
    for table in ([0, 1, 2], [7, 3, 5]):
        q_ro, k_cache, v_cache, table, expected = _paged(q, k, v, table, 8, 4)
        out = lab.paged_online_attention(q_ro, k_cache, v_cache, table, 10, 4)
        _check(out, expected, what=f"paged_online_attention with block_table {table.tolist()}")
        outputs.append(out)
    _check(outputs[1], outputs[0], what="output under two layouts", atol=1e-12)


@pytest.mark.parametrize("poison", labkit.POISON_KINDS)
@pytest.mark.parametrize("block_size", [1, 2, 3, 5, 8, 16, 32, 64])
def test_many_block_sizes(lab, block_size, poison):
    """29 tokens under shuffled tables for block sizes from 1 (every token its own block) to 64
    (one partial block holding everything); unused slots poisoned with each poison, and one
    padding entry in each table, pointing at the null block 0.

    Catches: bounds that only work for one block size, a last block read in full."""
    rng, q, k, v = _random_tokens(100 + block_size, 29)
    table, num_blocks = padded_block_table(rng, 29, block_size, pad_columns=1)
    q, k_cache, v_cache, table, expected = _paged(q, k, v, table, num_blocks, block_size, poison=poison)
    out = lab.paged_online_attention(q, k_cache, v_cache, table, 29, block_size)
    _check(out, expected, what=f"paged_online_attention, block_size={block_size}, {poison} poison")


@pytest.mark.parametrize("pattern", list(contract.SCORE_PATTERNS))
def test_contract_score_patterns_at_every_boundary_length(lab, pattern):
    """The score patterns of ``labkit.testing.contract`` (a segment being one block: the unit the
    running max is updated by) at every length ``boundary_lengths`` names for blocks of 4 and of 5
    (0, 1, each side of a block, a length of no whole number of blocks, a full table of 4 blocks):
    flat near +1000 or -1000, one key 100 above the rest in the first or the last block, the mass in a
    middle block, the first block near -1000 under later ones near 0, and (blocks of 5, an odd index)
    the whole sequence near -1000. NaN in every unused slot.

    Catches, on every length at once: a running max that starts at 0 (``running_max_starts_at_zero``:
    near -1000 every weight underflows), no correction or half of one (``no_correction``,
    ``acc_not_rescaled``, ``denom_not_rescaled``), weights taken with the old max, a NaN correction on the
    first block, the whole last block read, each block normalized on its own."""
    rng = np.random.default_rng(len(pattern))
    d = 16
    for block_size in (4, 5):
        named = contract.boundary_lengths(block_size, segment=block_size, capacity=4 * block_size)
        for name, n in named.items():
            q = np.zeros(d)
            q[0] = np.sqrt(d)  # q . k / sqrt(d) is exactly k[0]
            k, v = rng.standard_normal((n, d)), rng.standard_normal((n, d))
            k[:, 0] = contract.score_levels(pattern, n, block_size, index=block_size) + rng.uniform(-3, 3, n)
            table, num_blocks = random_block_table(rng, n, block_size)
            q, k_cache, v_cache, table, expected = _paged(q, k, v, table, num_blocks, block_size, poison="nan")
            with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
                out = lab.paged_online_attention(q, k_cache, v_cache, table, n, block_size)
            _check(out, expected, what=f"paged_online_attention over {n} tokens ({name}) in blocks of {block_size}, "
                   f"scores {pattern} ({contract.SCORE_PATTERNS[pattern]})")


def test_seq_len_one(lab):
    """A single token: its weight is 1, so the output is its value row.

    Catches: a first block mishandled when it is also the last, a poisoned row read."""
    _, q, k, v = _random_tokens(1, 1)
    q, k_cache, v_cache, table, expected = _paged(q, k, v, [2], 4, 4)
    out = lab.paged_online_attention(q, k_cache, v_cache, table, 1, 4)
    _check(out, expected, what="paged_online_attention, seq_len=1")


def test_inputs_are_left_unchanged(lab):
    """Both functions only read: the query, keys, values, caches and block table are unchanged
    afterwards (an engine reuses them for the next head, layer and step). This test hands over
    writeable arrays, so that a write shows as a difference, with its place.

    Catches: scaling the query in place (``q *= scale`` on the caller's float64 array),
    overwriting unused cache slots to "mask" them. The answers are checked too: leaving the inputs
    alone earns nothing without them."""
    rng, q, k, v = _random_tokens(8, 11)
    table, num_blocks = random_block_table(rng, 11, 4)
    k_cache, v_cache = paged_copy(k, v, table, num_blocks, 4)
    expected = labkit.attention_f64(q, k, v)
    inputs = {"q": q, "k": k, "v": v, "k_cache": k_cache, "v_cache": v_cache, "block_table": table}
    before = {name: x.copy() for name, x in inputs.items()}
    _check(lab.dense_attention(q, k, v), expected, "dense_attention of writeable inputs")
    _check(lab.paged_online_attention(q, k_cache, v_cache, table, 11, 4), expected,
           "paged_online_attention of writeable inputs")
    for name, x in inputs.items():
        labkit.assert_close(x, before[name], atol=0, what=f"{name} after the calls (it must not be modified)")


def test_reads_half_precision_caches(lab):
    """Real KV caches are half precision. The caches here are float16 and the query float32; the
    result is float64 and equals float64 dense attention over the values the cache holds:
    converting a value to float64 is exact, so computing in float64 loses nothing.

    Catches: a query (or an accumulator) converted to the cache's dtype, which rounds it to
    about three decimal digits."""
    rng, q, k, v = _random_tokens(19, 22)
    k16, v16 = k.astype(np.float16), v.astype(np.float16)
    q32 = q.astype(np.float32)
    table, num_blocks = random_block_table(rng, 22, 8)
    expected = labkit.attention_f64(q32, k16, v16)
    k_cache, v_cache = paged_copy(k16, v16, table, num_blocks, 8)
    q32, k_cache, v_cache, table = read_only(q32, k_cache, v_cache, table)
    out = lab.paged_online_attention(q32, k_cache, v_cache, table, 22, 8)
    _check(out, expected, what="paged_online_attention over float16 caches (a float64 result)")


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
@pytest.mark.parametrize("poison", labkit.POISON_KINDS)
@pytest.mark.parametrize("table", [[], [2]], ids=["empty-table", "reserved-block"])
def test_empty_sequence_gives_zeros(lab, table, poison, dtype):
    """seq_len=0 (nothing cached yet, with or without a block reserved) gives float64 zeros, never
    NaN, whatever the dtype of q and the caches: the loop runs zero times and acc / denom would be
    0/0. Every slot is poison.

    Catches: no seq_len == 0 case, a loop that visits a block anyway with an unguarded
    first-block corr = exp(-inf - (-inf)), an accumulator made in the cache's dtype
    (``acc_in_the_cache_dtype``: the first block's product widens it to float64, so only an empty
    sequence returns float16 or float32)."""
    rng = np.random.default_rng(0)
    q = rng.standard_normal(8).astype(dtype)
    k_cache = np.full((4, 4, 8), labkit.poison_value(np.dtype(dtype), poison), dtype=dtype)
    q, k_cache, v_cache, table = read_only(q, k_cache, k_cache.copy(), np.array(table, dtype=np.int64))
    out = lab.paged_online_attention(q, k_cache, v_cache, table, 0, 4)
    _check(out, np.zeros(8), what="seq_len=0 output", atol=0)


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
    q, k_cache, v_cache, table, expected = _paged(q, k, v, table, num_blocks, block_size)
    out = lab.paged_online_attention(q, k_cache, v_cache, table, seq_len, block_size)
    _check(out, expected, what=f"paged_online_attention, {case}")


@pytest.mark.parametrize("later", ["higher", "lower"])
def test_a_running_max_of_exactly_zero(lab, later):
    """The first block's largest score is exactly 0.0 (a key orthogonal to the query), and the next
    blocks score higher, or lower. A running max of 0 is a max like any other: the correction
    exp(0 - m_new) rescales the history, and the history stays.

    Catches: the first block recognised by the value of ``m`` (``m == 0`` meaning "nothing seen
    yet"), which throws the history away whenever a real maximum is exactly 0."""
    block_size, seq_len, d = 4, 11, 4
    q = np.array([2.0, 0.0, 0.0, 0.0])  # score(t) = k[t, 0] (scale 1/sqrt(4) times |q| = 2)
    k = np.random.default_rng(7).standard_normal((seq_len, d))
    v = np.random.default_rng(8).standard_normal((seq_len, d))
    k[:4, 0] = [0.0, -1.0, -2.5, -0.5]  # block 0: its max score is exactly 0.0
    k[4:, 0] = [1.5, 0.5, 2.0, -1.0, 3.0, 1.0, 0.25] if later == "higher" else \
        [-1.5, -0.5, -2.0, -1.0, -3.0, -1.0, -0.25]
    q, k_cache, v_cache, table, expected = _paged(q, k, v, [5, 2, 7], 8, block_size)
    out = lab.paged_online_attention(q, k_cache, v_cache, table, seq_len, block_size)
    _check(out, expected, what=f"paged_online_attention, the first block's max score exactly 0, later blocks {later}")


@pytest.mark.parametrize("padding", [-1, 10**9], ids=["minus-one", "huge"])
def test_table_entries_past_the_sequence_are_never_read(lab, padding):
    """A block table padded past the sequence's last block with entries that name no block (-1,
    or an id far past the cache): the function reads, and checks, only the entries that cover
    ``[0, seq_len)``; the answer is dense attention's.

    Catches: the bounds check of the table run over one entry too many (or the whole table), which
    refuses a valid table; a loop over every entry of the table."""
    rng, q, k, v = _random_tokens(14, 9)
    q, k_cache, v_cache, table, expected = _paged(q, k, v, [5, 2, 7, padding, padding], 8, 4)
    out = lab.paged_online_attention(q, k_cache, v_cache, table, 9, 4)
    _check(out, expected, what=f"paged_online_attention, table {table.tolist()} (entries past seq_len=9)")


def test_takes_lists(lab):
    """The query and the block table as plain Python lists (what the docstring's ``q [d]`` and a
    table built on the host are, before numpy): the same answer as arrays give.

    Catches: the given conversions at the top of the function dropped (a list has no ``.ndim``)."""
    rng, q, k, v = _random_tokens(15, 10)
    q_ro, k_cache, v_cache, table, expected = _paged(q, k, v, [6, 1, 3], 8, 4)
    out = lab.paged_online_attention(q.tolist(), k_cache, v_cache, table.tolist(), 10, 4)
    _check(out, expected, what="paged_online_attention with q and block_table as lists")


# (seq_len, block_size) as numpy integers: signed, and unsigned, where a negation wraps around.
NUMPY_LENGTHS = {
    "int64-int32": (np.int64(10), np.int32(4)),
    "uint64-uint64": (np.uint64(10), np.uint64(4)),
    "uint8-uint8": (np.uint8(10), np.uint8(4)),
}


@pytest.mark.parametrize("lengths", list(NUMPY_LENGTHS))
def test_takes_numpy_integers(lab, lengths):
    """``seq_len`` and ``block_size`` as numpy integers (what ``len(...)`` of a numpy table times a
    block size, or an entry of a lengths array, is), signed or unsigned: the same answer as Python
    ints give.

    Catches: a type check that asks for ``int`` itself (``lengths_checked_as_python_ints``), which
    refuses ``np.int64(10)`` although it is an integer; the number of blocks counted as
    ``-(-seq_len // block_size)`` in the lengths' own dtype (``block_count_negated_in_numpy``):
    ``-np.uint64(10)`` is 2**64 - 10, and the loop runs over a nonsense number of blocks."""
    seq_len, block_size = NUMPY_LENGTHS[lengths]
    rng, q, k, v = _random_tokens(16, 10)
    q, k_cache, v_cache, table, expected = _paged(q, k, v, [6, 1, 3], 8, 4)
    call = f"paged_online_attention with seq_len={seq_len!r}, block_size={block_size!r}"
    with np.errstate(over="raise"):  # a wrapped-around integer is an error here, not a warning
        try:
            out = lab.paged_online_attention(q, k_cache, v_cache, table, seq_len, block_size)
        except (FloatingPointError, IndexError, OverflowError) as err:
            raise AssertionError(f"{call}: {type(err).__name__}({err}): count the blocks in Python ints "
                                 f"(int(seq_len)), numpy's unsigned integers wrap around when negated") from None
    _check(out, expected, what=call)


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
    q, k_cache, v_cache, table, expected = _paged(q, k, v, table, num_blocks, block_size)

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
    _check(out, expected, what="paged_online_attention (streamed)")


# --- bad input ---


def _case():
    _, q, k, v = _random_tokens(40, 9, d=8)
    return (q, k, v), _paged(q, k, v, [3, 1, 4], 6, 4)[:4]


# name: (function, the bad call, a word the ValueError's message must contain)
BAD_INPUTS = {
    "dense-k-wrong-d": ("dense_attention", lambda lab, d, p: lab.dense_attention(d[0], d[1][:, :-1], d[2]), "k must"),
    "dense-v-wrong-n": ("dense_attention", lambda lab, d, p: lab.dense_attention(d[0], d[1], d[2][:-1]), "v must"),
    "q-not-a-vector": ("paged_online_attention", lambda lab, d, p: lab.paged_online_attention(
        p[0][None], p[1], p[2], p[3], 9, 4), "q must"),
    "negative-block-id": ("paged_online_attention", lambda lab, d, p: lab.paged_online_attention(
        p[0], p[1], p[2], np.array([3, -1, 4]), 9, 4), "block_table"),
    "seq-len-past-the-table": ("paged_online_attention", lambda lab, d, p: lab.paged_online_attention(
        p[0], p[1], p[2], p[3][:2], 9, 4), "needs 3 blocks of 4; block_table has 2"),
    "block-size-disagrees": ("paged_online_attention", lambda lab, d, p: lab.paged_online_attention(
        p[0], p[1], p[2], p[3], 9, 8), "block_size"),
    "negative-seq-len": ("paged_online_attention", lambda lab, d, p: lab.paged_online_attention(
        p[0], p[1], p[2], p[3], -1, 4), "seq_len"),
    "seq-len-a-float": ("paged_online_attention", lambda lab, d, p: lab.paged_online_attention(
        p[0], p[1], p[2], p[3], 9.0, 4), "seq_len must be an int"),
    "seq-len-a-bool": ("paged_online_attention", lambda lab, d, p: lab.paged_online_attention(
        p[0], p[1], p[2], p[3], True, 4), "seq_len must be an int"),
    "block-size-a-float": ("paged_online_attention", lambda lab, d, p: lab.paged_online_attention(
        p[0], p[1], p[2], p[3], 9, 4.0), "block_size must be an int"),
    "dense-q-not-a-vector": ("dense_attention", lambda lab, d, p: lab.dense_attention(
        np.stack([d[0], d[0]]), d[1], d[2]), "q must"),
    "k-cache-not-3d": ("paged_online_attention", lambda lab, d, p: lab.paged_online_attention(
        p[0], p[1][:, 0], p[2], p[3], 9, 4), "k_cache"),
    "v-cache-not-3d": ("paged_online_attention", lambda lab, d, p: lab.paged_online_attention(
        p[0], p[1], p[2][:, 0], p[3], 9, 4), "v_cache"),
    "q-wrong-d": ("paged_online_attention", lambda lab, d, p: lab.paged_online_attention(
        p[0][:-1], p[1], p[2], p[3], 9, 4), "q has"),
    "block-size-zero": ("paged_online_attention", lambda lab, d, p: lab.paged_online_attention(
        p[0], np.zeros((6, 0, 8)), np.zeros((6, 0, 8)), p[3], 0, 0), "block_size"),
    "block-table-2d": ("paged_online_attention", lambda lab, d, p: lab.paged_online_attention(
        p[0], p[1], p[2], np.stack([p[3]] * 3), 9, 4), "block_table"),
    "block-table-floats": ("paged_online_attention", lambda lab, d, p: lab.paged_online_attention(
        p[0], p[1], p[2], p[3] * 1.0, 9, 4), "block_table"),
    "last-block-id-past-the-cache": ("paged_online_attention", lambda lab, d, p: lab.paged_online_attention(
        p[0], p[1], p[2], np.array([3, 1, 6]), 9, 4), "block_table"),
    # A value cache unlike the key cache ([6, 4, 8]): blocks of 8 read at the key cache's offsets
    # (silently the wrong rows), another size d (an answer of the wrong width), fewer blocks
    # (numpy's IndexError), blocks of 1 (numpy's matmul error).
    "v-cache-other-block-size": ("paged_online_attention", lambda lab, d, p: lab.paged_online_attention(
        p[0], p[1], np.zeros((6, 8, 8)), p[3], 9, 4), "v_cache has shape"),
    "v-cache-other-d": ("paged_online_attention", lambda lab, d, p: lab.paged_online_attention(
        p[0], p[1], np.zeros((6, 4, 6)), p[3], 9, 4), "v_cache has shape"),
    "v-cache-fewer-blocks": ("paged_online_attention", lambda lab, d, p: lab.paged_online_attention(
        p[0], p[1], p[2][:4], p[3], 9, 4), "v_cache has shape"),
    "v-cache-blocks-of-one": ("paged_online_attention", lambda lab, d, p: lab.paged_online_attention(
        p[0], p[1], p[2][:, :1], p[3], 9, 4), "v_cache has shape"),
}


@pytest.mark.parametrize("name", list(BAD_INPUTS))
def test_bad_input_gets_a_clear_message(lab, name):
    """Bad input raises a ValueError whose message names the argument at fault, never an
    IndexError from inside numpy or, worse, a silent answer. The checks are given in starter.py,
    called at the top of each function; each function must first work on good input.

    Catches: a negative block id accepted (numpy reads block -1 from the end of the cache,
    another sequence's data), checks dropped from a function, a rank check of the caches that
    refuses them only when both are wrong (a 2-D key cache beside a right value cache), block ids
    compared with ``>`` instead of ``>=`` the number of blocks (id 6 of a 6-block cache is past
    its end), a block_size of 0 let through to a division, a seq_len or block_size that is a float (or a
    bool) let through to ``range``, whose TypeError names neither (``lengths_not_checked_for_ints``), a table
    too short for seq_len reported with a fractional count of blocks (a true division), a value
    cache checked for its rank but not held to the key cache's shape (read at the key cache's rows,
    or past its end)."""
    dense, paged = _case()
    function, bad_call, word = BAD_INPUTS[name]
    if function == "dense_attention":
        lab.dense_attention(*dense)  # a check that rejects everything is no check
    else:
        lab.paged_online_attention(*paged, 9, 4)
    hint = "the checks given in starter.py are called at the top of each function: keep those calls"
    labkit.assert_refused(lambda: bad_call(lab, dense, paged), word, what=f"{function} ({name})", hint=hint)
