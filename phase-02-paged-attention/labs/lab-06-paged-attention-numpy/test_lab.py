"""Tests of lab 02-06: slot mapping, KV scatter, paged attention (numpy, float64).

The truth is computed by the test itself or by ``labkit`` (float64 brute force over a contiguous
copy of the tokens), never by another function of the implementation under test, and always
**before** the call under test. Inputs a function must only read are handed over read-only
(``labkit.cases.read_only``): an implementation that writes into them fails at once instead of
quietly changing the data an expectation is computed from.

Every cache slot that holds no token of the sequence is poisoned (``labkit.poison_unused_slots``):
a huge finite value (1e6), NaN or inf. A careless read then moves the answer by orders of magnitude
instead of by a little; NaN and inf also catch a read whose weight is zero (``0 * 1e6`` is 0, but
``0 * NaN`` is NaN).

Tolerances: paged attention is the same float64 arithmetic as the dense reference, in the same
order, so 1e-12 (the differences are a few ulp, ~1e-16); the one exception (logits of ~1000) says
why it is looser. Slots and written cache rows are compared exactly.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import labkit
from labkit.testing import contract
from labkit.testing.cases import padded_block_table, paged_copy, random_block_table, read_only

HEAD_AXES = ("head", "dim")


# --- the test's own truth and inputs ---


def _slots_by_loop(block_table, block_size, start, num_tokens):
    """The slot formula, one token at a time: the truth for build_slot_mapping."""
    return np.array(
        [int(block_table[t // block_size]) * block_size + t % block_size for t in range(start, start + num_tokens)],
        dtype=np.int64,
    )


def _problem(seed, seq_len, block_size, num_heads=4, num_kv_heads=4, head_dim=16, *, poison="huge",
             pad_columns=0, dtype=np.float64):
    """One decode query and a sequence of ``seq_len`` tokens paged through a shuffled block table
    (with ``pad_columns`` padding entries pointing at the null block 0, poisoned like every unused
    slot), all read-only, and ``expected``: float64 dense attention over the same tokens laid out
    contiguously, computed here, before any call. ``dtype`` is the caches' type; the truth uses the
    values the cache really holds (rounded to ``dtype``)."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((num_heads, head_dim))
    k = rng.standard_normal((seq_len, num_kv_heads, head_dim)).astype(dtype)
    v = rng.standard_normal((seq_len, num_kv_heads, head_dim)).astype(dtype)
    if pad_columns:
        table, num_blocks = padded_block_table(rng, seq_len, block_size, pad_columns)
    else:
        table, num_blocks = random_block_table(rng, seq_len, block_size)
    k_cache, v_cache = paged_copy(k, v, table, num_blocks, block_size, poison=poison)
    expected = labkit.attention_f64(q, k, v)
    q, k_cache, v_cache, table = read_only(q, k_cache, v_cache, table)
    return SimpleNamespace(q=q, k_cache=k_cache, v_cache=v_cache, table=table, seq_len=seq_len,
                           block_size=block_size, expected=expected)


def _attend(lab, case):
    return lab.paged_attention(case.q, case.k_cache, case.v_cache, case.table, case.seq_len, case.block_size)


def _check(out, expected, what, atol=1e-12):
    labkit.assert_close(out, expected, atol=atol, axes=HEAD_AXES, what=what, dtype=np.float64)


# --- step 1: the write map ---


@pytest.mark.parametrize("block_size", [1, 3, 4, 16])
def test_slot_mapping_formula(lab, block_size):
    """slot(t) = block_table[t // block_size] * block_size + t % block_size over token ranges
    that start at 0, mid-block, on a block boundary, a single decode token and an empty range;
    an int64 array every time.

    Catches: no ``//`` (block_table[t]), ``//`` and ``%`` swapped, ignoring ``start``,
    a float or int32 result."""
    rng = np.random.default_rng(block_size)
    seq_len = 5 * block_size + 2
    table = read_only(random_block_table(rng, seq_len, block_size, spare_blocks=6)[0])
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
        expected = _slots_by_loop(table, block_size, start, num_tokens)
        got = lab.build_slot_mapping(table, block_size, start, num_tokens)
        labkit.assert_equal(
            got,
            expected,
            axes=("token",),
            what=f"build_slot_mapping(table, block_size={block_size}, start={start}, num_tokens={num_tokens})",
            where=lambda i, start=start: f"logical token {start + i[0]}",
            dtype=np.int64,
        )


def test_slot_mapping_accepts_int64_tables(lab):
    """Any 1-D integer array is a block table (vLLM's are int32; numpy's default is int64), and so
    is a plain list. The given check of the block ids refuses nothing valid: the largest block id
    whose slots fit in int64, and padding (-1) past the entries the tokens use."""
    table = read_only(np.array([7, 0, 12, 3], dtype=np.int64))
    expected = _slots_by_loop(table, 8, 5, 20)
    labkit.assert_equal(lab.build_slot_mapping(table, 8, 5, 20), expected, what="slot_mapping", dtype=np.int64)
    labkit.assert_equal(lab.build_slot_mapping(table.tolist(), 8, 5, 20), expected, what="slot_mapping of a list",
                        dtype=np.int64)
    # Block 2**61 - 1 of blocks of 4: its last slot is 2**63 - 1, the largest int64.
    table = read_only(np.array([7, 2**61 - 1, -1, -1], dtype=np.int64))
    expected = _slots_by_loop(table, 4, 3, 5)
    labkit.assert_equal(lab.build_slot_mapping(table, 4, 3, 5), expected, dtype=np.int64,
                        what=f"build_slot_mapping({table.tolist()}, block_size=4, start=3, num_tokens=5)")


# An int32 table (vLLM's dtype) whose slots pass int32, and token positions past int32, each
# (table, block_size, start, num_tokens). The truth is Python's integers (_slots_by_loop).
INT32_TABLES = {
    "id-2**31-1-blocks-of-16": (np.array([5, 2**31 - 1, 9], dtype=np.int32), 16, 14, 10),
    "id-2**27-blocks-of-16": (np.array([2**27, 3], dtype=np.int32), 16, 0, 20),
    "tokens-past-2**31": (np.array([3, 7, 1], dtype=np.int32), 2**30, 2**31 - 2, 4),
}


@pytest.mark.parametrize("case", list(INT32_TABLES))
def test_slot_mapping_of_int32_tables_never_wraps(lab, case):
    """An int32 block table (vLLM's) is read, not computed in: the slot ``id * block_size + offset``
    of a block id near 2**31, or of a token past position 2**31, passes int32 but fits in int64,
    so the docstring promises it exactly, as int64.

    Catches: the slots computed in the table's own dtype (``table[t // block_size] * block_size`` of
    an int32 table is int32 under numpy 2's rules, and wraps to a negative slot, which write_kv
    then skips as padding: the token is written nowhere); the positions ``t`` made int32."""
    table, block_size, start, num_tokens = INT32_TABLES[case]
    expected = _slots_by_loop(table, block_size, start, num_tokens)
    table = read_only(table)
    labkit.assert_equal(
        lab.build_slot_mapping(table, block_size, start, num_tokens), expected, axes=("token",), dtype=np.int64,
        what=f"build_slot_mapping(int32 table {table.tolist()}, block_size={block_size}, start={start}, "
             f"num_tokens={num_tokens}): slots past int32, computed in int64",
        where=lambda i: f"logical token {start + i[0]}")


# --- step 2: the scatter ---


def _caches_and_rows(seed, num_rows, num_blocks=6, block_size=4, num_kv_heads=2, head_dim=8):
    """Random (writeable) caches and read-only rows to write into them."""
    rng = np.random.default_rng(seed)
    k_cache = rng.standard_normal((num_blocks, block_size, num_kv_heads, head_dim))
    v_cache = rng.standard_normal((num_blocks, block_size, num_kv_heads, head_dim))
    new_k = rng.standard_normal((num_rows, num_kv_heads, head_dim))
    new_v = rng.standard_normal((num_rows, num_kv_heads, head_dim))
    return k_cache, v_cache, *read_only(new_k, new_v)


def _scattered_by_loop(cache, rows, slots):
    """The truth for write_kv: a copy of ``cache`` with ``rows[i]`` at slot ``slots[i]`` (slot >= 0)."""
    expected = cache.copy()
    block_size = cache.shape[1]
    for row, slot in zip(rows, slots, strict=True):
        if slot >= 0:
            expected[slot // block_size, slot % block_size] = row
    return expected


CACHE_AXES = ("block", "offset", "kv_head", "dim")


def test_write_kv_scatters_in_place(lab):
    """Row i of new_k/new_v lands at flat slot slot_mapping[i] of the caches the caller
    holds, and nothing else changes.

    Catches: writing into a copy (or a reshaped copy) of the caches, swapping the
    (block, offset) split, writing new_k into the value cache."""
    slots = read_only(np.array([17, 2, 23, 8, 9, 0, 14], dtype=np.int64))  # distinct slots, in any order
    k_cache, v_cache, new_k, new_v = _caches_and_rows(1, len(slots))
    expected_k, expected_v = _scattered_by_loop(k_cache, new_k, slots), _scattered_by_loop(v_cache, new_v, slots)

    lab.write_kv(k_cache, v_cache, new_k, new_v, slots)
    labkit.assert_close(k_cache, expected_k, atol=0, axes=CACHE_AXES,
                        what="k_cache after write_kv (must change in place)")
    labkit.assert_close(v_cache, expected_v, atol=0, axes=CACHE_AXES,
                        what="v_cache after write_kv (must change in place)")


# Padding slots, each in a slot mapping of the given dtype: vLLM's -1, and the other negative values
# the docstring makes padding too (down to the most negative value of the dtype).
PADDING_SLOTS = {
    "minus-one": (-1, np.int64),
    "minus-two": (-2, np.int64),
    "minus-seven-int32": (-7, np.int32),
    "most-negative-int64": (np.iinfo(np.int64).min, np.int64),
    "most-negative-int32": (np.iinfo(np.int32).min, np.int32),
}


@pytest.mark.parametrize("padding", list(PADDING_SLOTS))
def test_write_kv_skips_padding_slots(lab, padding):
    """Every negative slot (vLLM's PAD_SLOT_ID = -1: a padding row of the batch) writes nothing,
    whatever its value and the mapping's integer type. In numpy, index -1 means "the last slot of
    the cache", which belongs to some other sequence; -2 and -7 name other slots near the end.

    Catches: writing every row, so the padding rows overwrite the cache's last slot; taking only
    -1 for padding (``slot_mapping != -1``), so -2 overwrites a slot near the end of the cache and
    the most negative value is an index far outside it."""
    pad, dtype = PADDING_SLOTS[padding]
    slots = read_only(np.array([5, pad, 2, pad, 20], dtype=dtype))
    k_cache, v_cache, new_k, new_v = _caches_and_rows(2, len(slots))
    expected_k, expected_v = _scattered_by_loop(k_cache, new_k, slots), _scattered_by_loop(v_cache, new_v, slots)

    rule = f"slot {pad} is padding (every negative slot is, not -1 alone) and must write nothing"
    try:
        lab.write_kv(k_cache, v_cache, new_k, new_v, slots)
    except IndexError as err:  # a padding slot used as an index, far outside the cache
        raise AssertionError(f"write_kv with slot_mapping {slots.tolist()} ({np.dtype(dtype)}) raised "
                             f"IndexError: {err}; {rule}") from None
    what = f"after write_kv with slot_mapping {slots.tolist()} ({np.dtype(dtype)}): {rule}"
    labkit.assert_close(k_cache, expected_k, atol=0, axes=CACHE_AXES, what=f"k_cache {what}")
    labkit.assert_close(v_cache, expected_v, atol=0, axes=CACHE_AXES, what=f"v_cache {what}")


@pytest.mark.parametrize("block_size", [1, 4, 16])
def test_write_then_gather_round_trips(lab, block_size):
    """The write map (slot_mapping) and the read map (block_table) describe one layout:
    tokens written through build_slot_mapping + write_kv come back, in order, when the
    reference gathers them through the block table.

    Catches: any slot formula that disagrees with the gather, writes outside the table."""
    rng = np.random.default_rng(10 + block_size)
    seq_len, num_kv_heads, head_dim = 35, 2, 8
    table, num_blocks = random_block_table(rng, seq_len, block_size)
    k_cache = np.full((num_blocks, block_size, num_kv_heads, head_dim), labkit.poison_value(np.float64))
    v_cache = k_cache.copy()
    new_k = rng.standard_normal((seq_len, num_kv_heads, head_dim))
    new_v = rng.standard_normal((seq_len, num_kv_heads, head_dim))
    expected_k, expected_v = new_k.copy(), new_v.copy()
    table, new_k, new_v = read_only(table, new_k, new_v)

    slots = lab.build_slot_mapping(table, block_size, 0, seq_len)
    lab.write_kv(k_cache, v_cache, new_k, new_v, slots)

    axes = ("token", "kv_head", "dim")
    labkit.assert_close(labkit.gather_f64(k_cache, table, seq_len), expected_k, atol=0, axes=axes, what="gathered K")
    labkit.assert_close(labkit.gather_f64(v_cache, table, seq_len), expected_v, atol=0, axes=axes, what="gathered V")


# --- step 3: the gather and the attention ---


@pytest.mark.parametrize(
    "seq_len, block_size", [(1, 4), (16, 4), (37, 8), (35, 16), (50, 1), (23, 5), (64, 32)]
)
def test_paged_matches_dense_exactly(lab, seq_len, block_size):
    """Paged attention under a shuffled block table equals dense float64 attention over the
    same tokens laid out contiguously, to 1e-12: the same arithmetic, so any larger
    difference is an indexing bug, not rounding. The tables have no spare entry, and (16, 4)
    and (64, 32) fill their last block exactly.

    Catches: no 1/sqrt(head_dim) scale, softmax over the wrong axis, reading the cache in
    physical instead of logical order, rows past seq_len (poisoned)."""
    case = _problem(seq_len, seq_len, block_size)
    _check(_attend(lab, case), case.expected,
           what=f"paged_attention, seq_len={seq_len}, block_size={block_size} (slots past seq_len hold 1e6)")


@pytest.mark.parametrize("pad_columns", [0, 2], ids=["no-padding", "padded-with-null-block"])
@pytest.mark.parametrize("poison", labkit.POISON_KINDS)
def test_partial_tail_block_is_masked(lab, poison, pad_columns):
    """seq_len=35 with blocks of 16 fills two blocks and 3 slots of a third; the other 13
    slots of that block, and every block the sequence does not own, are poisoned (1e6, NaN or
    inf). With ``pad_columns`` the table also lists two entries past the sequence's end that
    point at block 0, vLLM's null block (a table padded to a batch's longest sequence): they
    must never be read either.

    Catches: gathering len(block_table) * block_size rows, gathering seq_len + 1 rows, reading
    whole blocks and masking only the scores (a huge finite poison times a zero weight is 0,
    so only NaN and inf see it)."""
    case = _problem(100 + pad_columns, 35, 16, poison=poison, pad_columns=pad_columns)
    tail = case.k_cache[case.table[2], 3:]
    poisoned = (np.isnan(tail) if poison == "nan" else tail == labkit.poison_value(np.float64, poison)).all()
    assert poisoned, f"the test's own case: the unused tail of block {case.table[2]} does not hold the {poison} poison"
    _check(_attend(lab, case), case.expected,
           what=f"paged_attention over a partial last block ({poison} poison, table {case.table.tolist()})")


def test_indirection_is_the_identity(lab):
    """The same logical tokens placed in two different sets of physical blocks give the same
    output (and the dense one): where a block lives is invisible to the math. (Here block 0 is
    an ordinary block: this test's pool has no null block.)

    Catches: reading blocks by physical id order, ignoring the block table."""
    rng = np.random.default_rng(7)
    seq_len, block_size, num_heads, head_dim = 29, 8, 2, 16
    q = read_only(rng.standard_normal((num_heads, head_dim)))
    k = rng.standard_normal((seq_len, num_heads, head_dim))
    v = rng.standard_normal((seq_len, num_heads, head_dim))
    expected = labkit.attention_f64(q, k, v)
    outputs = []
    for table in (np.array([0, 1, 2, 3]), np.array([6, 2, 7, 4])):
        k_cache, v_cache = paged_copy(k, v, table, 8, block_size)
        k_cache, v_cache, table = read_only(k_cache, v_cache, table)
        out = lab.paged_attention(q, k_cache, v_cache, table, seq_len, block_size)
        _check(out, expected, what=f"paged_attention with block_table {table.tolist()}")
        outputs.append(out)
    _check(outputs[1], outputs[0], what="output under two layouts")


@pytest.mark.parametrize("num_heads, num_kv_heads", [(4, 4), (4, 2), (8, 2), (6, 3), (8, 1), (6, 2)])
def test_gqa_matches_dense(lab, num_heads, num_kv_heads):
    """Grouped-query attention: query head h reads KV head h // (num_heads // num_kv_heads);
    num_kv_heads == 1 is multi-query attention, num_kv_heads == num_heads plain multi-head.

    Catches: h % num_kv_heads, h // num_kv_heads, always KV head 0."""
    case = _problem(num_heads * 10 + num_kv_heads, 29, 8, num_heads, num_kv_heads)
    _check(_attend(lab, case), case.expected,
           what=f"paged_attention, {num_heads} query heads over {num_kv_heads} KV heads")


@pytest.mark.parametrize("poison", labkit.POISON_KINDS)
@pytest.mark.parametrize("block_size, chunk", [(16, 16), (6, 16), (6, 7), (4, 1)])
def test_chunked_prefill_write_path(lab, block_size, chunk, poison):
    """A 40-token prompt written chunk by chunk (build_slot_mapping with start = tokens
    already written, then write_kv), attended after every chunk over the prefix so far.
    chunk=1 is a run of decode steps. Chunking changes when tokens are written, never where.
    Slots not yet written hold poison (1e6, NaN or inf).

    Catches: ignoring ``start`` (each chunk overwrites the first), slot formulas that only
    work from the start of a block, writes that are lost (a copy), reading one row too many."""
    rng = np.random.default_rng(1000 * block_size + chunk)
    prompt_len, num_heads, num_kv_heads, head_dim = 40, 4, 2, 8
    table, num_blocks = random_block_table(rng, prompt_len, block_size)  # reserved up front
    k_cache = np.full((num_blocks, block_size, num_kv_heads, head_dim), labkit.poison_value(np.float64, poison))
    v_cache = k_cache.copy()
    k = rng.standard_normal((prompt_len, num_kv_heads, head_dim))
    v = rng.standard_normal((prompt_len, num_kv_heads, head_dim))
    q = rng.standard_normal((num_heads, head_dim))
    expected = {end: labkit.attention_f64(q, k[:end], v[:end]) for end in range(1, prompt_len + 1)}
    expected_k, expected_v = k.copy(), v.copy()
    table, k, v, q = read_only(table, k, v, q)

    for start in range(0, prompt_len, chunk):
        end = min(start + chunk, prompt_len)
        slots = lab.build_slot_mapping(table, block_size, start, end - start)
        lab.write_kv(k_cache, v_cache, k[start:end], v[start:end], slots)
        out = lab.paged_attention(q, k_cache, v_cache, table, end, block_size)
        _check(out, expected[end], what=f"paged_attention after writing tokens {start}..{end - 1}")

    axes = ("token", "kv_head", "dim")
    labkit.assert_close(labkit.gather_f64(k_cache, table, prompt_len), expected_k, atol=0, axes=axes,
                        what="K after prefill")
    labkit.assert_close(labkit.gather_f64(v_cache, table, prompt_len), expected_v, atol=0, axes=axes,
                        what="V after prefill")


def test_paged_attention_leaves_its_inputs_alone(lab):
    """paged_attention only reads: the query, both caches and the block table are unchanged
    afterwards (the engine reuses all of them in the next layer and the next step). This test
    hands over writeable arrays, so that a write shows as a difference, with its place.

    Catches: scaling the query in place (``q *= scale`` on the caller's float64 array),
    "masking" unused cache slots by overwriting them. The answer is checked too: leaving the
    inputs alone earns nothing without it."""
    rng = np.random.default_rng(5)
    q = rng.standard_normal((4, 16))
    k, v = rng.standard_normal((19, 2, 16)), rng.standard_normal((19, 2, 16))
    table, num_blocks = random_block_table(rng, 19, 4)
    k_cache, v_cache = paged_copy(k, v, table, num_blocks, 4)
    expected = labkit.attention_f64(q, k, v)
    inputs = {"q": q, "k_cache": k_cache, "v_cache": v_cache, "block_table": table}
    before = {name: x.copy() for name, x in inputs.items()}
    out = lab.paged_attention(q, k_cache, v_cache, table, 19, 4)
    _check(out, expected, what="paged_attention with writeable inputs")
    for name, x in inputs.items():
        labkit.assert_close(x, before[name], atol=0, what=f"{name} after paged_attention (it must not be modified)")


def test_paged_attention_reads_half_precision_caches(lab):
    """Real KV caches are half precision. The caches here are float16 and the query float32; the
    result is float64 and equals float64 dense attention over the values the cache holds, to
    1e-12: converting each value to float64 is exact, so computing in float64 loses nothing.

    Catches: an output allocated in the cache's dtype (float16 keeps ~3 decimal digits)."""
    case = _problem(17, 30, 8, num_heads=4, num_kv_heads=2, dtype=np.float16)
    q32 = read_only(case.q.astype(np.float32))
    expected = labkit.attention_f64(q32, labkit.gather_f64(case.k_cache, case.table, 30),
                                    labkit.gather_f64(case.v_cache, case.table, 30))
    out = lab.paged_attention(q32, case.k_cache, case.v_cache, case.table, 30, 8)
    _check(out, expected, what="paged_attention over float16 caches (a float64 result)")


@pytest.mark.parametrize("poison", labkit.POISON_KINDS)
@pytest.mark.parametrize("table", [[], [3]], ids=["empty-table", "reserved-block"])
def test_empty_sequence_gives_zeros(lab, table, poison):
    """seq_len=0 (a request with nothing cached yet, whether or not a block is reserved for
    it) gives zeros of shape [num_heads, head_dim], never NaN from 0/0. Every slot is poison.

    Catches: a softmax over an empty row (max of nothing, 0/0), reading the reserved block."""
    rng = np.random.default_rng(3)
    num_heads, num_kv_heads, head_dim, block_size = 4, 2, 8, 4
    q = rng.standard_normal((num_heads, head_dim))
    k_cache = np.full((5, block_size, num_kv_heads, head_dim), labkit.poison_value(np.float64, poison))
    q, k_cache, v_cache, table = read_only(q, k_cache, k_cache.copy(), np.array(table, dtype=np.int64))
    out = lab.paged_attention(q, k_cache, v_cache, table, 0, block_size)
    labkit.assert_close(out, np.zeros((num_heads, head_dim)), atol=0, axes=HEAD_AXES, what="seq_len=0 output",
                        dtype=np.float64)


@pytest.mark.parametrize("logit", [1000.0, -1000.0, "both"])
def test_large_logits_do_not_overflow(lab, logit):
    """Scores near +-1000: float64 exp overflows past ~709 and underflows to 0 below ~-745,
    so softmax must subtract the row's max first. "both" puts every other key near -1000 and
    the rest near +1000 in the same row: only the max keeps every exponent <= 0. Tolerance
    1e-10, not 1e-12: a score of 1000 carries a rounding of ~1e-13 (one ulp), which exp turns
    into a relative error of the same size in the weights, and implementations may round the
    score differently.

    Catches: exp(scores) without the max subtracted (inf/inf or 0/0 = NaN); a shift by the
    row's min instead of its max (right while the scores are close together, exp(2000) = inf
    once they are not)."""
    rng = np.random.default_rng(5)
    seq_len, block_size, num_heads, head_dim = 21, 4, 2, 8
    k = rng.standard_normal((seq_len, num_heads, head_dim))
    v = rng.standard_normal((seq_len, num_heads, head_dim))
    # Every score is ~logit: component 0 of each key is ~1 and the query puts
    # logit * sqrt(head_dim) there; the other components spread the scores by a few units.
    k[:, :, 0] = 1.0 + 0.005 * rng.standard_normal((seq_len, num_heads))
    q = rng.standard_normal((num_heads, head_dim))
    q[:, 0] = (1000.0 if logit == "both" else logit) * np.sqrt(head_dim)
    if logit == "both":
        k[::2, :, 0] *= -1.0  # keys 0, 2, 4, ... score near -1000, the others near +1000
    table, num_blocks = random_block_table(rng, seq_len, block_size)
    k_cache, v_cache = paged_copy(k, v, table, num_blocks, block_size)
    expected = labkit.attention_f64(q, k, v)
    q, k_cache, v_cache, table = read_only(q, k_cache, v_cache, table)
    out = lab.paged_attention(q, k_cache, v_cache, table, seq_len, block_size)
    near = "-1000 and +1000" if logit == "both" else f"{logit:g}"
    _check(out, expected, atol=1e-10, what=f"paged_attention with scores near {near}")


def test_each_query_head_is_shifted_by_its_own_max(lab):
    """Each query head's softmax subtracts that head's own max score: heads of one KV group, and
    of different groups, whose scores sit ~2000 apart (8 query heads on 2 KV heads; a sequence of
    19 tokens in blocks of 4, the tail poisoned). Tolerance 1e-10, as for large logits.

    Catches: a softmax shifted by one max for all heads (computed once before the loop over heads,
    or ``scores.max()`` over a vectorized ``[num_heads, seq_len]`` matrix, the ``axis=-1,
    keepdims=True`` forgotten) or for each KV head's group: every head whose scores lie more than
    ~745 below that max gets exp() = 0 for all of its tokens, and 0/0 = NaN."""
    rng = np.random.default_rng(11)
    seq_len, block_size, num_heads, num_kv_heads, head_dim = 19, 4, 8, 2, 8
    k = rng.standard_normal((seq_len, num_kv_heads, head_dim))
    v = rng.standard_normal((seq_len, num_kv_heads, head_dim))
    # Component 0 of every key is ~1, so query head h scores ~levels[h] on every token (the other
    # components spread the scores by a few units). Each group of 4 heads spans +1000 to -1000.
    k[:, :, 0] = 1.0 + 0.005 * rng.standard_normal((seq_len, num_kv_heads))
    levels = np.array([1000.0, -1000.0, 0.0, 300.0, -1000.0, 1000.0, 500.0, -500.0])
    q = rng.standard_normal((num_heads, head_dim))
    q[:, 0] = levels * np.sqrt(head_dim)
    table, num_blocks = random_block_table(rng, seq_len, block_size)
    k_cache, v_cache = paged_copy(k, v, table, num_blocks, block_size, poison="nan")
    expected = labkit.attention_f64(q, k, v)
    q, k_cache, v_cache, table = read_only(q, k_cache, v_cache, table)
    out = lab.paged_attention(q, k_cache, v_cache, table, seq_len, block_size)
    _check(out, expected, atol=1e-10,
           what=f"paged_attention with query heads scoring near {levels.tolist()} (each head's softmax subtracts "
                f"its own max: a max shared by several heads sends the others' exp to 0, and 0/0 is NaN)")


@pytest.mark.parametrize("padding", [-1, 10**9], ids=["minus-one", "huge"])
def test_table_entries_past_the_sequence_are_never_read(lab, padding):
    """A block table padded past the sequence's last block with entries that name no block (-1, or
    an id far past the cache), as a batch's table padded to its longest sequence may be: only the
    entries covering ``[0, seq_len)`` are read, and checked; the answer is dense attention's.

    Catches: the bounds check of the table run over one entry too many (or over the whole table),
    which refuses a valid table; a gather through every entry of the table."""
    case = _problem(23, 9, 4, num_heads=4, num_kv_heads=2)
    table = read_only(np.concatenate([case.table, [padding, padding]]))
    out = lab.paged_attention(case.q, case.k_cache, case.v_cache, table, 9, 4)
    _check(out, case.expected, what=f"paged_attention, table {table.tolist()} (entries past seq_len=9)")


# --- the contract: cache layouts, boundary lengths, score patterns (labkit.testing.contract) ---

CONTRACT_PATTERNS = ["flat near +1000", "one peak in the last segment", "one segment far below"]


@pytest.mark.parametrize("pattern", CONTRACT_PATTERNS)
@pytest.mark.parametrize("layout", contract.CACHE_LAYOUTS)
def test_write_and_attend_on_every_cache_layout(lab, layout, pattern):
    """The caches as the views engines pass (``labkit.testing.contract.CACHE_LAYOUTS``: K and V as
    ``kv[:, 0]``, ``kv[:, 1]`` of one fused pool, a pool stored heads outside the slots; NaN beside
    them until written): a 23-token sequence (8 query heads on 2 KV heads, blocks of 4) written
    through ``write_kv`` at the slots of its table, then attended at every boundary length
    (``boundary_lengths``: 0, 1, each side of a block, the full table), the scores placed by a
    pattern (``score_levels``, a segment being a block): near +1000 everywhere, one key 100 above
    the rest in the last block, the first block near -1000.

    Catches: ``write_kv`` through a reshape of the caches (``write_kv_through_a_flat_reshape``: on a
    view numpy's reshape is a copy, and the tokens are written nowhere)."""
    block_size, capacity, num_heads, num_kv_heads, head_dim = 4, 23, 8, 2, 8
    rng = np.random.default_rng(len(pattern) + len(layout))
    table, num_blocks = random_block_table(rng, capacity, block_size)
    staging = rng.standard_normal((num_blocks, block_size, num_kv_heads, head_dim))
    q = rng.standard_normal((1, num_heads, head_dim))
    levels = [contract.score_levels(pattern, capacity, block_size)]
    contract.steer_scores(q, staging, table[None], [capacity], levels, seed=3)
    q = q[0]
    k = labkit.gather_f64(staging, table, capacity)
    v = rng.standard_normal((capacity, num_kv_heads, head_dim))
    named = contract.boundary_lengths(block_size, capacity=capacity)
    expected = {n: labkit.attention_f64(q, k[:n], v[:n]) for n in named.values()}
    slots = _slots_by_loop(table, block_size, 0, capacity)
    nan = np.full((num_blocks, block_size, num_kv_heads, head_dim), np.nan)
    k_cache, v_cache = contract.CACHE_LAYOUTS[layout].apply(nan, nan.copy())
    described = contract.CACHE_LAYOUTS[layout].describe
    q, table, k_rows, v_rows, slots = read_only(q, table, k.copy(), v.copy(), slots)

    lab.write_kv(k_cache, v_cache, k_rows, v_rows, slots)
    axes = ("token", "kv_head", "dim")
    labkit.assert_close(labkit.gather_f64(k_cache, table, capacity), k, atol=0, axes=axes,
                        what=f"K gathered after write_kv into {described}")
    labkit.assert_close(labkit.gather_f64(v_cache, table, capacity), v, atol=0, axes=axes,
                        what=f"V gathered after write_kv into {described}")
    for name, n in named.items():
        out = lab.paged_attention(q, k_cache, v_cache, table, n, block_size)
        # Scores near 1000 carry float64 rounding of ~1000 * 2**-52 into the weights: 1e-10.
        _check(out, expected[n], atol=1e-10,
               what=f"paged_attention over {n} tokens ({name}), {described}, scores {pattern}")


def test_paged_attention_takes_lists(lab):
    """The query and the block table as plain Python lists, and an empty table as ``[]`` (numpy reads
    an empty list as float64): the same answer as arrays give.

    Catches: the given conversions at the top of ``paged_attention`` dropped (a list has no
    ``.ndim``), an empty table refused for its dtype."""
    case = _problem(24, 10, 4, num_heads=4, num_kv_heads=2)
    out = lab.paged_attention(case.q.tolist(), case.k_cache, case.v_cache, case.table.tolist(), 10, 4)
    _check(out, case.expected, what="paged_attention with q and block_table as lists")
    empty = lab.paged_attention(case.q.tolist(), case.k_cache, case.v_cache, [], 0, 4)
    _check(empty, np.zeros(case.q.shape), what="paged_attention with block_table=[] and seq_len=0")
    labkit.assert_equal(lab.build_slot_mapping([], 4, 0, 0), np.zeros(0, dtype=np.int64),
                        what="build_slot_mapping([], 4, 0, 0)", dtype=np.int64)


# --- bad input ---


def _good_call(lab, function, case):
    """A valid call of ``function``: a check that rejects everything is no check."""
    if function == "build_slot_mapping":
        lab.build_slot_mapping(case.table, case.block_size, 0, case.seq_len)
    elif function == "write_kv":
        k_cache, v_cache = case.k_cache.copy(), case.v_cache.copy()
        rows = read_only(np.zeros((1, *k_cache.shape[2:])))
        lab.write_kv(k_cache, v_cache, rows, rows, read_only(np.array([0])))
    else:
        _attend(lab, case)


def _rows(case, n):
    return np.zeros((n, *case.k_cache.shape[2:]))


def _v_cache_unlike_k(case, axis, size):
    """A value cache whose dimension ``axis`` is ``size`` where the key cache's is something else."""
    shape = list(case.k_cache.shape)
    shape[axis] = size
    return np.zeros(shape)


# name: (function, the bad call, a word the ValueError's message must contain)
BAD_INPUTS = {
    "tokens-past-the-table": ("build_slot_mapping", lambda lab, c: lab.build_slot_mapping(c.table[:1], 4, 0, 9),
                              "block_table"),
    "block-size-0": ("build_slot_mapping", lambda lab, c: lab.build_slot_mapping(c.table, 0, 0, 1), "block_size"),
    "new-k-wrong-shape": ("write_kv", lambda lab, c: lab.write_kv(c.k_cache.copy(), c.v_cache.copy(), _rows(c, 2),
                                                                   _rows(c, 3), np.array([0, 1, 2])), "new_k"),
    "slot-past-the-cache": ("write_kv", lambda lab, c: lab.write_kv(c.k_cache.copy(), c.v_cache.copy(), _rows(c, 1),
                                                                     _rows(c, 1), np.array([10_000])), "slot"),
    "heads-not-a-multiple": ("paged_attention", lambda lab, c: lab.paged_attention(
        np.zeros((3, 16)), c.k_cache, c.v_cache, c.table, 9, 4), "num_heads"),
    "negative-block-id": ("paged_attention", lambda lab, c: lab.paged_attention(
        c.q, c.k_cache, c.v_cache, np.array([c.table[0], -1, c.table[2]]), 9, 4), "block_table"),
    "seq-len-past-the-table": ("paged_attention", lambda lab, c: lab.paged_attention(
        c.q, c.k_cache, c.v_cache, c.table[:2], 9, 4), "block_table"),
    "block-size-disagrees": ("paged_attention", lambda lab, c: lab.paged_attention(
        c.q, c.k_cache, c.v_cache, c.table, 9, 8), "block_size"),
    "block-table-2d": ("build_slot_mapping", lambda lab, c: lab.build_slot_mapping(c.table[None], 4, 0, 1),
                       "block_table"),
    "block-table-floats": ("build_slot_mapping", lambda lab, c: lab.build_slot_mapping(c.table * 1.0, 4, 0, 1),
                           "block_table"),
    "negative-start": ("build_slot_mapping", lambda lab, c: lab.build_slot_mapping(c.table, 4, -1, 2), "start"),
    "negative-num-tokens": ("build_slot_mapping", lambda lab, c: lab.build_slot_mapping(c.table, 4, 0, -1),
                            "num_tokens"),
    # A negative id would give negative slots (padding: the tokens written nowhere). Block
    # (2**63 - 2) // 3 of blocks of 3 starts at slot 2**63 - 2, so its third token's slot is 2**63,
    # one past the largest int64, which wraps to -2**63: the smallest id whose slots do not fit (here
    # beside a small id, so that the largest id is the one checked).
    "negative-block-id-for-slots": ("build_slot_mapping", lambda lab, c: lab.build_slot_mapping(
        np.array([c.table[0], -1, c.table[2]]), 4, 2, 5), "block id -1"),
    "block-id-slots-past-int64": ("build_slot_mapping", lambda lab, c: lab.build_slot_mapping(
        np.array([c.table[0], (2**63 - 2) // 3]), 3, 2, 4), f"block id {(2**63 - 2) // 3}"),
    "cache-not-4d": ("write_kv", lambda lab, c: lab.write_kv(c.k_cache.copy()[:, 0], c.v_cache.copy(), _rows(c, 1),
                                                             _rows(c, 1), np.array([0])), "k_cache"),
    "caches-3d": ("write_kv", lambda lab, c: lab.write_kv(c.k_cache.copy()[:, 0], c.v_cache.copy()[:, 0],
                                                          _rows(c, 1)[:, 0], _rows(c, 1)[:, 0], np.array([0])),
                  "k_cache"),
    "slot-mapping-2d": ("write_kv", lambda lab, c: lab.write_kv(c.k_cache.copy(), c.v_cache.copy(), _rows(c, 1),
                                                                _rows(c, 1), np.array([[0]])), "slot_mapping"),
    "slot-mapping-floats": ("write_kv", lambda lab, c: lab.write_kv(c.k_cache.copy(), c.v_cache.copy(), _rows(c, 1),
                                                                    _rows(c, 1), np.array([0.0])), "slot_mapping"),
    "last-slot-one-past-the-cache": ("write_kv", lambda lab, c: lab.write_kv(
        c.k_cache.copy(), c.v_cache.copy(), _rows(c, 2), _rows(c, 2),
        np.array([0, c.k_cache.shape[0] * c.k_cache.shape[1]])), "slot"),
    "q-not-2d": ("paged_attention", lambda lab, c: lab.paged_attention(
        c.q[0], c.k_cache, c.v_cache, c.table, 9, 4), "q must"),
    "v-cache-not-4d": ("paged_attention", lambda lab, c: lab.paged_attention(
        c.q, c.k_cache, c.v_cache[:, 0], c.table, 9, 4), "v_cache"),
    "caches-3d-in-attention": ("paged_attention", lambda lab, c: lab.paged_attention(
        c.q, c.k_cache[:, 0], c.v_cache[:, 0], c.table, 9, 4), "k_cache"),
    "q-wrong-head-dim": ("paged_attention", lambda lab, c: lab.paged_attention(
        c.q[:, :-1], c.k_cache, c.v_cache, c.table, 9, 4), "head_dim"),
    "last-block-id-past-the-cache": ("paged_attention", lambda lab, c: lab.paged_attention(
        c.q, c.k_cache, c.v_cache, np.array([c.table[0], c.table[1], c.k_cache.shape[0]]), 9, 4), "block_table"),
    # A value cache unlike the key cache: blocks of 8 read at the key cache's offsets (silently the
    # wrong rows), twice the KV heads (silently accepted), one block (numpy's IndexError), another
    # head size (an answer of the wrong width).
    "v-cache-other-block-size": ("paged_attention", lambda lab, c: lab.paged_attention(
        c.q, c.k_cache, _v_cache_unlike_k(c, 1, 8), c.table, 9, 4), "v_cache has shape"),
    "v-cache-more-kv-heads": ("paged_attention", lambda lab, c: lab.paged_attention(
        c.q, c.k_cache, _v_cache_unlike_k(c, 2, 4), c.table, 9, 4), "v_cache has shape"),
    "v-cache-one-block": ("paged_attention", lambda lab, c: lab.paged_attention(
        c.q, c.k_cache, _v_cache_unlike_k(c, 0, 1), c.table, 9, 4), "v_cache has shape"),
    "v-cache-other-head-dim": ("paged_attention", lambda lab, c: lab.paged_attention(
        c.q, c.k_cache, _v_cache_unlike_k(c, 3, 8), c.table, 9, 4), "v_cache has shape"),
    "write-v-cache-other-block-size": ("write_kv", lambda lab, c: lab.write_kv(
        c.k_cache.copy(), _v_cache_unlike_k(c, 1, 8), _rows(c, 1), _rows(c, 1), np.array([5])), "v_cache has shape"),
    "write-v-cache-one-block": ("write_kv", lambda lab, c: lab.write_kv(
        c.k_cache.copy(), _v_cache_unlike_k(c, 0, 1), _rows(c, 1), _rows(c, 1), np.array([5])), "v_cache has shape"),
}


@pytest.mark.parametrize("name", list(BAD_INPUTS))
def test_bad_input_gets_a_clear_message(lab, name):
    """Bad input raises a ValueError whose message names the argument at fault, never an
    IndexError from inside numpy or, worse, a silent answer. The checks are given in starter.py,
    called at the top of each function; this test makes sure they are still called.

    Catches: a negative block id accepted (numpy reads block -1 from the end of the cache, an
    answer from another sequence's data), checks dropped from a function, checks joined with
    ``and`` where each condition alone is an error, bounds compared with ``>`` instead of ``>=``
    the number of blocks or slots (id ``num_blocks`` is one past the end), the largest slot or
    block id not the one compared (only the smallest), a value cache checked for its rank but not
    held to the key cache's shape (read or written at the key cache's rows, or past its end),
    build_slot_mapping's block ids taken as they are (a negative id turns the tokens into padding,
    an id too large wraps its slots around int64)."""
    case = _problem(9, 9, 4, num_heads=4, num_kv_heads=2)
    function, bad_call, word = BAD_INPUTS[name]
    _good_call(lab, function, case)
    hint = "the checks given in starter.py are called at the top of each function: keep those calls"
    labkit.assert_refused(lambda: bad_call(lab, case), word, what=f"{function} ({name})", hint=hint)
