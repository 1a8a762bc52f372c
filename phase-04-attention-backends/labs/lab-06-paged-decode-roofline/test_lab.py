"""Lab 04-06: split-KV, grouped-query paged decode in Triton.

Every test compares ``lab.paged_decode`` with ``reference_decode`` below: float64,
explicit loops over sequences, tokens and heads, no split, no grouping. Unused
cache slots and unused blocks hold a huge value (labkit.poison_unused_slots), and
the table's padding entries point at such a block, so reading anything that is not
a valid token shows. On a CPU the kernels run through Triton's interpreter
(float16/float32, tiny shapes); on a GPU the same tests run, plus bfloat16 and a
cache larger than 2**31 elements.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

import labkit
from labkit import triton_env
from labkit.testing import child

torch, triton = triton_env.require_torch_and_triton()

pytestmark = pytest.mark.triton

DEVICE = triton_env.device()
ON_GPU = DEVICE == "cuda"
# The interpreter computes bfloat16 wrongly: bf16 only on a GPU.
DTYPES = [torch.float16, torch.float32] + ([torch.bfloat16] if ON_GPU else [])
# Inputs are rounded to the dtype before the reference sees them, so these bound
# only the kernel's own arithmetic: float32 accumulators, p rounded to the input
# dtype before the P.V product.
ATOL = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 2e-2}
AXES = ("sequence", "head", "dim")


def reference_decode(q, k_cache, v_cache, block_tables, seq_lens) -> np.ndarray:
    """The oracle: float64, one sequence, one token, one head at a time.

    Gathers each sequence's tokens through its block table (only its valid tokens,
    so it also works on a cache too large to copy), then does plain softmax
    attention with query head ``h`` reading KV head ``h // (num_heads // num_kv_heads)``.
    """
    batch, num_heads, head_dim = q.shape
    block_size, num_kv_heads = k_cache.shape[1], k_cache.shape[2]
    group = num_heads // num_kv_heads
    tables = block_tables.cpu().numpy()
    out = np.zeros((batch, num_heads, head_dim))
    for b in range(batch):
        n = int(seq_lens[b])
        slots = [(int(tables[b, t // block_size]), t % block_size) for t in range(n)]
        if not slots:
            continue  # no keys: zeros
        blocks = torch.tensor([s[0] for s in slots], device=k_cache.device)
        offsets = torch.tensor([s[1] for s in slots], device=k_cache.device)
        k = labkit.to_f64(k_cache[blocks, offsets])  # [n, num_kv_heads, head_dim]
        v = labkit.to_f64(v_cache[blocks, offsets])
        qb = labkit.to_f64(q[b])
        for h in range(num_heads):
            scores = k[:, h // group, :] @ qb[h] / math.sqrt(head_dim)
            weights = np.exp(scores - scores.max())
            out[b, h] = weights @ v[:, h // group, :] / weights.sum()
    return out


def make_case(seq_lens, *, num_heads=8, num_kv_heads=2, head_dim=64, block_size=16, dtype=torch.float32,
              seed=0, spare_blocks=None, q_scale=1.0):
    """A poisoned paged cache for ``seq_lens``, on the device under test.

    The pool holds twice the blocks the batch needs (or ``spare_blocks`` extra), in
    shuffled order; every slot that holds no valid token is poisoned, and every
    padding entry of the table points at the last block of the pool, an unused
    (poisoned) block whose id is the largest valid one.
    """
    rng = np.random.default_rng(seed)
    need = sum(labkit_blocks(n, block_size) for n in seq_lens)
    num_blocks = 2 * need + 1 if spare_blocks is None else need + spare_blocks
    ids = rng.permutation(num_blocks - 1)  # the last block stays unused
    max_blocks = max([labkit_blocks(n, block_size) for n in seq_lens] + [1]) + 1  # + a padding entry
    tables = np.full((len(seq_lens), max_blocks), num_blocks - 1, dtype=np.int32)
    start = 0
    for b, n in enumerate(seq_lens):
        tables[b, : labkit_blocks(n, block_size)] = ids[start : start + labkit_blocks(n, block_size)]
        start += labkit_blocks(n, block_size)
    shape = (num_blocks, block_size, num_kv_heads, head_dim)
    k_cache = torch.from_numpy(rng.standard_normal(shape)).to(DEVICE, dtype)
    v_cache = torch.from_numpy(rng.standard_normal(shape)).to(DEVICE, dtype)
    labkit.poison_unused_slots(k_cache, tables, seq_lens)
    labkit.poison_unused_slots(v_cache, tables, seq_lens)
    q = torch.from_numpy(q_scale * rng.standard_normal((len(seq_lens), num_heads, head_dim))).to(DEVICE, dtype)
    block_tables = torch.from_numpy(tables).to(DEVICE)
    lens = torch.tensor(seq_lens, dtype=torch.int32, device=DEVICE)
    return q, k_cache, v_cache, block_tables, lens


def labkit_blocks(seq_len: int, block_size: int) -> int:
    return -(-seq_len // block_size)


def check(lab, case, num_splits=None, atol=None, what="paged_decode"):
    q = case[0]
    expected = reference_decode(*case)
    out = lab.paged_decode(*case, num_splits=num_splits)
    assert out.shape == q.shape and out.dtype == q.dtype and out.device == q.device, (
        f"{what}: out must be shaped, typed and placed like q {tuple(q.shape)} {q.dtype} {q.device}; "
        f"got {tuple(out.shape)} {out.dtype} {out.device}"
    )
    labkit.assert_close(out, expected, atol=atol or ATOL[q.dtype], axes=AXES, what=what)
    return out


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
def test_ragged_batch_matches_reference(lab, dtype):
    """A ragged batch (lengths off the block grid, one long enough for the default
    split choice to split it) with GQA 8/2, num_splits left to the lab. Catches tail
    blocks read past seq_len, wrong block-table indexing, a wrong scale, outputs
    of one sequence written into another's rows."""
    case = make_case([37, 1, 300, 16, 50], dtype=dtype)
    snapshot = [t.clone() for t in case]
    check(lab, case)
    for before, after, name in zip(snapshot, case, ["q", "k_cache", "v_cache", "block_tables", "seq_lens"],
                                   strict=True):
        assert torch.equal(before, after), f"paged_decode modified its input {name}"


@pytest.mark.parametrize("num_splits", [1, 2, 3, 5, 9])
def test_every_split_count_gives_the_same_answer(lab, num_splits):
    """Forced split counts from 1 (no split) to more splits than the table has blocks
    (capacity 6 blocks). Splitting is exact, so each count must match the unsplit
    reference to float32 rounding. Catches a reduce that forgets to rescale the
    partial sums to a shared max, one that averages normalized split outputs, a
    split range off by a block, a reduce that drops the last partial split."""
    case = make_case([80, 33, 5, 70], num_kv_heads=2, num_heads=4, seed=num_splits)
    check(lab, case, num_splits=num_splits, what=f"paged_decode(num_splits={num_splits})")


@pytest.mark.parametrize("num_splits", [1, 4])
def test_empty_and_one_token_sequences(lab, num_splits):
    """seq_len 0 must give zeros (not NaN from 0/0), seq_len 1 exactly that token's
    value row; with and without splits. Catches a merge or a final division with
    no guard for an empty key set, and a split grid that skips short sequences."""
    case = make_case([0, 1, 0, 40], seed=3)
    out = check(lab, case, num_splits=num_splits, what=f"paged_decode(num_splits={num_splits})")
    assert not torch.isnan(out).any()


@pytest.mark.parametrize(
    "num_heads,num_kv_heads", [(4, 4), (8, 2), (16, 2), (28, 4)], ids=["mha", "gqa4", "gqa8", "gqa7"]
)
def test_gqa_grouping(lab, num_heads, num_kv_heads):
    """Query heads 0..g-1 read KV head 0, g..2g-1 KV head 1, and so on, for group
    sizes 1, 4, 8 and 7 (not a power of two: the padded rows of the group's tile must
    neither be read as heads nor written). Catches interleaved grouping
    (``h % num_kv_heads``), a group tile that is not masked, a head offset per KV
    head computed with the wrong group size."""
    case = make_case([45, 20], num_heads=num_heads, num_kv_heads=num_kv_heads, seed=num_heads)
    check(lab, case, num_splits=2)


@pytest.mark.parametrize("block_size,head_dim", [(16, 64), (32, 128), (128, 64)])
def test_block_sizes_and_head_dims(lab, block_size, head_dim):
    """Blocks of 16, 32 and 128 tokens (smaller and larger than a tile of tokens),
    head_dim 64 and 128. Catches a tile that assumes one block per tile or
    block_size == 16, a slot offset computed with the wrong stride."""
    case = make_case([block_size + 3, 2 * block_size + 7], head_dim=head_dim, block_size=block_size,
                     seed=block_size)
    check(lab, case, num_splits=3)


def test_table_padding_points_at_poison(lab):
    """Padding entries of the block table point at a poisoned block (here one with a
    large, valid id far from the used ones), and every unused slot is poisoned: a
    kernel that loads a whole tile or block past seq_len without masking it, or
    reads the table past a sequence's last block, picks up values of 1e6 (fp32).
    Sequences end one token into a block and one token before its end."""
    case = make_case([17, 31, 1], seed=7, spare_blocks=1000)
    check(lab, case, num_splits=1, what="paged_decode(num_splits=1)")
    check(lab, case, num_splits=2, what="paged_decode(num_splits=2)")


def test_huge_logits_do_not_overflow(lab):
    """Scores near 100 in some splits and far lower in others (float32): exp must
    always be taken of (score - running max), in the partition kernel and in the
    merge. Catches a kernel that exponentiates raw scores or rescales with the
    wrong sign."""
    case = make_case([64, 48], num_heads=4, num_kv_heads=2, q_scale=40.0, seed=11)
    check(lab, case, num_splits=4, what="paged_decode with large scores")


BAD_INPUTS = {
    "q is 2-D": lambda c: (c[0][0], *c[1:]),
    "heads not a multiple of kv heads": lambda c: (c[0][:, :3], *c[1:]),
    "block_tables int64": lambda c: (*c[:3], c[3].long(), c[4]),
    "seq_lens of another batch": lambda c: (*c[:4], c[4][:1]),
    "block_size 24": lambda c: (c[0], c[1].repeat(1, 2, 1, 1)[:, :24].contiguous(),
                                c[2].repeat(1, 2, 1, 1)[:, :24].contiguous(), c[3], c[4]),
    "v_cache of another dtype": lambda c: (c[0], c[1], c[2].double(), c[3], c[4]),
    "head_dim 48": lambda c: (c[0][..., :48], c[1][..., :48], c[2][..., :48], c[3], c[4]),
}


@pytest.mark.parametrize("name", list(BAD_INPUTS) + ["num_splits 0"] + ([] if ON_GPU else ["seq_len past the table"]))
def test_bad_input_gets_a_clear_error(lab, name):
    """Wrong shapes, dtypes and counts raise ValueError or TypeError naming
    paged_decode, before any kernel runs (never a Triton traceback or a silent wrong
    answer). seq_lens values are checked only on the CPU: on a GPU that check would
    cost a synchronization per call."""
    case = make_case([20, 9], seed=5)
    args, num_splits = case, None
    if name == "num_splits 0":
        num_splits = 0
    elif name == "seq_len past the table":
        args = (*case[:4], torch.tensor([20, 10_000], dtype=torch.int32, device=DEVICE))
    else:
        args = BAD_INPUTS[name](case)
    with pytest.raises((ValueError, TypeError), match="paged_decode"):
        lab.paged_decode(*args, num_splits=num_splits)


@pytest.mark.gpu
def test_cache_beyond_2_31_elements(lab):
    """A cache of more than 2**31 elements per tensor, with the sequence in the
    top blocks: element offsets no longer fit in int32. Catches block ids multiplied
    by the block stride in int32 (they wrap around and read another block)."""
    if torch.cuda.get_device_properties(0).total_memory < 24 * 2**30:
        pytest.skip("needs 24 GiB of GPU memory")
    block_size, num_kv_heads, head_dim = 16, 8, 128
    num_blocks = 2**31 // (block_size * num_kv_heads * head_dim) + 64
    shape = (num_blocks, block_size, num_kv_heads, head_dim)
    seq_lens = [200, 77]
    k_cache = torch.full(shape, 3.0e4, dtype=torch.float16, device="cuda")
    v_cache = torch.full(shape, 3.0e4, dtype=torch.float16, device="cuda")
    gen = torch.Generator(device="cuda").manual_seed(0)
    # The top 30 blocks, in shuffled order; the padding entry is the very last block, poisoned.
    top = (num_blocks - 2 - torch.randperm(30, generator=gen, device="cuda")).to(torch.int32)
    tables = torch.full((2, 14), num_blocks - 1, dtype=torch.int32, device="cuda")
    tables[0, :13] = top[:13]
    tables[1, :5] = top[13:18]
    for b, n in enumerate(seq_lens):
        for t in range(n):
            blk, off = int(tables[b, t // block_size]), t % block_size
            k_cache[blk, off] = torch.randn(num_kv_heads, head_dim, generator=gen, device="cuda")
            v_cache[blk, off] = torch.randn(num_kv_heads, head_dim, generator=gen, device="cuda")
    q = torch.randn(2, 32, head_dim, generator=gen, device="cuda").half()
    case = (q, k_cache, v_cache, tables, torch.tensor(seq_lens, dtype=torch.int32, device="cuda"))
    for num_splits in (None, 1):
        check(lab, case, num_splits=num_splits, what=f"paged_decode(num_splits={num_splits}) on a 2**31+ cache")


# The CPU twin of the test above runs in a child process (_big_cache_child.py, through
# labkit.testing.child): the 4.3 GB cache must not live in the test's process. The child sends back
# the output only; the expectation is computed here, from the same blocks rebuilt by the child
# script's own inputs(), so nothing the implementation under test does can change it.
BIG_CACHE_CHILD = Path(__file__).with_name("_big_cache_child.py")


def _child_script():
    spec = importlib.util.spec_from_file_location("lab_06_big_cache_child", BIG_CACHE_CHILD)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(ON_GPU, reason="on a GPU, test_cache_beyond_2_31_elements covers this")
def test_cache_beyond_2_31_elements_on_cpu(lab):
    """The int32-offset check without a GPU: a float16 cache of more than 2**31
    elements (4 GiB of address space, of which only the blocks in use are touched),
    the sequence in its top blocks. Catches block ids multiplied by the block stride in
    int32: the offset wraps around and the kernel reads another block or crashes."""
    big = _child_script()
    try:
        out = child.run(BIG_CACHE_CHILD, timeout=300, env={"TRITON_INTERPRET": "1"})
    except child.ChildFailed as err:
        raise AssertionError(
            f"paged_decode failed on a cache of more than 2**31 elements with the sequence in its top blocks: are "
            f"element offsets computed in int32? (block ids must be widened to int64 before they multiply the block "
            f"stride)\n{err}") from None
    q, table, blocks = big.inputs(torch)
    kv = labkit.to_f64(blocks[:3].reshape(-1, big.NUM_KV_HEADS, big.HEAD_DIM)[: big.SEQ_LEN])
    q64, group = labkit.to_f64(q[0]), big.NUM_HEADS // big.NUM_KV_HEADS
    expected = np.zeros((1, big.NUM_HEADS, big.HEAD_DIM))
    for h in range(big.NUM_HEADS):
        k = kv[:, h // group]
        weights = np.exp(k @ q64[h] / math.sqrt(big.HEAD_DIM) - (k @ q64[h] / math.sqrt(big.HEAD_DIM)).max())
        expected[0, h] = weights @ k / weights.sum()  # K and V share the cache
    assert isinstance(out, np.ndarray) and out.shape == expected.shape and out.dtype == np.float16, (
        f"paged_decode on the big cache: expected a float16 output of shape {expected.shape}, got "
        f"{getattr(out, 'dtype', type(out))} {getattr(out, 'shape', '')}")
    labkit.assert_close(out, expected, atol=ATOL[torch.float16], axes=AXES,
                        what="paged_decode on a cache of more than 2**31 elements (int32 offsets wrap around)")
