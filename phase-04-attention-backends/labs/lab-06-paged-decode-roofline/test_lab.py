"""Lab 04-06: split-KV, grouped-query paged decode in Triton.

The tests follow the README's steps; each step's tests run before the next step exists:

1. ``paged_decode(..., num_splits=1)``: one program per (sequence, KV head), no reduce.
2. ``split_summaries``: each split's unnormalized (m, denom, acc), before any merge.
3. ``merge_splits`` on summaries built here, then ``paged_decode`` with several splits.
4. ``choose_num_splits``, then ``paged_decode`` with the count left to it.

Every expected value is a float64 brute force computed here, before the call under test
(``reference_decode``, ``reference_summaries``, ``make_summaries``), and every call must
leave its inputs unchanged. Unused cache slots and blocks hold poison (a huge value, NaN
or inf: ``labkit.POISON_KINDS``), and the table's padding entries point at a poisoned
block, so reading anything that is not a valid token shows. On a CPU the kernels run
through Triton's interpreter (float16/float32, tiny shapes); on a GPU the same tests run,
plus bfloat16. The check of a cache larger than 2**31 elements runs in a child process.

Past these examples, the API's whole contract (``labkit.contract``): the views engines pass (K and
V as halves of one pool, q a slice of qkv, tables cut from wider ones), groups up to every query
head on one KV head, lengths at every block and split edge, scores placed against the splits, split
counts past the reduce's chunk of 64, and a length past the table with the host check out of the
way (in a child process).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import labkit
from labkit import cases, require, triton_env
from labkit.testing import child, contract

torch, triton = triton_env.require_torch_and_triton()

pytestmark = pytest.mark.triton

DEVICE = triton_env.device()
ON_GPU = DEVICE == "cuda"
# The interpreter computes bfloat16 wrongly: bf16 only on a GPU.
DTYPES = [torch.float16, torch.float32] + ([torch.bfloat16] if ON_GPU else [])
# Inputs are rounded to the dtype before the reference sees them, so these bound only the
# kernel's own arithmetic: float32 accumulators everywhere; in float16/bfloat16 the
# probabilities are rounded to the input type before the P.V product (relative error 2**-11,
# 2**-8 on outputs of size ~1), in float32 the products run in IEEE float32.
ATOL = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 2e-2}
# Scores near +-1000: float32 holds them to ~6e-5 and a head_dim-long dot product adds a few
# such roundings even when computed right, so the softmax weights carry a relative error of
# ~1e-3 (and fp16 values of ~60 feed the dot). The bugs these tests catch give NaN or zeros.
EXTREME_ATOL = 2e-2
AXES = ("sequence", "head", "dim")
INPUTS = ("q", "k_cache", "v_cache", "block_tables", "seq_lens")


def dtype_id(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def expect_clear_error(call, fn: str, what: str) -> None:
    """``call()`` must raise a ValueError or TypeError naming ``fn`` (the given checks of
    ``_host.py``, called first)."""
    __tracebackhide__ = True
    labkit.assert_refused(call, fn, what=what, errors=(ValueError, TypeError),
                          hint="call the given check of _host.py first, before any kernel runs")


# --------------------------------------------------------------------------- cases and oracles


def make_case(seq_lens, *, num_heads=8, num_kv_heads=2, head_dim=64, block_size=16, dtype=torch.float32,
              seed=0, pad_columns=1, poison="huge", scores=None):
    """A poisoned paged cache for ``seq_lens``, on the device under test, as the tuple of
    ``paged_decode``'s arguments ``(q, k_cache, v_cache, block_tables, seq_lens)``.

    ``labkit.cases.decode_case`` draws it (on the CPU, in float32, then rounded to ``dtype``):
    the batch's blocks scattered over a shuffled pool with as many spare blocks again (the pool's
    last block among the longest sequence's), the table
    ``pad_columns`` columns wider than the longest sequence needs (0: the longest sequence fills
    its row), every padding entry pointing at a spare block. Every slot that holds no valid
    token is then poisoned with ``poison``. ``scores``: ``None`` (random, of order 1), ``"high"``
    (every score near +1000), ``"low"`` (near -1000) or ``"mixed"`` (near +1000 for a
    sequence's first half, near -1000 for its second).
    """
    spare = sum(cases.blocks_needed(n, block_size) for n in seq_lens) + 1
    case = cases.decode_case(seq_lens, num_heads=num_heads, num_kv_heads=num_kv_heads, head_dim=head_dim,
                             block_size=block_size, dtype=torch.float32, seed=seed, spare_blocks=spare,
                             pad_columns=pad_columns)
    q, k = case.q, case.k_cache
    if max(seq_lens) > 0:
        # The pool's last block holds the longest sequence's first tokens: a kernel that bounds its
        # reads one block short of the pool (as if the null block were not in it) is then wrong.
        tables, last = case.block_tables, k.shape[0] - 1
        first = int(tables[max(range(len(seq_lens)), key=lambda b: seq_lens[b]), 0])
        was_first, was_last = tables == first, tables == last
        tables[was_first], tables[was_last] = last, first
    if scores is not None:
        # q . k / sqrt(head_dim) = alpha (mu + noise . u) / sqrt(head_dim): near +-1000, spread of a few units.
        u = torch.nn.functional.normalize(torch.randn(num_kv_heads, head_dim, generator=torch.Generator().manual_seed(
            seed)), dim=1)
        alpha, mu = 2 * math.sqrt(head_dim), 500.0
        sign = -1.0 if scores == "low" else 1.0
        q = sign * alpha * u.repeat_interleave(num_heads // num_kv_heads, dim=0)[None] + 0.05 * q
        tables = case.block_tables.numpy()
        for b, n in enumerate(seq_lens):
            for t in range(n):
                flip = -1.0 if scores == "mixed" and t >= n // 2 else 1.0
                k[tables[b, t // block_size], t % block_size] += flip * mu * u
    case = cases.DecodeCase(q.to(dtype), k.to(dtype), case.v_cache.to(dtype), case.block_tables, case.seq_lens)
    case = case.to(DEVICE).poison(poison)
    return case.q, case.k_cache, case.v_cache, case.block_tables, case.seq_lens


def gather_tokens(cache, table, seq_len: int):
    """The first ``seq_len`` tokens of one sequence, ``[seq_len, num_kv_heads, head_dim]``, read
    through its table row: only valid tokens, so it also works on a cache too large to copy."""
    t = torch.arange(seq_len)
    blocks = table.cpu()[t // cache.shape[1]].long()
    return cache[blocks.to(cache.device), (t % cache.shape[1]).to(cache.device)]


def reference_decode(q, k_cache, v_cache, block_tables, seq_lens) -> np.ndarray:
    """The oracle: float64 softmax attention of each sequence over its valid tokens, query
    head ``h`` reading KV head ``h // (num_heads // num_kv_heads)``; zeros for no token."""
    out = np.zeros(q.shape)
    for b in range(q.shape[0]):
        n = int(seq_lens[b])
        out[b] = labkit.attention_f64(q[b], gather_tokens(k_cache, block_tables[b], n),
                                      gather_tokens(v_cache, block_tables[b], n))
    return out


def reference_summaries(q, k_cache, v_cache, block_tables, seq_lens, partition_size: int):
    """Each split's (m, denom, acc) in float64, as ``split_summaries`` must return them, and
    ``exists [batch, max_splits]``: which splits hold tokens (the only ones compared)."""
    batch, num_heads, head_dim = q.shape
    block_size, num_kv_heads = k_cache.shape[1], k_cache.shape[2]
    group = num_heads // num_kv_heads
    max_splits = math.ceil(block_tables.shape[1] * block_size / partition_size)
    m = np.full((batch, num_heads, max_splits), np.nan)
    denom = np.full((batch, num_heads, max_splits), np.nan)
    acc = np.full((batch, num_heads, max_splits, head_dim), np.nan)
    exists = np.zeros((batch, max_splits), dtype=bool)
    for b in range(batch):
        n = int(seq_lens[b])
        k = labkit.to_f64(gather_tokens(k_cache, block_tables[b], n))
        v = labkit.to_f64(gather_tokens(v_cache, block_tables[b], n))
        qb = labkit.to_f64(q[b])
        for s in range(math.ceil(n / partition_size)):
            exists[b, s] = True
            lo, hi = s * partition_size, min((s + 1) * partition_size, n)
            for h in range(num_heads):
                scores = k[lo:hi, h // group] @ qb[h] / math.sqrt(head_dim)
                m[b, h, s] = scores.max()
                weights = np.exp(scores - m[b, h, s])
                denom[b, h, s] = weights.sum()
                acc[b, h, s] = weights @ v[lo:hi, h // group]
    return m, denom, acc, exists


def assert_unchanged(before, after, names, what):
    """Bit for bit (NaN poison included): the function under test must not write its inputs."""
    for b, a, name in zip(before, after, names, strict=True):
        try:
            torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)
        except AssertionError as err:
            raise AssertionError(f"{what} modified its input {name}: {str(err).splitlines()[0]}") from None


def check(lab, case, num_splits=None, atol=None, what="paged_decode"):
    """Run ``paged_decode`` on ``case`` and compare with the float64 oracle (computed first):
    values, shape, dtype and device of the output, and the inputs left unchanged. The call runs
    with uninitialized memory filled with NaN (``labkit.uninitialized_memory_is_nan``), so that what the
    kernels leave unwritten shows every time (``labs grade`` carries the setting to the student's
    process for each call)."""
    q = case[0]
    expected = reference_decode(*case)
    before = [t.clone() for t in case]
    with labkit.uninitialized_memory_is_nan():  # an output row or a summary the kernels never write shows as NaN
        out = lab.paged_decode(*case, num_splits=num_splits)
    require(isinstance(out, torch.Tensor) and out.shape == q.shape and out.device == q.device,
            f"{what}: out must be a tensor shaped and placed like q {tuple(q.shape)} on {q.device}; "
            f"got {type(out).__name__} {tuple(getattr(out, 'shape', ()))} on {getattr(out, 'device', None)}")
    labkit.assert_close(out, expected, atol=atol or ATOL[q.dtype], axes=AXES, what=what, dtype=q.dtype)
    assert_unchanged(before, case, INPUTS, what)
    return out


# --------------------------------------------------------------------------- step 1: one split


@pytest.mark.parametrize("poison", labkit.POISON_KINDS)
@pytest.mark.parametrize("pad_columns", [0, 3], ids=["no_padding_column", "padding_columns"])
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_one_split_matches_reference(lab, dtype, pad_columns, poison):
    """Step 1. A ragged batch (lengths off the block grid, 0 and 1 included) with GQA 8/2,
    ``num_splits=1``: one program per (sequence, KV head) walks the whole sequence. Unused
    slots hold a huge value, NaN or inf, and the table has padding columns pointing at a
    poisoned block, or none (the longest sequence fills its row). Checks the output's dtype
    and that no input is modified. Catches tails read past seq_len (huge poison), a V tile
    loaded whole and multiplied by zero weights (only NaN/inf poison: 0 * huge is 0), wrong
    table indexing, a wrong scale, a running sum never rescaled, outputs written into
    another sequence's rows, an output of the wrong dtype, q scaled in place."""
    case = make_case([37, 1, 300, 16, 0, 50], dtype=dtype, pad_columns=pad_columns, poison=poison)
    check(lab, case, num_splits=1, what="paged_decode(num_splits=1)")


@pytest.mark.parametrize(
    "num_heads,num_kv_heads",
    [(4, 4), (8, 2), (10, 2), (28, 4), (16, 2), (32, 2), (34, 2), (64, 1)],
    ids=["mha", "gqa4", "gqa5", "gqa7", "gqa8", "gqa16", "gqa17", "mqa64"],
)
def test_gqa_grouping(lab, num_heads, num_kv_heads):
    """Step 1. Query heads 0..g-1 read KV head 0, g..2g-1 KV head 1, and so on, for group
    sizes 1, 4, 5, 7, 8, 16, 17 and 64. The checks accept any group (``num_heads`` a multiple
    of ``num_kv_heads``), so the largest is multi-query attention: 64 query heads on one KV
    head. 5, 7 and 17 are not powers of two: the group's rows are padded (to 16, or to 32 for
    17) for ``tl.dot``, and the padded rows must be neither read as heads nor written; 16 fills
    its tile exactly. Catches interleaved grouping (``h % num_kv_heads``), a head offset per
    KV head computed with the wrong group size, and a tile of 16 rows whatever the group
    (``group_pad_fixed_at_16``: the heads past the 16th are never computed)."""
    case = make_case([45, 20], num_heads=num_heads, num_kv_heads=num_kv_heads, seed=num_heads)
    check(lab, case, num_splits=1, what=f"paged_decode, {num_heads} q / {num_kv_heads} KV heads")


@pytest.mark.parametrize("block_size,head_dim", [(16, 64), (32, 128), (128, 64), (16, 16), (16, 256)])
def test_block_sizes_and_head_dims(lab, block_size, head_dim):
    """Step 1. Blocks of 16, 32 and 128 tokens (smaller and larger than a tile of tokens),
    head_dim 64 and 128, and the smallest and largest head_dim the checks accept (16, 256).
    Catches a tile that assumes one block per tile or block_size 16, a slot offset computed with
    the wrong stride."""
    case = make_case([block_size + 3, 2 * block_size + 7], head_dim=head_dim, block_size=block_size, seed=block_size)
    check(lab, case, num_splits=1, what=f"paged_decode, block_size {block_size}, head_dim {head_dim}")


@pytest.mark.parametrize("scores", ["high", "low"])
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_extreme_scores(lab, dtype, scores):
    """Step 1. Every score near +1000 ("high") or near -1000 ("low"), one split. exp must
    be taken of (score - running max), and the running max must start at -inf. Catches
    exponentials of raw scores (+1000 overflows: inf / inf) and a running max that starts
    at 0 (at -1000 every exp(score - 0) underflows to 0: zeros instead of the output)."""
    case = make_case([70, 33, 5], dtype=dtype, scores=scores, seed=11)
    check(lab, case, num_splits=1, atol=EXTREME_ATOL, what=f"paged_decode(num_splits=1), scores near "
          f"{'+' if scores == 'high' else '-'}1000")


def test_empty_and_one_token_sequences(lab):
    """Step 1. seq_len 0 gives zeros (not NaN from 0/0), seq_len 1 exactly that token's
    value row. Catches a final division with no guard for an empty key set."""
    case = make_case([0, 1, 0, 40], seed=3, poison="nan")
    check(lab, case, num_splits=1, what="paged_decode(num_splits=1)")


@pytest.mark.parametrize("num_splits", [1, 3], ids=["one_split", "three_splits"])
def test_new_output_is_written_where_fresh_memory_is_nan(lab, num_splits):
    """Steps 1 and 3. Every row of the output is written, an empty sequence's zeros included: the
    call runs with uninitialized memory filled with NaN (``labkit.uninitialized_memory_is_nan``), so a row
    the kernels never store shows as NaN every time, not only when the allocator hands back dirty
    memory (fresh pages are zero, which is the right answer for an empty sequence by luck). The
    scratch summaries are NaN too: the reduce must read only the splits that hold tokens (under
    ``labs grade`` as well: the grader carries the setting to the student's process for each call).
    Catches an early exit that skips split 0 as well
    (``one_split_exits_early``: with one split, a sequence of length 0 returns before its zeros are
    stored) and a reduce that returns early for a sequence with no split
    (``reduce_skips_empty_sequences``)."""
    case = make_case([0, 1, 0, 40, 0], seed=3, poison="nan")
    expected = reference_decode(*case)
    with labkit.uninitialized_memory_is_nan():
        out = lab.paged_decode(*case, num_splits=num_splits)
    require(isinstance(out, torch.Tensor) and out.shape == case[0].shape,
            f"paged_decode(num_splits={num_splits}): out must be a tensor shaped like q {tuple(case[0].shape)}, got "
            f"{type(out).__name__} {tuple(getattr(out, 'shape', ()))}")
    labkit.assert_close(out, expected, atol=ATOL[case[0].dtype], axes=AXES, dtype=case[0].dtype,
                        what=f"paged_decode(num_splits={num_splits}) on sequences [0, 1, 0, 40, 0], fresh memory NaN "
                             "(a NaN row of an empty sequence was never written: " + (
                                 "does the early exit skip split 0 too? with one split that program alone stores the "
                                 "sequence's zeros)" if num_splits == 1 else
                                 "does the reduce return early for a sequence with no split? it must store its zeros)"))


BAD_INPUTS = {
    "q is 2-D": lambda c: (c[0][0], *c[1:]),
    "heads not a multiple of kv heads": lambda c: (c[0][:, :3], *c[1:]),
    "block_tables int64": lambda c: (*c[:3], c[3].long(), c[4]),
    "block_tables of another batch": lambda c: (*c[:3], c[3][:1], c[4]),
    "seq_lens int64": lambda c: (*c[:4], c[4].long()),
    "seq_lens of another batch": lambda c: (*c[:4], c[4][:1]),
    "block_size 24": lambda c: (c[0], c[1].repeat(1, 2, 1, 1)[:, :24].contiguous(),
                                c[2].repeat(1, 2, 1, 1)[:, :24].contiguous(), c[3], c[4]),
    "v_cache of another dtype": lambda c: (c[0], c[1], c[2].double(), c[3], c[4]),
    "head_dim 48": lambda c: (c[0][..., :48], c[1][..., :48], c[2][..., :48], c[3], c[4]),
    "q's head_dim not the caches'": lambda c: (c[0][..., :32], *c[1:]),
    "v_cache of another shape": lambda c: (c[0], c[1], c[2][:-1], c[3], c[4]),
    "K and V with other strides": lambda c: (c[0], c[1], c[2].transpose(1, 2).contiguous().transpose(1, 2), *c[3:]),
    "q not a tensor": lambda c: (c[0].tolist(), *c[1:]),
    "no KV heads": lambda c: (c[0], c[1][:, :, :0], c[2][:, :, :0], *c[3:]),
    "seq_lens on another device": lambda c: (*c[:4], c[4].to("meta")),
}


@pytest.mark.parametrize(
    "name", list(BAD_INPUTS) + ["num_splits 0", "num_splits True"]
    + ([] if ON_GPU else ["seq_len past the table", "a negative seq_len"])
)
def test_bad_input_gets_a_clear_error(lab, name):
    """Step 1 (the checks are given: call them). Wrong shapes, dtypes and counts raise
    ValueError or TypeError naming paged_decode, before any kernel runs (never a Triton
    traceback or a silent wrong answer). seq_lens values are checked only on the CPU: on a
    GPU that check would cost a synchronization per call. Catches a check left out (int64
    seq_lens would be read as pairs of int32 by the kernel)."""
    case = make_case([20, 9], seed=5)
    args, num_splits = case, None
    if name == "num_splits 0":
        num_splits = 0
    elif name == "num_splits True":
        num_splits = True
    elif name == "seq_len past the table":
        args = (*case[:4], torch.tensor([20, 10_000], dtype=torch.int32, device=DEVICE))
    elif name == "a negative seq_len":
        args = (*case[:4], torch.tensor([20, -1], dtype=torch.int32, device=DEVICE))
    else:
        args = BAD_INPUTS[name](case)
    expect_clear_error(lambda: lab.paged_decode(*args, num_splits=num_splits), "paged_decode", f"paged_decode, {name}")


# --------------------------------------------------------------------------- the contract: layouts, lengths, scores


def unused_block(block_tables, seq_lens, block_size, num_blocks) -> int:
    """A block that holds no token of the batch (so it is poisoned): what a layout's filler points at."""
    used = {int(block_tables[b, j]) for b, n in enumerate(seq_lens) for j in range(cases.blocks_needed(n, block_size))}
    return min(set(range(num_blocks)) - used)


def lay_out(case, seq_lens, *, cache="contiguous", q="contiguous", table="contiguous"):
    """``case`` with its caches, q and block table laid out as ``labkit.testing.contract``'s layouts
    of those ids say (views into larger buffers, poison beside them); returns the new case and the
    layouts' descriptions joined, for the failure message."""
    q_, k_cache, v_cache, tables, lens = case
    filler = unused_block(tables.cpu(), seq_lens, k_cache.shape[1], k_cache.shape[0])
    layouts = (contract.CACHE_LAYOUTS[cache], contract.Q_LAYOUTS[q], contract.TABLE_LAYOUTS[table])
    k_cache, v_cache = layouts[0].apply(k_cache, v_cache)
    q_ = layouts[1].apply(q_, k_cache.shape[2])
    tables = layouts[2].apply(tables, filler)
    return (q_, k_cache, v_cache, tables, lens), ", ".join(x.describe for x in layouts if "contiguous " not in
                                                           x.describe) or "contiguous tensors"


# One layout at a time (the others contiguous), then every one at once, as an engine's step may pass them.
LAYOUT_CASES = {
    **{name: {"cache": name} for name in contract.CACHE_LAYOUTS if name != "contiguous"},
    **{name: {"q": name} for name in contract.Q_LAYOUTS if name != "contiguous"},
    **{name: {"table": name} for name in contract.TABLE_LAYOUTS if name != "contiguous"},
    "all_at_once": {"cache": "kv_pool_views", "q": "q_slice_of_qkv", "table": "table_column_slice"},
}


@pytest.mark.parametrize("num_splits", [1, 3], ids=["one_split", "three_splits"])
@pytest.mark.parametrize("layout", LAYOUT_CASES)
def test_memory_layouts_engines_pass(lab, layout, num_splits):
    """Steps 1 and 3. The API takes any tensors of the documented shapes, and engines pass views:
    K and V as the two halves ``kv[:, 0]``, ``kv[:, 1]`` of one fused pool (block stride twice a
    block), a pool stored heads-outside-slots, ``q`` as a slice of the fused ``qkv`` projection
    (row stride past ``num_heads * head_dim``), a block table cut from a wider one or every other
    row of a taller one. The memory beside each view is poison. With one split and with three.
    Catches offsets computed as if a tensor were contiguous: cache offsets from the shape instead
    of the strides (``offsets_as_if_contiguous``), q or the table indexed as if contiguous
    without ``.contiguous()`` on the host (``q_assumed_contiguous``, ``table_assumed_contiguous``)."""
    seq_lens = [37, 0, 70]
    case = make_case(seq_lens, num_heads=4, num_kv_heads=2, seed=31, poison="nan")
    case, described = lay_out(case, seq_lens, **LAYOUT_CASES[layout])
    check(lab, case, num_splits=num_splits, what=f"paged_decode(num_splits={num_splits}) with {described}")


def seq_lens_every_other_entry(case):
    """``seq_lens`` as entries 0, 2, 4... of a buffer twice as long (this step's sequences among a
    persistent batch's); the entries between hold the table's capacity, so a kernel that reads the
    lengths as contiguous walks whole rows, into their poisoned padding."""
    q, k_cache, v_cache, tables, lens = case
    buffer = torch.full((2 * lens.shape[0],), tables.shape[1] * k_cache.shape[1], dtype=lens.dtype, device=DEVICE)
    buffer[::2] = lens
    return q, k_cache, v_cache, tables, buffer[::2]


def q_stored_heads_major(case):
    """``q`` stored ``[num_heads, batch, head_dim]`` and viewed as ``[batch, num_heads, head_dim]``: dense
    but not contiguous (``torch.empty_like`` keeps such strides; it makes a slice of qkv contiguous)."""
    q, *rest = case
    return (q.transpose(0, 1).contiguous().transpose(0, 1), *rest)


# Views that LAYOUT_CASES leave out: seq_lens strided, and a q that is dense but permuted.
OTHER_VIEWS = {
    "seq_lens_every_other_entry": (seq_lens_every_other_entry, "seq_lens as buffer[::2], the entries between "
                                   "holding the table's capacity (seq_lens handed to a kernel without .contiguous()?)"),
    "q_stored_heads_major": (q_stored_heads_major, "q stored [num_heads, batch, head_dim] and transposed (an output "
                             "made with torch.empty_like(q) keeps those strides: the kernel writes it as contiguous)"),
}


@pytest.mark.parametrize("num_splits", [1, 3], ids=["one_split", "three_splits"])
@pytest.mark.parametrize("view", OTHER_VIEWS)
def test_seq_lens_and_q_as_other_views(lab, view, num_splits):
    """Steps 1 and 3. ``seq_lens`` may be a view too (every other entry of a longer buffer, whose
    entries between hold the table's capacity), and ``q`` any strides, a dense permuted view included
    (stored heads-major, then transposed). With one split and with three. Catches lengths read as if
    contiguous (``seq_lens_assumed_contiguous``) and an output allocated with ``torch.empty_like(q)``,
    which keeps q's permuted strides while the kernel writes contiguous rows
    (``output_keeps_q_strides``)."""
    make_view, described = OTHER_VIEWS[view]
    case = make_view(make_case([37, 0, 70], num_heads=4, num_kv_heads=2, seed=33, poison="nan"))
    check(lab, case, num_splits=num_splits, what=f"paged_decode(num_splits={num_splits}) with {described}")


def named_lengths(named: dict) -> str:
    return ", ".join(f"[{b}] {n} ({name})" for b, (name, n) in enumerate(named.items()))


@pytest.mark.parametrize("num_splits", [1, 3])
def test_lengths_at_every_boundary(lab, num_splits):
    """Steps 1 and 3. One batch whose lengths sit at every edge: 0, 1, each side of a block of 16,
    each side of a split's partition (48 tokens for 3 splits of a table of 112; a tile of 32 for
    one split), a length that is a whole number of neither, and the full table (no padding
    column). Catches boundaries off by one anywhere: a tail mask at the block's end, a
    split that stops a block short or starts one late, a last partial split dropped."""
    block_size, capacity = 16, 112
    segment = 32 if num_splits == 1 else cases.blocks_needed(math.ceil(capacity / num_splits), block_size) * block_size
    named = contract.boundary_lengths(block_size, segment=segment, capacity=capacity)
    case = make_case(list(named.values()), num_heads=2, num_kv_heads=1, seed=num_splits, pad_columns=0, poison="nan")
    check(lab, case, num_splits=num_splits,
          what=f"paged_decode(num_splits={num_splits}), sequences {named_lengths(named)}")


def steered_case(seq_lens, pattern, segment, *, seed, **kwargs):
    """``make_case`` with its scores moved to ``pattern`` (``labkit.testing.contract.SCORE_PATTERNS``),
    in float32 before any rounding, then poisoned."""
    case = make_case(seq_lens, seed=seed, poison="huge", dtype=torch.float32, **kwargs)
    q, k_cache, v_cache, tables, lens = (t.cpu() for t in case)
    levels = [contract.score_levels(pattern, n, segment, b) for b, n in enumerate(seq_lens)]
    contract.steer_scores(q, k_cache, tables, seq_lens, levels, seed=seed)
    poisoned = cases.DecodeCase(q, k_cache, v_cache, tables, lens).poison("nan")  # steering moved poisoned keys
    return tuple(t.to(DEVICE) for t in (poisoned.q, poisoned.k_cache, poisoned.v_cache, tables, lens))


# Every pattern with four splits; with one, those that test_extreme_scores does not already cover.
PATTERN_CASES = [(p, 4) for p in contract.SCORE_PATTERNS] + [(p, 1) for p in contract.SCORE_PATTERNS
                                                             if not p.startswith("flat")]


@pytest.mark.parametrize("pattern,num_splits", PATTERN_CASES,
                         ids=[f"{p.replace(' ', '_')}-{'one_split' if n == 1 else 'four_splits'}"
                              for p, n in PATTERN_CASES])
def test_score_patterns_across_splits(lab, pattern, num_splits):
    """Steps 1 and 3. Scores placed against the algorithm's boundaries (``SCORE_PATTERNS`` of
    ``labkit.testing.contract``, the segment being a split's partition of 32 tokens, or a tile
    of 32 with one split): flat near +1000 or -1000 (with four splits, the shorter sequences'
    last splits hold no token at all), one key 100 above the rest in the first or the last split, the mass
    clustered in a middle split, the first split near -1000 and the rest near 0, neighbours of
    the batch at +1000 and -1000. Catches a merge whose max is the first split's
    (``reduce_max_from_first_split``: exp(+100) overflows), a running max replaced by each tile's
    own max (``running_max_is_tile_max``), absent splits loaded with ``m = 0``
    instead of -inf (``absent_splits_max_zero``: near -1000 every real weight underflows), a max
    that starts at 0, exponentials of raw scores."""
    seq_lens, segment = [100, 45, 20], 32  # a table of 8 blocks of 16: four splits of 32 tokens
    case = steered_case(seq_lens, pattern, segment, seed=41, num_heads=2, num_kv_heads=1, pad_columns=1)
    check(lab, case, num_splits=num_splits, atol=EXTREME_ATOL,
          what=f"paged_decode(num_splits={num_splits}), scores {pattern} ({contract.SCORE_PATTERNS[pattern]})")


@pytest.mark.skipif(ON_GPU, reason="block ids are checked on the host only for CPU tensors (on a GPU it would "
                    "cost a synchronization per call)")
@pytest.mark.parametrize("bad_id,row,column", [(-1, 0, 1), ("num_blocks", 0, 1), (-1, 1, 0)],
                         ids=["-1 in block 1 of 20 tokens", "num_blocks in block 1 of 20 tokens",
                              "-1 in the one block of 1 token"])
def test_a_block_id_outside_the_pool_in_a_sequences_last_block_is_refused(lab, bad_id, row, column):
    """Step 1 (the checks are given: call them). An id outside the pool among a sequence's own blocks,
    in its last, partly filled block (20 tokens: blocks 0 and 1 of 16; 1 token: block 0), raises a
    ValueError naming paged_decode before any kernel runs, where the kernel would read outside the
    cache."""
    q, k_cache, v_cache, block_tables, seq_lens = make_case([20, 1], seed=5)
    tables = block_tables.clone()
    tables[row, column] = -1 if bad_id == -1 else k_cache.shape[0]
    expect_clear_error(lambda: lab.paged_decode(q, k_cache, v_cache, tables, seq_lens), "paged_decode",
                       f"paged_decode, block id {int(tables[row, column])} in sequence {row}'s last block")


def check_child_outputs(out, expected, num_splits_list, dtype, what: str, why: str) -> None:
    """A child's answer: one output of ``dtype`` a count of ``num_splits_list``, each ``expected``."""
    __tracebackhide__ = True
    np_dtype = {torch.float16: np.float16, torch.float32: np.float32}[dtype]
    shape = (len(num_splits_list), *expected.shape)
    require(isinstance(out, np.ndarray) and out.shape == shape and out.dtype == np_dtype,
            f"paged_decode {what}: expected {np.dtype(np_dtype).name} outputs of shape {expected.shape} (one per "
            f"num_splits in {num_splits_list}), got {getattr(out, 'dtype', type(out))} {getattr(out, 'shape', '')}")
    for num_splits, got in zip(num_splits_list, out, strict=True):
        labkit.assert_close(got, expected, atol=ATOL[dtype], axes=AXES,
                            what=f"paged_decode(num_splits={num_splits}) {what} ({why})")


# The promise "the kernels never read past the block table" is checked in a child process
# (_past_the_table_child.py): on a CPU the given check refuses a seq_len past the table before any
# kernel runs, and only the child, which runs the implementation itself, may take that check out of
# the way (the test process of `labs grade` holds a stand-in, not the student's module).
PAST_THE_TABLE_CHILD = Path(__file__).with_name("_past_the_table_child.py")


def test_never_reads_past_the_block_table(lab):
    """Steps 1 and 3. With the host's check of ``seq_lens`` out of the way (as on a GPU, where it is
    never made), a sequence claiming 53 tokens more than its table of 7 blocks holds is read as the
    full table and no further: the kernels cut each length to ``max_blocks * block_size``. The next
    row of the table points at a block of NaN, so a kernel that trusts ``seq_lens`` and walks on
    into it answers NaN. One split, three (their partitions of 48 tokens overrun the table's 112),
    and the chosen count. Catches a partition kernel or a reduce that trusts ``seq_lens``
    (``trusts_seq_lens``)."""
    out = child.run(PAST_THE_TABLE_CHILD, timeout=300, failed=(
        "paged_decode with a seq_len past its block table (the host's check of the lengths taken out of the way, "
        "as on a GPU) failed: the kernels must cut each length to max_blocks * block_size (do both kernels call "
        "the given checks by the names the starter imports?)"))
    past = child.script_module(PAST_THE_TABLE_CHILD)
    q, k_cache, v_cache, block_tables, seq_lens = past.inputs(torch)
    capacity = block_tables.shape[1] * k_cache.shape[1]
    expected = reference_decode(q, k_cache, v_cache, block_tables, seq_lens.clamp(max=capacity))
    check_child_outputs(out, expected, past.NUM_SPLITS, torch.float32,
                        f"with seq_lens {past.SEQ_LENS} and a table of {capacity} tokens",
                        "sequence 0 must stop at the table's end: the next row of the table points at NaN")


def test_table_entries_past_a_sequence_are_never_used(lab):
    """Steps 1 and 3. A row of the table holds a sequence's blocks, then padding that an engine does
    not clean: here the padding holds ids no pool has (-1, 2**31 - 1), and the answer is the same
    (the given check accepts them: it checks a sequence's own blocks only). Run in the child process
    with the argument ``padding``: a kernel that uses such an id reads outside the cache, which can
    crash the process. Catches block ids and keys loaded without the token mask, trusting the
    scores' mask to hide what the tile's tokens past ``seq_len`` read (``k_read_through_padding_ids``)."""
    out = child.run(PAST_THE_TABLE_CHILD, "padding", timeout=300, failed=(
        "paged_decode with ids outside the pool in the table's padding (past each sequence's blocks) failed: "
        "a kernel must never use the table entry of a token past seq_len (load the block ids, and K and V, "
        "under the token mask)"))
    past = child.script_module(PAST_THE_TABLE_CHILD)
    expected = reference_decode(*past.inputs(torch, padding=True))
    check_child_outputs(out, expected, past.NUM_SPLITS, torch.float32,
                        f"with seq_lens {past.PADDING_SEQ_LENS} and ids {past.OUTSIDE_IDS} past each sequence's blocks",
                        "an id past seq_len must never be used")


# --------------------------------------------------------------------------- step 2: split summaries


def check_summaries(lab, case, num_splits, what):
    q, k_cache, _, block_tables, _ = case
    capacity = block_tables.shape[1] * k_cache.shape[1]
    # The README's rule for a forced count: ceil(capacity / n) tokens, rounded up to whole blocks.
    partition = cases.blocks_needed(math.ceil(capacity / num_splits), k_cache.shape[1]) * k_cache.shape[1]
    m_ref, denom_ref, acc_ref, exists = reference_summaries(*case, partition)
    before = [t.clone() for t in case]
    m, denom, acc, partition_size = lab.split_summaries(*case, num_splits=num_splits)
    require(partition_size == partition,
            f"{what}: partition_size {partition_size!r}, expected ceil({capacity} / {num_splits}) rounded up to whole "
            f"blocks of {k_cache.shape[1]} = {partition} (the given _partition_size)")
    max_splits = m_ref.shape[2]
    for name, t, shape in [("m", m, m_ref.shape), ("denom", denom, m_ref.shape), ("acc", acc, acc_ref.shape)]:
        require(isinstance(t, torch.Tensor) and tuple(t.shape) == shape,
                f"{what}: {name} must be a tensor [batch, num_heads, max_splits={max_splits}"
                + (", head_dim]" if name == "acc" else "]") + f" = {shape}, got {type(t).__name__} "
                f"{tuple(getattr(t, 'shape', ()))}")
        labkit.assert_dtype(t, torch.float32, what=f"{what}: {name}")
    # Only the splits that hold tokens are specified; compare those, (sequence, head, split) at a time.
    pick = np.broadcast_to(exists[:, None, :], m_ref.shape)
    axes = ("entry",)
    # m: the largest score, float32 arithmetic on the rounded inputs (|score| < 10 here).
    labkit.assert_close(labkit.to_f64(m)[pick], m_ref[pick], atol=1e-4, axes=axes, what=f"{what}: m")
    # denom: a sum of exp(score - m) over <= partition terms, each in (0, 1]: float32 relative error.
    labkit.assert_close(labkit.to_f64(denom)[pick], denom_ref[pick], atol=0, rtol=1e-4, axes=axes,
                        what=f"{what}: denom")
    # acc compared as acc / denom (a split's own attention output, of order 1): same bound as the output.
    labkit.assert_close((labkit.to_f64(acc) / denom_ref[..., None])[pick], (acc_ref / denom_ref[..., None])[pick],
                        atol=ATOL[q.dtype], axes=axes + ("dim",), what=f"{what}: acc / denom")
    assert_unchanged(before, case, INPUTS, what)


@pytest.mark.parametrize("poison", labkit.POISON_KINDS)
@pytest.mark.parametrize("num_splits", [2, 3, 5, 9])
def test_split_summaries_match_reference(lab, num_splits, poison):
    """Step 2. Forced split counts up to more splits than the table has blocks (capacity 6
    blocks): the partition size, the summaries' shapes and float32 dtype, and each split's
    (m, denom, acc) against the float64 brute force over exactly that split's tokens,
    unnormalized. Catches a split range off by a block, a summary divided by its denom
    before the merge, a split that starts at the wrong token, a partition rounded to
    something other than whole blocks."""
    case = make_case([80, 33, 5, 70], num_heads=4, num_kv_heads=2, seed=num_splits, poison=poison)
    check_summaries(lab, case, num_splits, what=f"split_summaries(num_splits={num_splits})")


def test_partition_size_rounds_up_to_whole_blocks(lab):
    """Step 2 (the partition arithmetic is given: ``_partition_size``). A table of 18 blocks cut 17
    ways: ``ceil(288 / 17) = 17`` tokens, rounded up to two blocks (32), not down to one. Catches a
    partition computed with a floor division (``partition_floor_division``: 16 tokens, and the splits
    past the ninth land beyond the table)."""
    case = make_case([280, 7], num_heads=4, num_kv_heads=2, pad_columns=0, seed=17, poison="nan")
    require(case[3].shape[1] == 18, "the case must have a table of 18 blocks")
    check_summaries(lab, case, 17, what="split_summaries(num_splits=17) on a table of 18 blocks")


def test_split_count_stays_within_a_cuda_grid(lab):
    """Step 2 (given: ``_partition_size``). A table of 65,536 blocks of 16 tokens (1,048,576) cut a
    million ways on an empty batch (nothing to launch, so this is cheap anywhere): the partitions
    are whole blocks and there are at most 65,535 of them, CUDA's limit on a grid's third
    dimension, where the splits are laid out. Catches a partition that ignores the limit
    (``grid_splits_uncapped``: 65,536 splits, a launch a GPU refuses)."""
    q, k_cache, v_cache, _, _ = make_case([5], num_heads=4, num_kv_heads=2, seed=18)
    tables = torch.zeros((0, 65536), dtype=torch.int32, device=DEVICE)
    lens = torch.zeros((0,), dtype=torch.int32, device=DEVICE)
    m, denom, acc, partition_size = lab.split_summaries(q[:0], k_cache, v_cache, tables, lens, num_splits=10**6)
    capacity, block_size = 65536 * 16, k_cache.shape[1]
    require(isinstance(partition_size, int) and partition_size % block_size == 0
            and partition_size >= math.ceil(capacity / 10**6),
            f"split_summaries(num_splits=10**6) on a table of {capacity} tokens: partition_size {partition_size!r}, "
            f"expected whole blocks of {block_size}, at least ceil({capacity} / 10**6) tokens")
    max_splits = math.ceil(capacity / partition_size)
    require(max_splits <= 65535, f"split_summaries(num_splits=10**6) on a table of {capacity} tokens: partition_size "
            f"{partition_size} makes {max_splits} splits, more than a CUDA grid dimension holds (65,535): the "
            "partition must grow to ceil(capacity / 65535) tokens at least (the given _partition_size does it)")
    require(tuple(m.shape) == (0, 4, max_splits) and tuple(acc.shape) == (0, 4, max_splits, k_cache.shape[-1]),
            f"split_summaries on an empty batch: m {tuple(m.shape)} and acc {tuple(acc.shape)}, expected "
            f"{(0, 4, max_splits)} and {(0, 4, max_splits, k_cache.shape[-1])}")


SPLIT_SUMMARIES_REFUSES = {
    "num_splits None": lambda c: (c, None),  # paged_decode's default: split_summaries needs a count
    "num_splits 0": lambda c: (c, 0),
    "q is 2-D": lambda c: ((c[0][0], *c[1:]), 2),
    "seq_lens int64": lambda c: ((*c[:4], c[4].long()), 2),
}


@pytest.mark.parametrize("name", list(SPLIT_SUMMARIES_REFUSES))
def test_split_summaries_bad_input_gets_a_clear_error(lab, name):
    """Step 2 (the checks are given: call them with ``none_ok=False``). ``split_summaries`` takes a
    count, an int >= 1: ``None``, which ``paged_decode`` accepts, and bad shapes or dtypes raise
    ValueError or TypeError naming split_summaries, before any kernel runs. Catches split_summaries
    without the given check (``split_summaries_unchecked``) or with paged_decode's (None let through)."""
    args, num_splits = SPLIT_SUMMARIES_REFUSES[name](make_case([20, 9], seed=6))
    expect_clear_error(lambda: lab.split_summaries(*args, num_splits=num_splits), "split_summaries",
                       f"split_summaries, {name}")


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_split_summaries_dtypes(lab, dtype):
    """Step 2. The summaries are float32 whatever the cache's dtype, and match in float16
    (bfloat16 on a GPU) too. Catches summaries stored in the input dtype."""
    case = make_case([100, 47, 0], dtype=dtype, seed=21)
    check_summaries(lab, case, 3, what=f"split_summaries({dtype_id(dtype)})")


# --------------------------------------------------------------------------- step 3: merge, then splits end to end


def make_summaries(seq_lens, partition_size, *, num_heads=4, head_dim=32, max_splits=None, level=0.0, seed=0,
                   poison="huge"):
    """Summaries such as ``split_summaries`` returns, built in float64 (no kernel), and the
    merged output they must give, computed from them first.

    Splits past a sequence's ``ceil(seq_len / partition_size)`` hold ``poison``. ``m`` is
    ``level`` plus a spread of a few units; ``level="mixed"`` gives +1000 to even splits and
    -1000 to odd ones. Returns ``(m, denom, acc, expected)``, float32 torch tensors on the
    device and the float64 expectation.
    """
    rng = np.random.default_rng(seed)
    batch = len(seq_lens)
    counts = np.array([math.ceil(n / partition_size) for n in seq_lens])
    max_splits = max_splits or max(int(counts.max()), 1)
    shape = (batch, num_heads, max_splits)
    exists = np.arange(max_splits)[None, :] < counts[:, None]
    if level == "mixed":
        level = np.where(np.arange(max_splits) % 2 == 0, 1000.0, -1000.0)
    m = level + 3.0 * rng.standard_normal(shape)
    denom = rng.uniform(1.0, partition_size, shape)  # a sum of exp(s - m) over the split's tokens
    acc = denom[..., None] * rng.standard_normal((*shape, head_dim))  # denom times an output of order 1
    # The kernel sees float32: the expectation is computed from the rounded values.
    m, denom, acc = (x.astype(np.float32).astype(np.float64) for x in (m, denom, acc))
    expected = np.zeros((batch, num_heads, head_dim))
    for b in range(batch):
        s = exists[b]
        for h in range(num_heads):
            if s.any():
                w = np.exp(m[b, h, s] - m[b, h, s].max())
                expected[b, h] = w @ acc[b, h, s] / (w @ denom[b, h, s])
    unused = ~np.broadcast_to(exists[:, None, :], shape)
    for x in (m, denom, acc):
        x[unused] = labkit.poison_value(np.float32, poison)
    to = lambda x: torch.from_numpy(x).to(DEVICE, torch.float32)  # noqa: E731
    return to(m), to(denom), to(acc), expected


def check_merge(lab, summaries, seq_lens, partition_size, out_dtype, what, atol=None):
    m, denom, acc, expected = summaries
    lens = torch.tensor(seq_lens, dtype=torch.int32, device=DEVICE)
    before = [t.clone() for t in (m, denom, acc, lens)]
    with labkit.uninitialized_memory_is_nan():  # an output row the reduce never writes shows as NaN
        out = lab.merge_splits(m, denom, acc, lens, partition_size, out_dtype)
    require(isinstance(out, torch.Tensor) and tuple(out.shape) == expected.shape and out.device == m.device,
            f"{what}: out must be a tensor [batch, num_heads, head_dim] = {expected.shape} on {m.device}, "
            f"got {type(out).__name__} {tuple(getattr(out, 'shape', ()))} on {getattr(out, 'device', None)}")
    # float32: the merge's own float32 arithmetic; float16: one rounding of outputs below 8 (2**-9 / 2).
    atol = atol or {torch.float32: 1e-4, torch.float16: 3e-3, torch.bfloat16: 2e-2}[out_dtype]
    labkit.assert_close(out, expected, atol=atol, axes=AXES, what=what, dtype=out_dtype)
    assert_unchanged(before, (m, denom, acc, lens), ("m", "denom", "acc", "seq_lens"), what)


@pytest.mark.parametrize("poison", labkit.POISON_KINDS)
@pytest.mark.parametrize("out_dtype", DTYPES, ids=dtype_id)
def test_merge_splits_matches_reference(lab, out_dtype, poison):
    """Step 3. Summaries built here (no partition kernel): sequences with 0, 1, 2, 3 and 5
    splits of a grid of 6, the splits past each sequence's last poisoned with a huge value,
    NaN or inf. The merged output, in the dtype asked for, against the float64 merge.
    Catches a reduce that forgets to rescale each summary to the shared max, one that
    averages normalized outputs, one that reads every split of the grid (poison), one that
    drops the last partial split, 0/0 for an empty sequence, an output of the wrong dtype."""
    seq_lens, partition = [0, 10, 32, 33, 65, 80], 16
    summaries = make_summaries(seq_lens, partition, max_splits=6, seed=1, poison=poison)
    check_merge(lab, summaries, seq_lens, partition, out_dtype, what=f"merge_splits(.., {dtype_id(out_dtype)})")


@pytest.mark.parametrize("head_dim", [16, 128, 256])
def test_merge_splits_every_head_dim(lab, head_dim):
    """Step 3. The merge takes summaries of every head_dim ``paged_decode`` does, 16 to 256. Catches
    a check or a kernel that refuses or mishandles one of them (``summaries_head_dims_mistyped``)."""
    seq_lens, partition = [0, 20, 40], 16
    summaries = make_summaries(seq_lens, partition, head_dim=head_dim, max_splits=3, seed=head_dim, poison="nan")
    check_merge(lab, summaries, seq_lens, partition, torch.float32, what=f"merge_splits at head_dim {head_dim}")


@pytest.mark.parametrize("level", [1000.0, -1000.0, "mixed"], ids=["high", "low", "mixed"])
def test_merge_splits_extreme_maxima(lab, level):
    """Step 3. Split maxima near +1000, near -1000, or +1000 and -1000 in alternate splits.
    Catches a merge that exponentiates raw maxima (+1000 overflows), one whose running max
    starts at 0 (at -1000 every weight underflows: zeros), one that rescales with the wrong
    sign."""
    seq_lens, partition = [64, 48, 16, 0], 16
    summaries = make_summaries(seq_lens, partition, level=level, seed=2)
    check_merge(lab, summaries, seq_lens, partition, torch.float32, what=f"merge_splits, maxima near {level}")


@pytest.mark.parametrize("int_type", [np.int64, np.int32], ids=["int64", "int32"])
def test_counts_may_be_numpy_integers(lab, int_type):
    """Steps 1-3. A split count or a partition size read out of a numpy array is an int, as the
    docstrings mean it: ``paged_decode`` and ``split_summaries`` with ``num_splits=np.int64(3)``, and
    ``merge_splits`` with ``partition_size=np.int64(16)`` (and int32), give the float64 brute force's
    answers, as they do for Python ints.

    Catches: a count check written ``isinstance(n, int)`` (``counts_checked_as_python_ints``), which
    refuses a numpy integer with a ValueError about a valid count."""
    n = int_type
    what = f"as a np.{n.__name__} (numpy integers are integers)"
    case = make_case([80, 33, 5, 70], num_heads=4, num_kv_heads=2, seed=3, poison="nan")
    seq_lens, partition = [0, 10, 32, 33, 65, 80], 16
    summaries = make_summaries(seq_lens, partition, max_splits=6, seed=1, poison="nan")  # expectation built first
    try:
        check(lab, case, num_splits=n(1), what=f"paged_decode, num_splits=1 {what}")
        check(lab, case, num_splits=n(3), what=f"paged_decode, num_splits=3 {what}")
        check_summaries(lab, case, n(3), what=f"split_summaries, num_splits=3 {what}")
        check_merge(lab, summaries, seq_lens, n(partition), torch.float32,
                    what=f"merge_splits, partition_size={partition} {what}")
    except ValueError as err:
        raise AssertionError(f"a count {what} was refused: {err}") from None


def test_merge_splits_more_splits_than_one_tile(lab):
    """Step 3. 150 splits in the grid, sequences using 150, 70, 64, 65 and 1 of them: more than
    one tile of splits (the reduce merges them in chunks, with the same rule between chunks).
    Catches a reduce that reads only its first chunk, and chunks merged without rescaling."""
    seq_lens, partition = [150 * 16, 70 * 16, 64 * 16, 64 * 16 + 1, 5], 16
    summaries = make_summaries(seq_lens, partition, num_heads=2, head_dim=16, max_splits=150, seed=3, poison="nan")
    check_merge(lab, summaries, seq_lens, partition, torch.float32, what="merge_splits, 150 splits")


def summaries_as_views(summaries, extra_splits: int = 3):
    """``m``, ``denom`` and ``acc`` as views ``[:, :, :max_splits]`` of scratch buffers ``extra_splits``
    splits wider (sized for the most splits a step can have, cut to this call's), NaN past the cut."""
    def cut(x):
        scratch = torch.full((*x.shape[:2], x.shape[2] + extra_splits, *x.shape[3:]), float("nan"), dtype=x.dtype,
                             device=x.device)
        scratch[:, :, :x.shape[2]] = x
        return scratch[:, :, :x.shape[2]]
    m, denom, acc, expected = summaries
    return cut(m), cut(denom), cut(acc), expected


def test_merge_splits_summaries_as_views(lab):
    """Step 3. The summaries may be views: the first ``max_splits`` splits of scratch buffers three
    splits wider, NaN past the cut, so each (sequence, head)'s row lies further on than
    ``max_splits``. Catches summaries read as if contiguous, handed to the reduce without
    ``.contiguous()`` (``summaries_assumed_contiguous``)."""
    seq_lens, partition = [0, 20, 40, 33], 16
    summaries = summaries_as_views(make_summaries(seq_lens, partition, max_splits=3, seed=5, poison="nan"))
    check_merge(lab, summaries, seq_lens, partition, torch.float32,
                what="merge_splits on m, denom, acc as views scratch[:, :, :max_splits] of wider buffers, NaN past "
                     "the cut (summaries handed to the reduce without .contiguous()?)")


BAD_SUMMARIES = {
    "m float16": lambda s: (s[0].half(), *s[1:]),
    "acc 3-D": lambda s: (*s[:2], s[2][..., 0], *s[3:]),
    "denom of another shape": lambda s: (s[0], s[1][:, :, :1], *s[2:]),
    "seq_lens int64": lambda s: (*s[:3], s[3].long(), *s[4:]),
    "seq_lens of another batch": lambda s: (*s[:3], s[3][:1], *s[4:]),
    "partition_size 0": lambda s: (*s[:4], 0, s[5]),
    "partition_size 16.0 (a float)": lambda s: (*s[:4], 16.0, s[5]),
    "out_dtype int32": lambda s: (*s[:5], torch.int32),
    "m not a tensor": lambda s: (s[0].tolist(), *s[1:]),
    "acc of head_dim 24": lambda s: (*s[:2], s[2][..., :24], *s[3:]),
}
if not ON_GPU:  # lengths are checked on the host only for CPU tensors
    BAD_SUMMARIES["seq_len past max_splits * partition_size"] = lambda s: (
        *s[:3], torch.tensor([20, 10_000], dtype=torch.int32, device=DEVICE), *s[4:])
    BAD_SUMMARIES["a negative seq_len"] = lambda s: (*s[:3], torch.tensor([20, -1], dtype=torch.int32,
                                                                          device=DEVICE), *s[4:])


@pytest.mark.parametrize("name", list(BAD_SUMMARIES))
def test_merge_splits_bad_input_gets_a_clear_error(lab, name):
    """Step 3 (the checks are given: call them). Wrong shapes, dtypes and counts raise
    ValueError or TypeError naming merge_splits before any kernel runs. Catches a check
    left out (partition_size 0 would divide by zero inside the kernel)."""
    m, denom, acc, _ = make_summaries([20, 9], 16, seed=4)
    args = (m, denom, acc, torch.tensor([20, 9], dtype=torch.int32, device=DEVICE), 16, torch.float32)
    expect_clear_error(lambda: lab.merge_splits(*BAD_SUMMARIES[name](args)), "merge_splits", f"merge_splits, {name}")


@pytest.mark.parametrize("num_splits", [1, 2, 3, 5, 9])
def test_every_split_count_gives_the_same_answer(lab, num_splits):
    """Step 3. Forced split counts from 1 (no split) to more splits than the table has blocks
    (capacity 6 blocks), end to end. Splitting is exact, so each count must match the
    unsplit reference to float32 rounding. Catches everything the two kernels can get wrong
    between them: split ends off by a block, summaries normalized before the merge, a
    reduce that does not rescale, or drops the last partial split."""
    case = make_case([80, 33, 5, 70], num_kv_heads=2, num_heads=4, seed=num_splits, poison="nan")
    check(lab, case, num_splits=num_splits, what=f"paged_decode(num_splits={num_splits})")


def test_split_counts_past_one_merge_chunk(lab):
    """Step 3, end to end. The reduce merges ``SPLIT_TILE`` (64) splits per step: a table of 130
    blocks split 130 ways, 130 splits of one block, two chunks and a part (no whole number of
    chunks). A sequence of 2080 tokens (the full table) and one of 5 (one split); each sequence's
    largest score sits in its last split, 100 above the rest. Catches a reduce that merges only its first chunk
    (``reduce_first_chunk_only``), chunks merged without the shared max, a grid or a reduce
    capped at one chunk of splits."""
    seq_lens, num_splits, partition = [2080, 5], 130, 16
    case = steered_case(seq_lens, "one peak in the last segment", partition, seed=5, num_heads=2, num_kv_heads=1,
                        head_dim=32, pad_columns=0)
    check(lab, case, num_splits=num_splits, atol=EXTREME_ATOL,
          what=f"paged_decode(num_splits={num_splits}): 130 splits of {partition} tokens (the reduce's chunks of 64: "
               f"two and a part), each sequence's largest score in its last split")


@pytest.mark.parametrize("pad_columns", [0, 3], ids=["no_padding_column", "padding_columns"])
def test_splits_with_and_without_padding_columns(lab, pad_columns):
    """Step 3. Three splits over a table of 7 (or 10) blocks: 112 tokens do not divide into
    whole splits, and without a padding column the longest sequence (112 tokens) fills its
    row, so its last split is the grid's last, partial one. Catches a grid of
    ``capacity // partition`` splits (floor instead of ceil): it drops that last split, which
    only a sequence that reaches the end of its table can notice."""
    case = make_case([112, 40, 7], pad_columns=pad_columns, seed=13, poison="inf")
    check(lab, case, num_splits=3, what=f"paged_decode(num_splits=3), {pad_columns} padding columns")


@pytest.mark.parametrize("scores", ["mixed", "low"])
def test_splits_with_extreme_scores(lab, scores):
    """Step 3. Scores near +1000 in a sequence's first half and near -1000 in its second
    ("mixed": the late splits' weights underflow to exactly 0), or near -1000 everywhere,
    with 4 splits. Catches a merge without the shared max, or whose max starts at 0."""
    case = make_case([64, 48, 100], num_heads=4, num_kv_heads=2, scores=scores, seed=17)
    check(lab, case, num_splits=4, atol=EXTREME_ATOL, what=f"paged_decode(num_splits=4), {scores} scores")


def test_empty_and_one_token_sequences_with_splits(lab):
    """Step 3. seq_len 0 gives zeros and seq_len 1 that token's value row with 4 splits (the
    empty sequence has no split at all, the one-token sequence one). Catches 0/0 in the
    reduce, and a grid that skips short sequences."""
    case = make_case([0, 1, 0, 40], seed=3, poison="nan")
    check(lab, case, num_splits=4, what="paged_decode(num_splits=4)")


# --------------------------------------------------------------------------- step 4: the chosen split count

# (batch, num_kv_heads, capacity in tokens, num_sms): the benchmark's shapes on an H100 (132 SMs),
# and a few others (other SM counts, short tables, odd sizes).
SPLIT_RULE_CASES = [
    (1, 8, 8192, 132), (1, 8, 32768, 132), (1, 8, 131072, 132), (1, 8, 524288, 132), (4, 8, 16384, 132),
    (16, 8, 4096, 132), (64, 8, 4096, 132), (128, 8, 512, 132), (256, 8, 1024, 132), (8, 8, 32768, 132),
    (64, 8, 65536, 132), (1, 8, 131072, 16), (1, 8, 131072, 200), (1, 1, 1024, 132), (1, 8, 16, 132),
    (3, 5, 1000, 7), (2, 32, 2048, 132), (1, 2, 320, 132),
    (66, 8, 16383, 132),  # a token short of RAGGED_CAPACITY: four waves already, no ragged rule
]


def split_rule_cases(predicate):
    return [c for c in SPLIT_RULE_CASES if predicate(*c)]


def test_choose_num_splits_fills_an_idle_gpu(lab):
    """Step 4. When the batch's (sequence, KV head) pairs are fewer than the SMs and the table
    is long enough to give every SM a split of 128 tokens, the chosen count gives every SM
    at least one program; the answer is an int >= 1 (on the interpreter ``paged_decode``
    passes an H100's 132 SMs). Catches a rule that never splits, and one that ignores the
    SM count it is given."""
    for batch, kv_heads, capacity, sms in SPLIT_RULE_CASES:
        splits = lab.choose_num_splits(batch, kv_heads, capacity, sms)
        require(isinstance(splits, int) and not isinstance(splits, bool) and splits >= 1,
                f"choose_num_splits({batch}, {kv_heads}, {capacity}, {sms}) = {splits!r}: must be an int >= 1")
    for batch, kv_heads, capacity, sms in split_rule_cases(lambda b, j, c, s: b * j < s and c >= 128 * s // (b * j)):
        splits = lab.choose_num_splits(batch, kv_heads, capacity, sms)
        require(batch * kv_heads * splits >= sms,
                f"choose_num_splits(batch={batch}, num_kv_heads={kv_heads}, capacity={capacity}, num_sms={sms}) = "
                f"{splits}: {batch * kv_heads * splits} programs leave SMs of the {sms} idle (expected at least "
                f"{-(-sms // (batch * kv_heads))} splits)")


def test_choose_num_splits_does_not_oversplit(lab):
    """Step 4. No split shorter than 128 tokens (two tiles); a single sequence gets at most 8
    programs per SM; a batch that fills the GPU four times over with short tables (< 16k
    tokens) is not split. Catches splits of a block each, a count that ignores the KV heads
    (8 times too many programs), and one that splits batches that need no splitting."""
    for batch, kv_heads, capacity, sms in SPLIT_RULE_CASES:
        splits = lab.choose_num_splits(batch, kv_heads, capacity, sms)
        call = f"choose_num_splits(batch={batch}, num_kv_heads={kv_heads}, capacity={capacity}, num_sms={sms})"
        most = max(1, capacity // 128)
        require(splits <= most, f"{call} = {splits}: splits shorter than 128 tokens (expected at most {most})")
        if batch == 1:
            require(kv_heads * splits <= 8 * sms, f"{call} = {splits}: {kv_heads * splits} programs for {sms} SMs, "
                    f"expected at most 8 per SM ({8 * sms // kv_heads} splits)")
        if batch * kv_heads >= 4 * sms and capacity < 16384:
            require(splits == 1, f"{call} = {splits}: the batch alone fills the GPU four times, expected 1 split")


def test_choose_num_splits_ragged_batches(lab):
    """Step 4. A batch whose table holds 16k tokens or more may be ragged: the benchmark's
    skewed batch (one 64k sequence among 63 of 1k, 8 KV heads, so a table of 64k) must give
    its long sequence alone at least one program per SM. Catches a rule that only counts
    (sequence, KV head) pairs, which leaves the long sequence to 8 programs, and a rule that starts
    past 16k (a table of exactly 16,384 tokens, 16 KV heads: 16 programs for 132 SMs)."""
    for batch, kv_heads, capacity, sms in [(64, 8, 65536, 132), (8, 8, 131072, 132), (32, 8, 32768, 132),
                                           (40, 16, 16384, 132)]:
        splits = lab.choose_num_splits(batch, kv_heads, capacity, sms)
        require(kv_heads * splits >= sms,
                f"choose_num_splits(batch={batch}, num_kv_heads={kv_heads}, capacity={capacity}, num_sms={sms}) = "
                f"{splits}: one full-length sequence of the batch gets {kv_heads * splits} programs for {sms} SMs "
                f"(expected at least {-(-sms // kv_heads)} splits: the ragged rule)")


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_default_split_count_matches_reference(lab, dtype):
    """Step 4. ``num_splits`` left to the lab on a ragged batch whose table (20 blocks, 2 KV
    heads, 6 sequences) makes the rule split it on the interpreter's 132 SMs, so the default
    path runs both kernels. Catches whatever the default path gets wrong that a forced
    count does not exercise."""
    splits = lab.choose_num_splits(6, 2, 320, 132)
    require(isinstance(splits, int) and splits > 1,
            f"choose_num_splits(6, 2, 320, 132) = {splits!r}, expected more than 1 (step 4): 12 programs on 132 SMs")
    case = make_case([37, 1, 300, 16, 0, 50], dtype=dtype, pad_columns=1, seed=23, poison="nan")
    check(lab, case, what="paged_decode(num_splits=None)")


def test_an_empty_batch(lab):
    """Steps 1 to 4. A step with no sequence to decode (batch 0: an engine's step of prefills only)
    gives an empty output shaped ``[0, num_heads, head_dim]`` in q's dtype, with the count forced or
    left to ``choose_num_splits``, which answers an int >= 1 for a batch of 0; ``split_summaries`` and
    ``merge_splits`` give empty summaries and outputs. Catches a split rule that divides by
    ``batch * num_kv_heads`` (``empty_batch_divides_by_zero``)."""
    q, k_cache, v_cache, tables, lens = make_case([5], seed=8)
    empty = (q[:0], k_cache, v_cache, tables[:0], lens[:0])
    try:
        splits = lab.choose_num_splits(0, k_cache.shape[2], tables.shape[1] * k_cache.shape[1], 132)
    except ArithmeticError as err:
        raise AssertionError(f"choose_num_splits(batch=0, ...) raised {type(err).__name__}: {err} (a batch may be "
                             "empty: guard the division by batch * num_kv_heads)") from err
    require(isinstance(splits, int) and not isinstance(splits, bool) and splits >= 1,
            f"choose_num_splits(batch=0, ...) = {splits!r}: must be an int >= 1")
    for num_splits in (None, 1, 3):
        out = lab.paged_decode(*empty, num_splits=num_splits)
        require(isinstance(out, torch.Tensor) and tuple(out.shape) == (0, *q.shape[1:]) and out.dtype == q.dtype,
                f"paged_decode on an empty batch, num_splits={num_splits}: expected an empty {q.dtype} tensor "
                f"{(0, *q.shape[1:])}, got {type(out).__name__} {tuple(getattr(out, 'shape', ()))} "
                f"{getattr(out, 'dtype', '')}")
    m, denom, acc, partition_size = lab.split_summaries(*empty, num_splits=3)
    out = lab.merge_splits(m, denom, acc, lens[:0], partition_size, q.dtype)
    require(isinstance(out, torch.Tensor) and tuple(out.shape) == (0, *q.shape[1:]),
            f"merge_splits of an empty batch's summaries: expected an empty tensor {(0, *q.shape[1:])}, got "
            f"{type(out).__name__} {tuple(getattr(out, 'shape', ()))}")


# The launches are counted in a child process (_launches_child.py), which wraps Triton's launch before
# it loads the implementation: the test process of `labs grade` holds a stand-in, not the kernels.
LAUNCHES_CHILD = Path(__file__).with_name("_launches_child.py")


def test_one_split_launches_one_kernel_and_more_launch_two(lab):
    """Steps 3 and 4. The README's promise, counted: one split is one kernel launch (no reduce), more
    splits two (the partition kernel, then the reduce), and ``num_splits=None`` takes
    ``choose_num_splits``'s count (yours) for the table's capacity, ``max_blocks * block_size``
    tokens, on this device's SMs. Counted on a forced 1 and 3, and on two tables whose batch and
    width, swapped, would make the rule decide the other way. Catches one split taken through the
    split path (a needless reduce launch per step) and a default count computed from the table's
    batch instead of its width (``capacity_from_the_batch``)."""
    rows = child.run(LAUNCHES_CHILD, timeout=300, failed=(
        "paged_decode under the launch counter failed (the child runs paged_decode on four small batches)"))
    calls = child.script_module(LAUNCHES_CHILD).CALLS
    require(isinstance(rows, np.ndarray) and rows.shape == (len(calls), 2),
            f"the launch counter sent {getattr(rows, 'shape', type(rows))}, expected {(len(calls), 2)}")
    for (batch, max_blocks, num_splits), (launches, count) in zip(calls, rows.tolist(), strict=True):
        call = (f"paged_decode on a batch of {batch} with a table of {max_blocks} blocks, num_splits={num_splits}"
                + (f" (choose_num_splits chose {count})" if num_splits is None else ""))
        expected = 1 if count == 1 else 2
        require(launches == expected,
                f"{call}: {launches} kernel launches, expected {expected} ("
                + ("one split: the partition kernel writes out directly, no reduce" if expected == 1 else
                   "the partition kernel, then the reduce") + ")"
                + ("; is the default count computed from the table's width, max_blocks * block_size tokens?"
                   if num_splits is None else ""))


# --------------------------------------------------------------------------- a cache beyond 2**31 elements


# The check runs in a child process (_big_cache_child.py, through labkit.testing.child), on the GPU
# when there is one and through the interpreter otherwise: 4.3 GB must not live in the test's
# process, nor cross the pipe of `labs grade` (there the child runs in the student's sandbox). The
# child sends back the outputs only; the expectation is computed here, from the same blocks rebuilt
# by the child script's own inputs(), so nothing the implementation under test does can change it.
BIG_CACHE_CHILD = Path(__file__).with_name("_big_cache_child.py")


def test_cache_beyond_2_31_elements(lab):
    """A key and a value cache of more than 2**31 float16 elements each, a ragged batch (GQA 8/2)
    in their top blocks, the tails of the last blocks and the padding entries' block poisoned:
    element offsets no longer fit in int32. One split, three, and the count paged_decode chooses.
    Catches block ids multiplied by the block stride in int32 (the offset wraps around and the
    kernel reads another block, or the child process crashes on an address outside the cache)."""
    out = child.run(BIG_CACHE_CHILD, timeout=300, failed=(
        "paged_decode failed on a cache of more than 2**31 elements with the sequences in its top blocks: are "
        "element offsets computed in int32? (block ids must be widened to int64 before they multiply the block "
        "stride)"))
    big = child.script_module(BIG_CACHE_CHILD)
    q, block_tables, seq_lens, k_blocks, v_blocks = big.inputs(torch)
    expected = reference_decode(q, k_blocks, v_blocks, block_tables, seq_lens)
    check_child_outputs(out, expected, big.NUM_SPLITS, torch.float16, "on a cache of more than 2**31 elements",
                        "int32 offsets wrap around")
