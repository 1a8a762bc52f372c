"""Lab 04-06, going further: the same paged decode for Hopper GPUs, its K/V pages loaded by TMA.

The plain kernel (``solution.py``) gathers each tile of keys and values with one address per
element: every thread computes the addresses of its share of the tile, and they sit in registers
while the loads are in flight (128 registers a thread on an H100). Here each page of the cache is
one copy by the tensor memory accelerator (TMA): the copy engine moves a whole ``[block_size,
head_dim]`` page into shared memory from one descriptor and two coordinates, with no per-element
address in any register, and Triton's software pipeline keeps ``NUM_STAGES`` pages of K and of V
on their way while the tensor cores work on the page that arrived.

Same API as the solution (``paged_decode``, ``split_summaries``, ``merge_splits``,
``choose_num_splits``), the same split rule and the same exact reduce (the solution's
``merge_splits``), and the same tests:

    LAB_IMPL=going-further/hopper_decode pytest phase-04-attention-backends/labs/lab-06-paged-decode-roofline

The TMA kernel runs on a GPU of compute capability 9 or later and in Triton's interpreter (so the
tests check it on a CPU too); on older GPUs, or for a cache whose strides a descriptor cannot
describe, the solution's kernel runs. What it measured, and why it is not faster than the plain
kernel, is in this folder's README.
"""

from __future__ import annotations

import functools
import math

from labkit import load_sibling, triton_env

BACKEND = triton_env.select_backend()

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

plain = load_sibling(__file__)
merge_splits = plain.merge_splits

NUM_STAGES = 5  # pages of K and of V in flight per program (3: up to 21% slower; 8: within 3%)
NUM_WARPS = 4


@triton.jit
def _load_page(desc, table, logical, kv_head, BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr):
    """Page ``logical`` of the sequence, K or V of one KV head: one TMA copy of the box ``[1,
    BLOCK_SIZE, 1, HEAD_DIM]`` at physical block ``table[logical]``, as a ``[BLOCK_SIZE, HEAD_DIM]``
    tile. No mask: the copy engine brings the whole page."""
    block = tl.load(table + logical)
    return desc.load([block, 0, kv_head, 0]).reshape(BLOCK_SIZE, HEAD_DIM)


@triton.jit
def _tma_partition_kernel(
    q_ptr, k_desc, v_desc, block_tables_ptr, seq_lens_ptr, out_ptr, m_ptr, denom_ptr, acc_ptr,
    partition_size, max_blocks,
    GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr,
    SCALE: tl.constexpr, FP32_DOT: tl.constexpr, ONE_SPLIT: tl.constexpr,
):
    """The solution's ``_partition_kernel`` with one change: a tile is one page, loaded whole by
    ``k_desc.load`` / ``v_desc.load`` (descriptors over the 4-d caches ``[num_blocks, block_size,
    num_kv_heads, head_dim]``, box ``[1, BLOCK_SIZE, 1, HEAD_DIM]``) at (physical block, 0, KV head, 0)."""
    seq = tl.program_id(0).to(tl.int64)
    kv_head = tl.program_id(1)
    split = tl.program_id(2)
    num_heads = tl.num_programs(1) * GROUP

    seq_len = tl.minimum(tl.load(seq_lens_ptr + seq), max_blocks * BLOCK_SIZE)  # never past the table
    start = split * partition_size  # on a page boundary: partition_size is a whole number of pages
    if split > 0 and start >= seq_len:
        return  # this sequence has fewer splits than the grid
    end = tl.minimum(start + partition_size, seq_len)

    # The query heads that share this KV head, padded to >= 16 rows for tl.dot.
    rows = tl.arange(0, GROUP_PAD)
    row_ok = rows < GROUP
    heads = kv_head * GROUP + rows
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + (seq * num_heads + heads)[:, None] * HEAD_DIM + dims[None, :], mask=row_ok[:, None], other=0.0)

    m = tl.full([GROUP_PAD], float("-inf"), tl.float32)
    denom = tl.zeros([GROUP_PAD], tl.float32)
    acc = tl.zeros([GROUP_PAD, HEAD_DIM], tl.float32)

    table = block_tables_ptr + seq * max_blocks
    slots = tl.arange(0, BLOCK_SIZE)
    for logical in range(start // BLOCK_SIZE, tl.cdiv(end, BLOCK_SIZE)):
        k = _load_page(k_desc, table, logical, kv_head, BLOCK_SIZE, HEAD_DIM)
        v = _load_page(v_desc, table, logical, kv_head, BLOCK_SIZE, HEAD_DIM)
        valid = logical * BLOCK_SIZE + slots < end
        # The last page's unused slots hold anything (NaN too): no score from them, and no value,
        # since 0 * NaN is NaN.
        v = tl.where(valid[:, None], v, 0.0)

        if FP32_DOT:
            scores = tl.dot(q, tl.trans(k), input_precision="ieee")
        else:
            scores = tl.dot(q, tl.trans(k))
        scores = tl.where(valid[None, :], scores * SCALE, float("-inf"))

        m_new = tl.maximum(m, tl.max(scores, axis=1))
        correction = tl.exp(m - m_new)
        p = tl.exp(scores - m_new[:, None])
        denom = denom * correction + tl.sum(p, axis=1)
        if FP32_DOT:
            acc = acc * correction[:, None] + tl.dot(p, v, input_precision="ieee")
        else:
            acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)
        m = m_new

    if ONE_SPLIT:  # seq_len 0 gives zeros, not 0/0
        out = acc / tl.where(denom > 0, denom, 1.0)[:, None]
        out_rows = (seq * num_heads + heads)[:, None] * HEAD_DIM + dims[None, :]
        tl.store(out_ptr + out_rows, out.to(out_ptr.dtype.element_ty), mask=row_ok[:, None])
    else:
        state = (seq * num_heads + heads) * tl.num_programs(2) + split
        tl.store(m_ptr + state, m, mask=row_ok)
        tl.store(denom_ptr + state, denom, mask=row_ok)
        tl.store(acc_ptr + state[:, None] * HEAD_DIM + dims[None, :], acc, mask=row_ok[:, None])


def paged_decode(q, k_cache, v_cache, block_tables, seq_lens, num_splits=None):
    """The solution's ``paged_decode``, its partitions read by TMA where the GPU and the cache allow."""
    if not uses_tma(q, k_cache, v_cache):
        return plain.paged_decode(q, k_cache, v_cache, block_tables, seq_lens, num_splits)
    num_splits = plain._check_inputs("paged_decode", q, k_cache, v_cache, block_tables, seq_lens, num_splits)
    batch, num_heads, _ = q.shape
    _, block_size, num_kv_heads, _ = k_cache.shape
    if num_splits is None:
        capacity = block_tables.shape[1] * block_size
        num_splits = choose_num_splits(batch, num_kv_heads, capacity, plain._num_sms(q.device))
    if num_splits > 1:
        m, denom, acc, partition_size = split_summaries(q, k_cache, v_cache, block_tables, seq_lens, num_splits)
        return merge_splits(m, denom, acc, seq_lens, partition_size, q.dtype)
    out = q.new_empty(q.shape)
    if out.numel():
        capacity = max(block_tables.shape[1] * block_size, 1)
        _launch(q.contiguous(), k_cache, v_cache, block_tables.contiguous(), seq_lens.contiguous(),
                out, out, out, out, capacity, max_splits=1, one_split=True)
    return out


def split_summaries(q, k_cache, v_cache, block_tables, seq_lens, num_splits):
    """The solution's ``split_summaries`` (same partitions, same outputs), its pages read by TMA."""
    if not uses_tma(q, k_cache, v_cache):
        return plain.split_summaries(q, k_cache, v_cache, block_tables, seq_lens, num_splits)
    num_splits = plain._check_inputs("split_summaries", q, k_cache, v_cache, block_tables, seq_lens, num_splits,
                                     none_ok=False)
    batch, num_heads, head_dim = q.shape
    _, block_size, _, _ = k_cache.shape
    capacity = max(block_tables.shape[1] * block_size, 1)
    partition_size = plain._partition_size(capacity, num_splits, block_size)
    max_splits = math.ceil(capacity / partition_size)
    m = q.new_empty((batch, num_heads, max_splits), dtype=torch.float32)
    denom = torch.empty_like(m)
    acc = q.new_empty((batch, num_heads, max_splits, head_dim), dtype=torch.float32)
    if m.numel():
        _launch(q.contiguous(), k_cache, v_cache, block_tables.contiguous(), seq_lens.contiguous(),
                q, m, denom, acc, partition_size, max_splits, one_split=False)
    return m, denom, acc, partition_size


def choose_num_splits(batch: int, num_kv_heads: int, capacity: int, num_sms: int) -> int:
    """The solution's rule (README step 4). Its programs hold no more work than the plain kernel's,
    and more of them per SM did not help: the pages come faster than the loop consumes them."""
    return plain.choose_num_splits(batch, num_kv_heads, capacity, num_sms)


def uses_tma(q, k_cache, v_cache) -> bool:
    """Whether the TMA kernel runs: Triton's interpreter, or an NVIDIA GPU of compute capability 9 or
    later; and caches whose every stride but the last is a multiple of 16 bytes, on 16-byte aligned
    addresses (what a tensor descriptor can describe). Otherwise the solution's kernel runs."""
    if not all(isinstance(t, torch.Tensor) for t in (q, k_cache, v_cache)) or k_cache.dim() != 4:
        return False  # the solution's checks say what is wrong
    if k_cache.stride() != v_cache.stride() or k_cache.stride(-1) != 1 or k_cache.dtype != v_cache.dtype:
        return False
    item = k_cache.element_size()
    if any(s * item % 16 for s in k_cache.stride()[:-1]) or k_cache.shape[-1] * item < 16:
        return False
    if k_cache.data_ptr() % 16 or v_cache.data_ptr() % 16:
        return False
    return BACKEND == "interpreter" or _is_hopper(q.device)


@functools.cache
def _is_hopper(device: torch.device) -> bool:
    if BACKEND != "cuda" or device.type != "cuda" or torch.version.hip is not None:
        return False
    return torch.cuda.get_device_capability(device)[0] >= 9


def _descriptor(cache) -> TensorDescriptor:
    """A descriptor of the whole pool ``[num_blocks, block_size, num_kv_heads, head_dim]``: the copy
    engine may fetch any page of it, and fills whatever lies outside it with zeros."""
    _, block_size, _, head_dim = cache.shape
    return TensorDescriptor(cache, list(cache.shape), list(cache.stride()), [1, block_size, 1, head_dim])


def _launch(q, k_cache, v_cache, block_tables, seq_lens, out, m, denom, acc, partition_size, max_splits, one_split):
    batch, num_heads, head_dim = q.shape
    _, block_size, num_kv_heads, _ = k_cache.shape
    group = num_heads // num_kv_heads
    _tma_partition_kernel[(batch, num_kv_heads, max_splits)](
        q, _descriptor(k_cache), _descriptor(v_cache), block_tables, seq_lens, out, m, denom, acc,
        partition_size, block_tables.shape[1],
        GROUP=group, GROUP_PAD=max(16, triton.next_power_of_2(group)), BLOCK_SIZE=block_size, HEAD_DIM=head_dim,
        SCALE=1.0 / math.sqrt(head_dim), FP32_DOT=q.dtype == torch.float32, ONE_SPLIT=one_split,
        num_warps=NUM_WARPS, num_stages=NUM_STAGES,
    )
