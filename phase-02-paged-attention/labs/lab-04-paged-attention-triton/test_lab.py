"""Tests for lab 02-04: paged attention in torch and in Triton.

Every expected value is float64 attention over the tokens gathered through the block
table (``labkit.paged_attention_f64``), computed from the values the tensors hold
*before* the function under test is called; never another function of yours. Every
cache slot that holds no token of the sequence is poisoned (a huge finite value, NaN or
inf), and the entries of a padded block table past the sequence point at poisoned
blocks, so a read past ``seq_len``, through a wrong block id or through the padding
shows up as a large error or a NaN instead of a small one.

Without a GPU the Triton kernel runs on the CPU through Triton's interpreter (fp16 and
fp32); with one it runs on the GPU, bf16 included.

Past these examples, the API's whole contract (``labkit.contract``): caches that are views of one
pool, int64 tables and tables with a stride other than 1, tables padded with ids of no block,
lengths as numpy integers (unsigned too), groups up to 32 query heads on one KV head, the reference
in bf16 on any device, and scores placed against the blocks (a peak in the first or the last, a
block far below the rest).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

import labkit
from labkit import triton_env
from labkit.testing import child, contract
from labkit.testing.cases import DecodeCase, blocks_needed, decode_case

torch, triton = triton_env.require_torch_and_triton()

pytestmark = pytest.mark.triton

DEVICE = triton_env.device()
# The correctness gate. fp16 and bf16 inputs: fp32 arithmetic inside, so the error is the
# rounding of the output to 11 (fp16) or 8 (bf16) significant bits, a few 1e-3 at most
# for outputs of size ~1; the gate leaves room for long sums. fp32 end to end: the sums'
# rounding over a few hundred tokens is ~1e-6, so 1e-4 catches accumulators kept in fp16.
TOL = {torch.float16: 1e-2, torch.bfloat16: 2e-2, torch.float32: 1e-4}
# The interpreter computes bf16 wrongly: bf16 only on a GPU.
DTYPES = [torch.float16, torch.float32] + ([torch.bfloat16] if DEVICE == "cuda" else [])
BOTH = ["paged_attention_torch", "paged_attention_triton"]
# A block table exactly as long as the sequence needs, or with two more entries that point
# at unused (poisoned) blocks, as a batch's shared [batch, max_blocks] table has.
TABLES = {"tight": 0, "padded": 2}
SPARE_BLOCKS = 4  # blocks no sequence owns: poisoned, and where padded tables point


def make_case(seq_len, *, block_size=16, num_heads=8, num_kv_heads=2, head_dim=64, dtype=torch.float16,
              seed=0, table="padded", poison="huge", block_ids=None, num_blocks=None) -> DecodeCase:
    """One sequence of ``seq_len`` tokens in a shuffled pool of blocks, every unused slot poisoned.

    ``block_ids`` (with ``num_blocks``, the pool) gives the sequence's table instead of a random one.
    """
    spare = SPARE_BLOCKS if block_ids is None else num_blocks - blocks_needed(seq_len, block_size)
    case = decode_case([seq_len], num_heads=num_heads, num_kv_heads=num_kv_heads, head_dim=head_dim,
                       block_size=block_size, dtype=dtype, device=DEVICE, seed=seed, spare_blocks=spare,
                       pad_columns=TABLES[table])
    if block_ids is not None:
        ids = torch.tensor([block_ids], dtype=torch.int32, device=DEVICE)
        case = dataclasses.replace(case, block_tables=ids)
    return case.poison(poison)


def run(lab, impl, case: DecodeCase, what: str, *, seq_len=None):
    """Call ``impl`` on the case's one sequence and compare with the float64 truth,
    computed before the call; the output must have q's dtype. ``seq_len``, when given, is the
    case's length as the caller hands it over (a numpy integer, say)."""
    __tracebackhide__ = True
    expected = case.expected_f64()[0]
    q, k_cache, v_cache, block_table, length = case.one(0)
    if seq_len is not None:
        assert seq_len == length, f"seq_len={seq_len!r} is not the case's length {length} (a test bug)"
        length = seq_len
    try:
        out = getattr(lab, impl)(q, k_cache, v_cache, block_table, length)
    except (RuntimeError, IndexError, TypeError) as err:  # say which case it was (a view, a dtype...)
        raise AssertionError(f"{what}: raised {type(err).__name__}: {err}") from err
    labkit.assert_close(out, expected, atol=TOL[case.q.dtype], axes=("head", "dim"), what=what, dtype=case.q.dtype)
    _same_device(out, case.q, what)


def _same_device(out, q, what):
    """The output lives where ``q`` does: on a GPU a CPU answer is an answer in the wrong place (and a
    copy back on every call). Only a GPU machine can tell, every tensor of a CPU machine being on the CPU."""
    __tracebackhide__ = True
    device = getattr(out, "device", None)
    labkit.require(device == q.device, f"{what}: the output is on {device}, q on {q.device}; build it on q's device "
                                       "(torch.zeros_like(q), torch.empty_like(q))")


# --- Step 1: the torch reference ---------------------------------------------------------


@pytest.mark.parametrize("poison", labkit.POISON_KINDS)
@pytest.mark.parametrize(
    "seq_len, block_size, num_heads, num_kv_heads",
    [(1, 16, 4, 4), (15, 16, 8, 2), (16, 16, 8, 2), (17, 16, 8, 1), (130, 16, 8, 2), (33, 32, 4, 2), (64, 32, 4, 4)],
)
def test_torch_reference_matches_dense_fp32(lab, seq_len, block_size, num_heads, num_kv_heads, poison):
    """Step 1: in fp32 the torch reference equals dense attention over the gathered tokens
    to 1e-4, whatever the unused slots hold (huge values, NaN, inf). Catches a reference
    that gathers whole blocks (reads the poisoned tail: ``reference_whole_blocks``), uses
    the logical block index as the physical one, maps query heads to the wrong KV head
    (``reference_gqa_repeat``), or forgets the 1/sqrt(head_dim) scale."""
    case = make_case(seq_len, block_size=block_size, num_heads=num_heads, num_kv_heads=num_kv_heads,
                     dtype=torch.float32, seed=seq_len, poison=poison)
    run(lab, "paged_attention_torch", case, f"paged_attention_torch (seq_len={seq_len}, block_size={block_size})")


def test_torch_reference_fp16_within_gate(lab):
    """Step 1: with fp16 inputs the reference computes in fp32 and returns fp16 within 1e-2
    of the float64 answer. Catches a reference that returns fp32 (``reference_returns_fp32``),
    or does its softmax in fp16 without subtracting the max."""
    run(lab, "paged_attention_torch", make_case(130), "paged_attention_torch (fp16, seq_len=130)")


@pytest.mark.parametrize("keys", ["ordinary", "past float16's range"])
def test_torch_reference_bfloat16(lab, keys):
    """Step 1: the reference takes every dtype the API names, bfloat16 included, on any device (only
    the Triton kernel needs a GPU for bfloat16: the interpreter computes it wrongly). fp32 inside,
    bfloat16 out, within 2e-2. In the second case every key is 1e5 times larger and q 1e5 times
    smaller (the same scores): bfloat16 holds such keys, float16 (largest 65504) does not. Catches a
    reference that returns another dtype (``reference_returns_fp32``), or turns bfloat16 inputs into
    float16 on the way to fp32 (``reference_bf16_through_fp16``: the keys become inf, the output NaN)."""
    case = make_case(70, dtype=torch.bfloat16, seed=16, poison="nan")
    if keys != "ordinary":  # scaled before the truth is computed: the truth sees the rounded values
        case = dataclasses.replace(case, q=case.q * 1e-5, k_cache=case.k_cache * 1e5)
    run(lab, "paged_attention_torch", case, f"paged_attention_torch (bfloat16, seq_len=70, keys {keys})")


# --- Step 2: the Triton kernel ------------------------------------------------------------


# Lengths around the block boundary, as functions of block_size.
LENGTHS = {
    "1": lambda bs: 1,
    "bs-1": lambda bs: bs - 1,
    "bs": lambda bs: bs,
    "bs+1": lambda bs: bs + 1,
    "3bs+5": lambda bs: 3 * bs + 5,
}


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("block_size", [16, 32])
@pytest.mark.parametrize("length", LENGTHS)
def test_triton_matches_dense(lab, block_size, length, table):
    """Step 2: the kernel equals dense attention for lengths that do and do not fill their
    last block, with tight and padded block tables and the unused slots poisoned. Catches a
    missing tail mask (``no_tail_mask``: the poisoned slots get attended), masked loads with
    unmasked scores (``scores_unmasked``: the padding ``other=0.0`` counts as a score of 0),
    a kernel that runs one block short (``one_block_short``), a wrong block id
    (``logical_as_physical``), a forgotten scale (``no_scale``), a wrong GQA mapping and a
    missing online-softmax correction (``no_correction``)."""
    seq_len = LENGTHS[length](block_size)
    case = make_case(seq_len, block_size=block_size, seed=seq_len, table=table)
    blocks = blocks_needed(seq_len, block_size)
    tail = seq_len - (blocks - 1) * block_size
    run(lab, "paged_attention_triton", case,
        f"paged_attention_triton (seq_len={seq_len} in {blocks} block(s) of {block_size}, {tail} token(s) in the "
        f"last; {table} table; every unused slot poisoned)")


@pytest.mark.parametrize("impl", BOTH)
def test_source_example_130_tokens_in_9_scattered_blocks(lab, impl):
    """Steps 1-3: the walkthrough's sequence. 130 tokens, block table
    [12, 3, 47, 1, 88, 5, 9, 22, 0] into a pool of 96 blocks; the 9th block holds 130 - 8*16 = 2
    tokens. The correctness gate: max |delta| <= 1e-2 in fp16. Catches every wrong address:
    a missing tail mask, logical-as-physical block ids, a skipped last block."""
    case = make_case(130, seed=130, block_ids=[12, 3, 47, 1, 88, 5, 9, 22, 0], num_blocks=96)
    run(lab, impl, case, f"{impl} (130 tokens, 9 scattered blocks)")


@pytest.mark.parametrize(
    "num_heads, num_kv_heads", [(4, 4), (8, 2), (8, 1), (12, 3), (24, 2), (32, 1)],
    ids=["MHA", "GQA-4", "MQA", "GQA-4x3", "GQA-12x2", "MQA-32"],
)
@pytest.mark.parametrize("impl", BOTH)
def test_grouped_query_heads(lab, impl, num_heads, num_kv_heads):
    """Query head h reads KV head h // (num_heads // num_kv_heads): multi-head, grouped and
    multi-query attention, up to 32 query heads on one KV head (the checks accept any group: a
    multiple is all they ask). Catches the classic wrong mapping h % num_kv_heads (right for
    MHA and MQA, wrong for GQA: ``gqa_head_modulo``, ``reference_gqa_repeat``) and a kernel
    that indexes the cache by the query head."""
    case = make_case(37, num_heads=num_heads, num_kv_heads=num_kv_heads, seed=num_heads * 10 + num_kv_heads)
    run(lab, impl, case, f"{impl} ({num_heads} query heads, {num_kv_heads} KV heads)")


@pytest.mark.parametrize("impl", BOTH)
def test_head_dim_128(lab, impl):
    """head_dim 128 with block_size 32 (the bench's head size): catches a kernel that
    hard-codes head_dim 64 or a scale that is not 1/sqrt(head_dim) (``no_scale``)."""
    case = make_case(50, block_size=32, head_dim=128, num_heads=4, seed=128)
    run(lab, impl, case, f"{impl} (head_dim=128)")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
def test_triton_dtypes(lab, dtype):
    """The kernel takes fp16 and fp32 (and bf16 on a GPU) and returns q's dtype; fp32 must
    be accurate to 1e-4. Catches an output buffer hard-coded to fp32 (``output_fp32``) and
    accumulators rounded to fp16 after every block (``fp16_accumulators``: about 3e-4 off
    in fp32, invisible under the fp16 gate)."""
    case = make_case(70, dtype=dtype, seed=70)
    run(lab, "paged_attention_triton", case, f"paged_attention_triton ({dtype})")


@pytest.mark.parametrize("table", ["empty", "padded"])
@pytest.mark.parametrize("impl", BOTH)
def test_seq_len_zero_gives_zeros(lab, impl, table):
    """seq_len 0 (a sequence with no history yet) gives zeros, never NaN, on q's device, and reads
    no block (the padded table points at poisoned blocks). Catches 0/0 in the final division
    (``zero_length_nan``), a loop that runs at least once, and (on a GPU) zeros made on the CPU
    by an early return that names no device (``reference_zeros_on_the_cpu``)."""
    case = make_case(0, seed=1)
    q, k_cache, v_cache, block_table, _ = case.one(0)
    if table == "empty":
        block_table = block_table[:0]
    expected = np.zeros(tuple(q.shape))
    out = getattr(lab, impl)(q, k_cache, v_cache, block_table, 0)
    labkit.assert_close(out, expected, atol=0, axes=("head", "dim"), what=f"{impl} (seq_len=0, {table} table)",
                        dtype=q.dtype)
    _same_device(out, q, f"{impl} (seq_len=0, {table} table)")


# seq_len as callers hold it: a length read out of a numpy array of lengths is a numpy integer of that
# array's type, and engines keep lengths in unsigned arrays as well as signed ones.
SEQ_LEN_TYPES = {"np.int64": np.int64, "np.uint32": np.uint32}


@pytest.mark.parametrize("int_type", SEQ_LEN_TYPES)
@pytest.mark.parametrize("impl", BOTH)
def test_seq_len_of_any_integer_type(lab, impl, int_type):
    """``seq_len`` may be a numpy integer, unsigned included: the same answer as with the int. Catches
    arithmetic on the argument as it came instead of on the Python int ``_check_inputs`` returns
    (``seq_len_used_as_given``): on an unsigned length ``-(-seq_len // block_size)`` wraps around to
    billions of blocks, and the loop walks off the end of the table; a kernel launched with the numpy
    scalar is refused by Triton's interpreter."""
    case = make_case(45, seed=48)
    seq_len = SEQ_LEN_TYPES[int_type](45)
    run(lab, impl, case, f"{impl} with seq_len={seq_len!r} ({int_type}, 45 tokens)", seq_len=seq_len)


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("poison", labkit.POISON_KINDS)
@pytest.mark.parametrize("impl", BOTH)
def test_unused_slots_never_leak(lab, impl, poison, table):
    """A real cache's unused slots hold anything, NaN included (freed blocks, torch.empty).
    With huge values, NaN or inf in every unused slot the output must be the same. Catches
    a kernel that masks the scores but loads V unmasked (``v_unmasked``: its weight is 0,
    and 0 * NaN = NaN, while 0 * 3e4 = 0 passes) and a reference that gathers whole blocks."""
    case = make_case(21, seed=21, poison=poison, table=table)
    run(lab, impl, case, f"{impl} (unused slots hold {poison} poison, {table} table)")


def aligned_scores_case(seq_len, first, last, *, seed, block_size=16, num_heads=8, num_kv_heads=2, head_dim=64):
    """Keys lined up with the query, so that the scores run from about ``first`` to about
    ``last`` over the sequence (plus noise of about 0.4): the same sign pattern for q and
    the keys, scaled token by token."""
    case = make_case(seq_len, block_size=block_size, num_heads=num_heads, num_kv_heads=num_kv_heads,
                     head_dim=head_dim, seed=seed)
    rng = np.random.default_rng(seed)
    direction = rng.choice([-1.0, 1.0], size=(num_kv_heads, head_dim))  # one per KV head
    q = 4.0 * np.repeat(direction, num_heads // num_kv_heads, axis=0)  # q . direction = 4 * head_dim
    # score = c * (q . direction) / sqrt(head_dim) = 4 c sqrt(head_dim): c from the wanted score
    c = np.linspace(first, last, seq_len) / (4.0 * math.sqrt(head_dim))
    keys = c[:, None, None] * direction + 0.1 * rng.standard_normal((seq_len, num_kv_heads, head_dim))
    case.q[0] = torch.from_numpy(q).to(case.q)
    table = case.block_tables[0].tolist()
    for t in range(seq_len):
        case.k_cache[table[t // block_size], t % block_size] = torch.from_numpy(keys[t]).to(case.k_cache)
    return case


@pytest.mark.parametrize("impl", BOTH)
def test_online_softmax_rising_max(lab, impl):
    """The maximum score grows block after block (from 0 to ~40): every block forces the
    running max up, so everything summed so far must be rescaled by exp(m_old - m_new).
    Catches a missing correction factor (on acc, on the denominator, or both: ``no_correction``)."""
    case = aligned_scores_case(100, 0.0, 40.0, seed=3)
    run(lab, impl, case, f"{impl} (scores rising block by block)")


@pytest.mark.parametrize("impl", BOTH)
def test_large_logits_do_not_overflow(lab, impl):
    """Scores that climb to ~+1000: exp(1000) overflows even float64, so the kernel must
    subtract its running max before exponentiating. Catches exp(score) without the max
    (``no_running_max``: inf / inf = NaN), and a max frozen at the first block's value."""
    case = aligned_scores_case(100, 0.0, 1000.0, seed=4)
    run(lab, impl, case, f"{impl} (scores up to ~+1000)")


@pytest.mark.parametrize("impl", BOTH)
def test_very_negative_logits(lab, impl):
    """Every score near -1000 (from -1000 to -990): exp(-1000) underflows to 0 in any
    precision, so the weights exist only relative to the running max. Catches a running max
    that starts at 0 instead of -inf (``running_max_starts_at_zero``: the max never rises to
    the scores, every exp(score - 0) is 0 and the output collapses to zeros) and exp(score)
    without the max (``no_running_max``)."""
    case = aligned_scores_case(100, -1000.0, -990.0, seed=5)
    run(lab, impl, case, f"{impl} (scores near -1000)")


@pytest.mark.parametrize("impl", BOTH)
def test_long_sequence_many_blocks(lab, impl):
    """500 tokens in 32 scattered blocks with the fp16 gate: rounding and the online
    softmax over many blocks stay within 1e-2."""
    run(lab, impl, make_case(500, num_heads=4, num_kv_heads=1, seed=500), f"{impl} (500 tokens)")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["float32", "float16"])
@pytest.mark.parametrize("impl", BOTH)
def test_inputs_are_left_unchanged(lab, impl, dtype):
    """Attention reads q, the caches and the table; it must not write them. Catches a
    reference that scales q in place (``q.float()`` is q itself for an fp32 tensor, so
    ``.div_()`` on it changes the caller's query: ``reference_scales_q_in_place``) and a
    kernel that uses q's memory as its output buffer (``output_written_into_q``). Both
    return the right answer; the damage shows on the caller's next use of q. The answer is
    checked too: leaving the inputs alone earns nothing without it."""
    case = make_case(40, dtype=dtype, seed=40)
    expected = case.expected_f64()[0]
    args = case.one(0)
    before = [t.clone() for t in args[:4]]
    out = getattr(lab, impl)(*args)
    labkit.assert_close(out, expected, atol=TOL[dtype], axes=("head", "dim"), what=f"{impl} ({dtype})", dtype=dtype)
    for name, old, new in zip(["q", "k_cache", "v_cache", "block_table"], before, args[:4], strict=True):
        same = torch.equal(old, new) if not old.is_floating_point() else torch.allclose(
            old, new, rtol=0, atol=0, equal_nan=True)
        assert same, f"{impl} changed its input {name} (max change {(old.float() - new.float()).abs().max():.3g})"


# --- The contract: layouts, table dtypes, score patterns ------------------------------------------

# The caches as engines lay them out (labkit.contract: views into a larger pool), and the block
# table in both integer types the API names.
LAYOUTS = {name: (layout.describe, layout.apply) for name, layout in contract.CACHE_LAYOUTS.items()
           if name != "contiguous"}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("impl", BOTH)
def test_cache_layouts_engines_pass(lab, impl, layout):
    """The caches may be any tensors of the documented shape whose K and V share strides with
    head_dim contiguous, and engines pass views: the two halves ``kv[:, 0]``, ``kv[:, 1]`` of one
    fused pool (the block stride twice a block), or a pool stored with the heads outside the slots.
    Catches offsets computed from the shape as if the caches were contiguous
    (``offsets_as_if_contiguous``) and a reference that flattens them with ``view`` where only
    ``reshape`` works on a view (``reference_view_of_a_view``)."""
    describe, apply = LAYOUTS[layout]
    case = make_case(45, num_heads=8, num_kv_heads=2, seed=45, poison="nan")
    k_cache, v_cache = apply(case.k_cache, case.v_cache)
    case = dataclasses.replace(case, k_cache=k_cache, v_cache=v_cache)
    run(lab, impl, case, f"{impl} with {describe}")


def _neox_qkv(q):
    """``q`` as the first third of each head's row of a fused ``[num_heads, 3 * head_dim]`` projection (the
    layout GPT-NeoX's checkpoints use: q, k and v side by side per head), the rest NaN."""
    num_heads, head_dim = q.shape
    fused = torch.full((num_heads, 3 * head_dim), float("nan"), dtype=q.dtype, device=q.device)
    fused[:, :head_dim] = q
    return fused[:, :head_dim]


def _transposed(q):
    """``q`` stored head_dim-major: the same values, strides ``(1, num_heads)``."""
    return q.t().contiguous().t()


Q_VIEWS = {"a slice of a per-head fused qkv (GPT-NeoX)": _neox_qkv, "stored transposed": _transposed}


@pytest.mark.parametrize("view", Q_VIEWS)
@pytest.mark.parametrize("impl", BOTH)
def test_q_of_any_strides(lab, impl, view):
    """``q`` may be any ``[num_heads, head_dim]`` tensor: a slice of a fused projection whose rows hold
    each head's q, k and v side by side (the K and V parts NaN), or stored transposed. Catches a kernel
    that indexes q as ``head * head_dim + d`` without making it contiguous first (``q_assumed_contiguous``)."""
    case = make_case(45, num_heads=8, num_kv_heads=2, seed=46, poison="nan")
    case = dataclasses.replace(case, q=Q_VIEWS[view](case.q[0])[None])
    run(lab, impl, case, f"{impl} with q {view}")


def _column_of_a_2d_table(table, filler):
    """``table`` as column 0 of a ``[len, 3]`` tensor (stride 3) whose other columns hold ``filler``."""
    wide = torch.full((table.numel(), 3), filler, dtype=table.dtype, device=table.device)
    wide[:, 0] = table
    return wide[:, 0]


def _every_other_entry(table, filler):
    """``table`` as ``long[::2]`` (stride 2) of a table twice as long, ``filler`` in between."""
    long = torch.full((2 * table.numel(),), filler, dtype=table.dtype, device=table.device)
    long[::2] = table
    return long[::2]


# The 1-D tables a caller can hand over without copying: a column of a 2-D tensor, a strided slice.
TABLE_VIEWS = {"a column of a 2-D tensor": _column_of_a_2d_table,
               "every other entry of a longer table": _every_other_entry}


@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64], ids=["int32", "int64"])
@pytest.mark.parametrize("view", TABLE_VIEWS)
@pytest.mark.parametrize("impl", BOTH)
def test_block_table_of_any_strides(lab, impl, view, index_dtype):
    """``block_table`` may be any 1-D int tensor, a view with a stride other than 1 included: a column
    of a 2-D tensor, every other entry of a longer table. What lies between its entries is the id of a
    block the sequence does not use, poisoned with NaN, so reading the table as if it were contiguous
    reads that block. Catches a kernel handed the table without making it contiguous first
    (``block_table_assumed_contiguous``): ``block_table_ptr + logical`` walks past the view's entries."""
    case = make_case(45, seed=47, poison="nan")
    table = case.block_tables[0]
    used = set(table[: blocks_needed(45, 16)].tolist())
    filler = next(b for b in range(case.k_cache.shape[0]) if b not in used)  # a poisoned block
    strided = TABLE_VIEWS[view](table.to(index_dtype), filler)
    labkit.require(strided.stride(0) != 1, f"the table {view} must have a stride other than 1 (a test bug)")
    case = dataclasses.replace(case, block_tables=strided[None])
    run(lab, impl, case, f"{impl} with a block_table that is {view} ({index_dtype}, stride {strided.stride(0)})")


@pytest.mark.parametrize("impl", BOTH)
def test_table_entries_past_the_sequence_are_never_read(lab, impl):
    """A padded table's entries past ``ceil(seq_len / block_size)`` belong to no token, and engines fill
    them with whatever pad id they use: here -1 and the largest int32, ids of no block. Only the entries
    the sequence needs may be read. Catches a reference that gathers the blocks of every entry and cuts
    the result to ``seq_len`` afterwards (``reference_gathers_the_whole_table``: an IndexError on the id
    past the pool; -1 alone would pass, torch reading it as the pool's last block), and a range check of
    every entry, which refuses a valid table."""
    case = make_case(45, seed=50, table="padded")
    table = case.block_tables.clone()
    needed = blocks_needed(45, 16)
    table[0, needed:] = torch.tensor([-1, 2**31 - 1], dtype=table.dtype)
    case = dataclasses.replace(case, block_tables=table)
    run(lab, impl, case, f"{impl} with a table padded with -1 and 2**31 - 1 past its {needed} used entries")


@pytest.mark.parametrize("impl", BOTH)
def test_int64_block_table(lab, impl):
    """The API takes the block table in int32 or int64: the same answer either way. Catches a
    table reinterpreted as int32 (every other entry is then the high half of an id, 0)."""
    case = make_case(50, seed=64)
    case = dataclasses.replace(case, block_tables=case.block_tables.long())
    run(lab, impl, case, f"{impl} with an int64 block_table")


# The score patterns in float16 for both functions, and in bfloat16 for the reference on any device and for
# the kernel where it can take bfloat16 (a GPU).
SCORE_DTYPES = [(impl, torch.float16) for impl in BOTH] + [
    (impl, torch.bfloat16) for impl in BOTH if impl == "paged_attention_torch" or DEVICE == "cuda"]


@pytest.mark.parametrize("pattern", [p for p in contract.SCORE_PATTERNS if p != "neighbours far apart"])
@pytest.mark.parametrize("impl, dtype", SCORE_DTYPES,
                         ids=[f"{impl}-{str(dtype).removeprefix('torch.')}" for impl, dtype in SCORE_DTYPES])
def test_score_patterns_across_blocks(lab, impl, dtype, pattern):
    """Scores placed against the block boundaries the kernel walks (``SCORE_PATTERNS`` of
    ``labkit.contract``, the segment being a block of 16): flat near +1000 or -1000, one key 100
    above the rest in the first block or in the last, the mass clustered in a middle block, the
    first block near -1000 and the rest near 0. The running max must hold the largest score seen
    so far, whichever block it came from. Catches a running max replaced by each block's own max
    (``running_max_is_block_max``: after a peak in the first block, exp(100) overflows), a max
    frozen at the first block's, a max that starts at 0, exponentials of raw scores. In bfloat16
    too (2e-2): near 1000 its scores are 8 apart, so arithmetic in the input's dtype instead of fp32
    scrambles the weights (``reference_bf16_inside``)."""
    block_size, seq_len = 16, 70
    case = make_case(seq_len, num_heads=4, num_kv_heads=2, dtype=dtype, seed=71)
    tables = case.block_tables.cpu()
    contract.steer_scores(case.q, case.k_cache, tables, [seq_len],
                          [contract.score_levels(pattern, seq_len, block_size)], seed=71)
    case = case.poison("nan")  # the steering moved the poisoned keys too
    run(lab, impl, case, f"{impl} ({dtype}), scores {pattern} ({contract.SCORE_PATTERNS[pattern]})")


# --- Clear errors for bad input ------------------------------------------------------------


def _bad_inputs():
    """(case id, function that breaks good inputs, words the message must contain)."""
    return [
        ("q a list", lambda a: {**a, "q": a["q"].tolist()}, "torch.Tensor"),
        ("q is 3-D", lambda a: {**a, "q": a["q"][None]}, "num_heads, head_dim"),
        ("caches 3-D", lambda a: {**a, "k_cache": a["k_cache"][:, :, 0], "v_cache": a["v_cache"][:, :, 0]},
         "k_cache must be"),
        ("v shape differs", lambda a: {**a, "v_cache": a["v_cache"][:, :, :1]}, "v_cache"),
        ("heads not a multiple", lambda a: {**a, "q": a["q"][:3]}, "multiple"),
        ("no KV heads", lambda a: {**a, "k_cache": a["k_cache"][:, :, :0], "v_cache": a["v_cache"][:, :, :0]},
         "multiple"),
        ("block_size 24", lambda a: {**a, "k_cache": a["k_cache"][:, :12].repeat(1, 2, 1, 1),
                                     "v_cache": a["v_cache"][:, :12].repeat(1, 2, 1, 1)}, "power of two"),
        ("head_dim 48", lambda a: {**a, "q": a["q"][:, :48], "k_cache": a["k_cache"][..., :48].contiguous(),
                                   "v_cache": a["v_cache"][..., :48].contiguous()}, "power of two"),
        ("q's head_dim alone", lambda a: {**a, "q": a["q"][:, :32].contiguous()}, "head_dim"),
        ("int q", lambda a: {**a, "q": a["q"].to(torch.int32)}, "float"),
        ("int q and caches", lambda a: {**a, "q": a["q"].to(torch.int32), "k_cache": a["k_cache"].to(torch.int32),
                                        "v_cache": a["v_cache"].to(torch.int32)}, "float"),
        ("dtypes differ", lambda a: {**a, "k_cache": a["k_cache"].float()}, "dtype"),
        ("float block table", lambda a: {**a, "block_table": a["block_table"].float()}, "block_table"),
        ("2-D block table", lambda a: {**a, "block_table": a["block_table"][None]}, "block_table"),
        ("table too short", lambda a: {**a, "seq_len": 1000}, "block"),
        ("negative seq_len", lambda a: {**a, "seq_len": -1}, "seq_len"),
        ("seq_len a tensor", lambda a: {**a, "seq_len": torch.tensor(5)}, "seq_len"),
        ("table on another device", lambda a: {**a, "block_table": a["block_table"].to("meta")}, "device"),
    ]


@pytest.mark.parametrize("name, breaks, words", _bad_inputs(), ids=[c[0] for c in _bad_inputs()])
@pytest.mark.parametrize("impl", BOTH)
def test_bad_input_raises_a_clear_error(lab, impl, name, breaks, words):
    """Bad shapes, dtypes, sizes and devices raise ValueError with a message that names the
    problem, before any kernel launch (a Triton compile error or a crash is no message)."""
    q, k_cache, v_cache, block_table, _ = make_case(20, seed=2).one(0)
    args = breaks({"q": q, "k_cache": k_cache, "v_cache": v_cache, "block_table": block_table, "seq_len": 20})
    with pytest.raises(ValueError, match=words):
        getattr(lab, impl)(**args)
        pytest.fail(f"{impl} with {name}: no ValueError (expected one naming {words!r}; call _check_inputs first)")


def _heads_outside_dims(cache):
    """The same shape with head_dim no longer contiguous: stored [blocks, slots, head_dim, kv_heads]."""
    return cache.permute(0, 1, 3, 2).contiguous().permute(0, 1, 3, 2)


def _on(device):
    return lambda a: {**a, **{name: a[name].to(device) for name in ("q", "k_cache", "v_cache", "block_table")}}


def _kernel_refusals():
    """(case id, function that breaks good inputs, words, whether the torch reference takes it): what
    the kernel cannot take."""
    cases = [
        ("V stored another way than K", lambda a: {**a, "v_cache": a["v_cache"].transpose(1, 2).contiguous()
                                                   .transpose(1, 2)}, "layout", True),
        ("head_dim not contiguous", lambda a: {**a, "k_cache": _heads_outside_dims(a["k_cache"]),
                                               "v_cache": _heads_outside_dims(a["v_cache"])}, "contiguous", True),
        ("tensors on the meta device", _on("meta"), "runs on cuda", False),
    ]
    if DEVICE == "cpu":
        cases.append(("bfloat16 under the interpreter", lambda a: {
            **a, **{name: a[name].to(torch.bfloat16) for name in ("q", "k_cache", "v_cache")}}, "bfloat16", True))
    else:  # a GPU machine runs compiled kernels: CPU tensors have nothing to run on
        cases.append(("CPU tensors on a GPU machine", _on("cpu"), "interpreter", True))
    return cases


@pytest.mark.parametrize("name, breaks, words, reference_takes_it", _kernel_refusals(),
                         ids=[c[0] for c in _kernel_refusals()])
def test_the_kernel_refuses_what_it_cannot_read(lab, name, breaks, words, reference_takes_it):
    """Step 2: inputs the kernel cannot take raise a ValueError before the launch: K and V of different
    strides (the kernel is handed one set), head_dim not contiguous, tensors on a device Triton does not
    run on, bfloat16 on the interpreter (which computes it wrongly), CPU tensors where Triton compiles for
    the GPU. The torch reference takes the first ones. Catches the kernel's checks called as the
    reference's (``for_triton=False``: a wrong answer, a crash or a silently wrong bfloat16 instead)."""
    q, k_cache, v_cache, block_table, _ = make_case(20, seed=2).one(0)
    good = {"q": q, "k_cache": k_cache, "v_cache": v_cache, "block_table": block_table, "seq_len": 20}
    args = breaks(good)
    if reference_takes_it:  # only the kernel may refuse it
        assert lab.paged_attention_torch(**args) is not None
    with pytest.raises(ValueError, match=words):
        lab.paged_attention_triton(**args)
        pytest.fail(f"paged_attention_triton with {name}: no ValueError (expected one naming {words!r}; call "
                    "_check_inputs(..., for_triton=True) before the launch)")


# --- A cache of more than 2**31 elements ------------------------------------------------------

# The cache is built in a child process (_big_cache_child.py, through labkit.testing.child), on the
# GPU when there is one and through the interpreter otherwise: 4 GiB must not live in the test's
# process, nor cross the pipe of `labs grade` (there the child runs in the student's sandbox). The
# child sends back the output only; the expectation is computed here, from the same blocks rebuilt
# by the child script's own inputs(), so nothing the implementation under test does can change it.
BIG_CACHE_CHILD = Path(__file__).with_name("_big_cache_child.py")


def test_offsets_past_2_31_elements(lab):
    """A key and a value cache of more than 2**31 elements each, the sequence (40 tokens, GQA)
    in their top blocks: block id * block stride no longer fits in int32, so the kernel must
    compute offsets in int64. The last block's empty slots and the padding entries' block hold
    poison. Catches int32 address arithmetic (``int32_offsets``: a wrong answer, or a crash of
    the child process on an address outside the cache)."""
    out = child.run(BIG_CACHE_CHILD, timeout=300, failed=(
        "paged_attention_triton failed on a cache of more than 2**31 elements with the sequence in its top "
        "blocks: are element offsets computed in int32? (the block id must be widened to int64 before it "
        "multiplies the block stride)"))
    big = child.script_module(BIG_CACHE_CHILD)
    q, block_table, k_blocks, v_blocks = big.inputs(torch)
    expected = labkit.paged_attention_f64(q, k_blocks, v_blocks, block_table, big.SEQ_LEN)
    assert isinstance(out, np.ndarray) and out.shape == expected.shape and out.dtype == np.float16, (
        f"paged_attention_triton on the big cache: expected a float16 output of shape {expected.shape}, got "
        f"{getattr(out, 'dtype', type(out))} {getattr(out, 'shape', '')}")
    labkit.assert_close(out, expected, atol=TOL[torch.float16], axes=("head", "dim"), dtype=np.float16,
                        what="paged_attention_triton (cache past 2**31 elements: block ids multiplied by the block "
                             "stride in int32 wrap around)")
