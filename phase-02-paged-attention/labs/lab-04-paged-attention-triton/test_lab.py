"""Tests for lab 02-04: paged attention in torch and in Triton.

Every expected value is float64 dense attention over the tokens gathered through
the block table (``labkit.paged_attention_f64``), never another function of yours.
Unused cache slots are poisoned, so reading past ``seq_len`` or through a wrong
block id shows up as a huge error instead of a small one.

Without a GPU the Triton kernel runs on the CPU through Triton's interpreter
(fp16 and fp32); with one it runs on the GPU, bf16 included.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import labkit
from labkit import triton_env

torch, triton = triton_env.require_torch_and_triton()

pytestmark = pytest.mark.triton

DEVICE = triton_env.device()
# The correctness gate: fp16 and bf16 kernels with fp32 accumulators; fp32 end to end.
TOL = {torch.float16: 1e-2, torch.bfloat16: 2e-2, torch.float32: 1e-4}
# The interpreter computes bf16 wrongly: bf16 only on a GPU.
DTYPES = [torch.float16, torch.float32] + ([torch.bfloat16] if DEVICE == "cuda" else [])
BOTH = ["paged_attention_torch", "paged_attention_triton"]


def make_case(seq_len, *, block_size=16, num_heads=8, num_kv_heads=2, head_dim=64, dtype=torch.float16,
              seed=0, block_ids=None, num_blocks=None, poison=None):
    """A scattered paged cache holding one sequence of ``seq_len`` tokens.

    The block table lists the sequence's blocks in shuffled order, then two extra
    entries that point at unused blocks (a kernel must stop at ``ceil(seq_len / block_size)``).
    Every slot that holds no valid token is poisoned. Returns
    ``(q, k_cache, v_cache, block_table, expected)``; ``expected`` is float64.
    """
    rng = np.random.default_rng(seed)
    need = -(-seq_len // block_size)
    if block_ids is None:
        num_blocks = num_blocks or 2 * need + 4
        block_ids = rng.permutation(num_blocks)[: need + 2]
    num_blocks = num_blocks or max(block_ids) + 1
    k = rng.standard_normal((num_blocks, block_size, num_kv_heads, head_dim))
    v = rng.standard_normal((num_blocks, block_size, num_kv_heads, head_dim))
    q = rng.standard_normal((num_heads, head_dim))
    return to_device(q, k, v, block_ids, seq_len, dtype, poison)


def to_device(q, k, v, block_ids, seq_len, dtype, poison=None):
    """Tensors on the test device, the unused slots poisoned, and the float64 answer
    computed from the values the kernel actually sees (after rounding to ``dtype``)."""
    q = torch.from_numpy(np.asarray(q)).to(DEVICE, dtype)
    k_cache = torch.from_numpy(np.asarray(k)).to(DEVICE, dtype)
    v_cache = torch.from_numpy(np.asarray(v)).to(DEVICE, dtype)
    block_table = torch.tensor(np.asarray(block_ids), dtype=torch.int32, device=DEVICE)
    for cache in (k_cache, v_cache):
        labkit.poison_unused_slots(cache, block_table.cpu().numpy(), seq_len, value=poison)
    expected = labkit.paged_attention_f64(q, k_cache, v_cache, block_table.cpu().numpy(), seq_len)
    return q, k_cache, v_cache, block_table, expected


def check(out, expected, dtype, what):
    __tracebackhide__ = True
    assert out.dtype == dtype, f"{what}: the output must have q's dtype {dtype}, got {out.dtype}"
    assert out.shape == expected.shape, f"{what}: shape {tuple(out.shape)}, expected {expected.shape}"
    labkit.assert_close(out, expected, atol=TOL[dtype], axes=("head", "dim"), what=what)


# --- Step 1: the torch reference ---------------------------------------------------------


@pytest.mark.parametrize(
    "seq_len, block_size, num_heads, num_kv_heads",
    [(1, 16, 4, 4), (15, 16, 8, 2), (16, 16, 8, 2), (17, 16, 8, 1), (130, 16, 8, 2), (33, 32, 4, 2), (64, 32, 4, 4)],
)
def test_torch_reference_matches_dense_fp32(lab, seq_len, block_size, num_heads, num_kv_heads):
    """Step 1: in fp32 the torch reference equals dense attention over the gathered tokens
    to 1e-4. Catches a reference that gathers whole blocks (reads the poisoned tail), uses the
    logical block index as the physical one, maps query heads to the wrong KV head, or
    forgets the 1/sqrt(head_dim) scale."""
    q, k_cache, v_cache, block_table, expected = make_case(
        seq_len, block_size=block_size, num_heads=num_heads, num_kv_heads=num_kv_heads, dtype=torch.float32
    )
    out = lab.paged_attention_torch(q, k_cache, v_cache, block_table, seq_len)
    check(out, expected, torch.float32, f"paged_attention_torch (seq_len={seq_len}, block_size={block_size})")


def test_torch_reference_fp16_within_gate(lab):
    """Step 1: with fp16 inputs the reference computes in fp32 and returns fp16 within 1e-2
    of the float64 answer. Catches a reference that returns fp32, or does its softmax in
    fp16 without subtracting the max."""
    q, k_cache, v_cache, block_table, expected = make_case(130)
    out = lab.paged_attention_torch(q, k_cache, v_cache, block_table, 130)
    check(out, expected, torch.float16, "paged_attention_torch (fp16, seq_len=130)")


# --- Step 2: the Triton kernel ------------------------------------------------------------


# Lengths around the block boundary, as functions of block_size.
LENGTHS = {
    "1": lambda bs: 1,
    "bs-1": lambda bs: bs - 1,
    "bs": lambda bs: bs,
    "bs+1": lambda bs: bs + 1,
    "3bs+5": lambda bs: 3 * bs + 5,
}


@pytest.mark.parametrize("block_size", [16, 32])
@pytest.mark.parametrize("length", LENGTHS)
def test_triton_matches_dense(lab, block_size, length):
    """Step 2: the kernel equals dense attention for lengths that do and do not fill their
    last block, with the unused slots poisoned. Catches a missing tail mask (the poisoned
    slots get attended), a kernel that runs one block short or long, a wrong block id
    (logical used as physical), a forgotten scale and a missing online-softmax correction."""
    seq_len = LENGTHS[length](block_size)
    q, k_cache, v_cache, block_table, expected = make_case(seq_len, block_size=block_size, seed=seq_len)
    out = lab.paged_attention_triton(q, k_cache, v_cache, block_table, seq_len)
    check(out, expected, torch.float16, f"paged_attention_triton (seq_len={seq_len}, block_size={block_size})")


@pytest.mark.parametrize("impl", BOTH)
def test_source_example_130_tokens_in_9_scattered_blocks(lab, impl):
    """Steps 1-3: the walkthrough's sequence. 130 tokens, block table
    [12, 3, 47, 1, 88, 5, 9, 22, 0] into a pool of 96 blocks; the 9th block holds 130 - 8*16 = 2
    tokens. The correctness gate: max |delta| <= 1e-2 in fp16. Catches every wrong address:
    a missing tail mask, logical-as-physical block ids, a skipped last block."""
    ids = [12, 3, 47, 1, 88, 5, 9, 22, 0]
    q, k_cache, v_cache, block_table, expected = make_case(130, block_ids=ids, num_blocks=96, seed=130)
    out = getattr(lab, impl)(q, k_cache, v_cache, block_table, 130)
    check(out, expected, torch.float16, f"{impl} (130 tokens, 9 scattered blocks)")


@pytest.mark.parametrize(
    "num_heads, num_kv_heads", [(4, 4), (8, 2), (8, 1), (12, 3)], ids=["MHA", "GQA-4", "MQA", "GQA-4x3"]
)
@pytest.mark.parametrize("impl", BOTH)
def test_grouped_query_heads(lab, impl, num_heads, num_kv_heads):
    """Query head h reads KV head h // (num_heads // num_kv_heads): multi-head, grouped and
    multi-query attention. Catches the classic wrong mapping h % num_kv_heads (right for
    MHA and MQA, wrong for GQA) and a kernel that indexes the cache by the query head."""
    q, k_cache, v_cache, block_table, expected = make_case(
        37, num_heads=num_heads, num_kv_heads=num_kv_heads, seed=num_heads * 10 + num_kv_heads
    )
    out = getattr(lab, impl)(q, k_cache, v_cache, block_table, 37)
    check(out, expected, torch.float16, f"{impl} ({num_heads} query heads, {num_kv_heads} KV heads)")


@pytest.mark.parametrize("impl", BOTH)
def test_head_dim_128(lab, impl):
    """head_dim 128 with block_size 32 (the bench's head size): catches a kernel that
    hard-codes head_dim 64 or a scale that is not 1/sqrt(head_dim)."""
    q, k_cache, v_cache, block_table, expected = make_case(50, block_size=32, head_dim=128, num_heads=4, seed=128)
    out = getattr(lab, impl)(q, k_cache, v_cache, block_table, 50)
    check(out, expected, torch.float16, f"{impl} (head_dim=128)")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
def test_triton_dtypes(lab, dtype):
    """The kernel takes fp16 and fp32 (and bf16 on a GPU) and returns q's dtype; fp32 must
    be accurate to 1e-4. Catches an output hard-coded to fp16 and accumulators kept in the
    input precision."""
    q, k_cache, v_cache, block_table, expected = make_case(70, dtype=dtype, seed=70)
    out = lab.paged_attention_triton(q, k_cache, v_cache, block_table, 70)
    check(out, expected, dtype, f"paged_attention_triton ({dtype})")


@pytest.mark.parametrize("table", ["empty", "unused entries"])
@pytest.mark.parametrize("impl", BOTH)
def test_seq_len_zero_gives_zeros(lab, impl, table):
    """seq_len 0 (a sequence with no history yet) gives zeros, never NaN, and reads no
    block. Catches 0/0 in the final division and a loop that runs at least once."""
    q, k_cache, v_cache, block_table, _ = make_case(0, seed=1)
    if table == "empty":
        block_table = block_table[:0]
    out = getattr(lab, impl)(q, k_cache, v_cache, block_table, 0)
    check(out, np.zeros(tuple(q.shape)), torch.float16, f"{impl} (seq_len=0, {table} block table)")


@pytest.mark.parametrize("garbage", [float("nan"), float("inf")], ids=["nan", "inf"])
@pytest.mark.parametrize("impl", BOTH)
def test_garbage_in_unused_slots_never_leaks(lab, impl, garbage):
    """A real cache's unused slots hold anything, NaN included (freed blocks, torch.empty).
    With NaN or inf in every unused slot the output must still be exact. Catches a kernel
    that masks the scores but loads V unmasked (0 * NaN = NaN leaks into the sum) and a
    reference that gathers whole blocks."""
    q, k_cache, v_cache, block_table, expected = make_case(21, seed=21, poison=garbage)
    out = getattr(lab, impl)(q, k_cache, v_cache, block_table, 21)
    check(out, expected, torch.float16, f"{impl} (unused slots hold {garbage})")


def rising_scores_case(seq_len, top_logit, *, block_size=16, num_heads=8, num_kv_heads=2, head_dim=64, seed=3):
    """Keys that line up more and more with the query: the score climbs from ~0 to ~top_logit,
    so the running max grows in every block."""
    rng = np.random.default_rng(seed)
    need = -(-seq_len // block_size)
    num_blocks = 2 * need + 4
    block_ids = rng.permutation(num_blocks)[:need]
    direction = rng.choice([-1.0, 1.0], size=(num_kv_heads, head_dim))  # one per KV head
    group = num_heads // num_kv_heads
    q = 4.0 * np.repeat(direction, group, axis=0)  # |q . direction| = 4 * head_dim
    # token t's key: c_t * direction, with c_t chosen so the score reaches top_logit at the end
    c = np.linspace(0.0, top_logit * math.sqrt(head_dim) / (4.0 * head_dim), seq_len)
    k = rng.standard_normal((num_blocks, block_size, num_kv_heads, head_dim))
    for t in range(seq_len):
        k[block_ids[t // block_size], t % block_size] = c[t] * direction + 0.1 * rng.standard_normal(
            (num_kv_heads, head_dim)
        )
    v = rng.standard_normal((num_blocks, block_size, num_kv_heads, head_dim))
    return to_device(q, k, v, block_ids, seq_len, torch.float16)


@pytest.mark.parametrize("impl", BOTH)
def test_online_softmax_rising_max(lab, impl):
    """The maximum score grows block after block (from 0 to ~40): every block forces the
    running max up, so everything summed so far must be rescaled by exp(m_old - m_new).
    Catches a missing correction factor (on acc, on the denominator, or both)."""
    q, k_cache, v_cache, block_table, expected = rising_scores_case(100, top_logit=40.0)
    out = getattr(lab, impl)(q, k_cache, v_cache, block_table, 100)
    check(out, expected, torch.float16, f"{impl} (scores rising block by block)")


@pytest.mark.parametrize("impl", BOTH)
def test_large_logits_do_not_overflow(lab, impl):
    """Scores that climb to ~1000: exp(1000) overflows even float64, so the kernel must
    subtract its running max before exponentiating. Catches exp(score) without the max,
    and a max frozen at the first block's value (exp(score - m_first) overflows later)."""
    q, k_cache, v_cache, block_table, expected = rising_scores_case(100, top_logit=1000.0, seed=4)
    out = getattr(lab, impl)(q, k_cache, v_cache, block_table, 100)
    check(out, expected, torch.float16, f"{impl} (scores up to ~1000)")


@pytest.mark.parametrize("impl", BOTH)
def test_long_sequence_many_blocks(lab, impl):
    """500 tokens in 32 scattered blocks with the fp16 gate: rounding and the online
    softmax over many blocks stay within 1e-2."""
    q, k_cache, v_cache, block_table, expected = make_case(500, num_heads=4, num_kv_heads=1, seed=500)
    out = getattr(lab, impl)(q, k_cache, v_cache, block_table, 500)
    check(out, expected, torch.float16, f"{impl} (500 tokens)")


# --- Clear errors for bad input ------------------------------------------------------------


def _bad_inputs():
    """(case id, function that breaks good inputs, words the message must contain)."""
    return [
        ("q is 3-D", lambda a: {**a, "q": a["q"][None]}, "num_heads, head_dim"),
        ("v shape differs", lambda a: {**a, "v_cache": a["v_cache"][:, :, :1]}, "v_cache"),
        ("heads not a multiple", lambda a: {**a, "q": a["q"][:3]}, "multiple"),
        ("block_size 24", lambda a: {**a, "k_cache": a["k_cache"][:, :12].repeat(1, 2, 1, 1),
                                     "v_cache": a["v_cache"][:, :12].repeat(1, 2, 1, 1)}, "power of two"),
        ("head_dim 48", lambda a: {**a, "q": a["q"][:, :48], "k_cache": a["k_cache"][..., :48].contiguous(),
                                   "v_cache": a["v_cache"][..., :48].contiguous()}, "power of two"),
        ("int q", lambda a: {**a, "q": a["q"].to(torch.int32)}, "float"),
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
    q, k_cache, v_cache, block_table, _ = make_case(20, seed=2)
    args = breaks({"q": q, "k_cache": k_cache, "v_cache": v_cache, "block_table": block_table, "seq_len": 20})
    with pytest.raises(ValueError, match=words):
        getattr(lab, impl)(**args)


# --- GPU only --------------------------------------------------------------------------------


@pytest.mark.gpu
def test_offsets_past_2_31_elements(lab):
    """On a GPU: a cache of more than 2**31 elements with the sequence in its last blocks.
    block id * stride overflows int32 there, so the kernel must compute offsets in int64.
    Catches int32 address arithmetic (a wrong answer or an illegal memory access)."""
    block_size, head_dim = 16, 16
    num_blocks = 2**31 // (block_size * head_dim) + 8  # 4 GiB per fp16 cache
    seq_len, ids = 40, [num_blocks - 1, num_blocks - 5, num_blocks - 3]
    rng = np.random.default_rng(31)
    shape = (num_blocks, block_size, 1, head_dim)
    k_cache = torch.full(shape, 3.0e4, dtype=torch.float16, device="cuda")
    v_cache = torch.full(shape, 3.0e4, dtype=torch.float16, device="cuda")
    small_k = torch.from_numpy(rng.standard_normal((3, block_size, 1, head_dim))).half()
    small_v = torch.from_numpy(rng.standard_normal((3, block_size, 1, head_dim))).half()
    labkit.poison_unused_slots(small_k, np.arange(3), seq_len)
    labkit.poison_unused_slots(small_v, np.arange(3), seq_len)
    k_cache[ids], v_cache[ids] = small_k.cuda(), small_v.cuda()
    q = torch.from_numpy(rng.standard_normal((2, head_dim))).half().cuda()
    block_table = torch.tensor(ids, dtype=torch.int32, device="cuda")
    expected = labkit.paged_attention_f64(q, small_k, small_v, np.arange(3), seq_len)
    out = lab.paged_attention_triton(q, k_cache, v_cache, block_table, seq_len)
    torch.cuda.synchronize()
    check(out, expected, torch.float16, "paged_attention_triton (cache past 2**31 elements)")
