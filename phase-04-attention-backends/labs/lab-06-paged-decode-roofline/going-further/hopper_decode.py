"""Lab 04-06, going further: the same paged decode for Hopper GPUs, its K/V pages loaded by TMA.

The plain kernel (``solution.py``) gathers each tile of keys and values with one address per element:
every thread computes the addresses of its share of the tile, and they live in registers while the
loads are in flight. That caps how many programs an SM holds (24% occupancy on an H100), and so how
many bytes are in flight. Here each page of the cache is one tensor-memory-accelerator (TMA) copy: the
copy engine moves a whole ``[block_size, head_dim]`` page into shared memory from one descriptor and
two coordinates, no per-element address in any register, and the loop's software pipeline keeps
``NUM_STAGES`` pages of K and V on their way while the tensor cores work on the one that arrived.

Same API as the solution (``paged_decode``, ``split_summaries``, ``merge_splits``,
``choose_num_splits``), same exact reduce (the solution's ``merge_splits``), same tests:

    LAB_IMPL=going-further/hopper_decode pytest phase-04-attention-backends/labs/lab-06-paged-decode-roofline

On a Hopper GPU (compute capability 9) and in Triton's interpreter the TMA kernel runs; on other
GPUs, or for a cache whose strides a descriptor cannot describe, the solution's kernel does.
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

WAVES = None
PAGES = 1
NUM_STAGES = 4  # pages of K and of V in flight per program
NUM_WARPS = 4


@triton.jit
def _load_page(desc, table, logical, max_blocks, kv_head, BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr):
    """Page ``logical`` of the sequence (K or V of one KV head): one TMA copy of ``[BLOCK_SIZE,
    HEAD_DIM]`` from physical block ``table[logical]``. Past the table's end, block 0 (its tokens
    are masked out by the caller)."""
    block = tl.load(table + logical, mask=logical < max_blocks, other=0)
    return desc.load([block, 0, kv_head, 0]).reshape(BLOCK_SIZE, HEAD_DIM)


@triton.jit
def _stack(a, b, ROWS: tl.constexpr, HEAD_DIM: tl.constexpr):
    """``[ROWS, HEAD_DIM]`` tiles ``a`` then ``b`` as one ``[2 ROWS, HEAD_DIM]`` tile."""
    return tl.join(a, b).permute(2, 0, 1).reshape(2 * ROWS, HEAD_DIM)


@triton.jit
def _load_pages(k_desc, v_desc, table, first, max_blocks, kv_head,
                PAGES: tl.constexpr, BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr):
    """K and V of pages ``first .. first + PAGES - 1`` (1, 2 or 4), stacked into ``[PAGES *
    BLOCK_SIZE, HEAD_DIM]`` tiles: more tokens per iteration of the loop for the same copies."""
    k = _load_page(k_desc, table, first, max_blocks, kv_head, BLOCK_SIZE, HEAD_DIM)
    v = _load_page(v_desc, table, first, max_blocks, kv_head, BLOCK_SIZE, HEAD_DIM)
    if PAGES >= 2:
        k = _stack(k, _load_page(k_desc, table, first + 1, max_blocks, kv_head, BLOCK_SIZE, HEAD_DIM),
                   BLOCK_SIZE, HEAD_DIM)
        v = _stack(v, _load_page(v_desc, table, first + 1, max_blocks, kv_head, BLOCK_SIZE, HEAD_DIM),
                   BLOCK_SIZE, HEAD_DIM)
    if PAGES == 4:
        k2 = _stack(_load_page(k_desc, table, first + 2, max_blocks, kv_head, BLOCK_SIZE, HEAD_DIM),
                    _load_page(k_desc, table, first + 3, max_blocks, kv_head, BLOCK_SIZE, HEAD_DIM),
                    BLOCK_SIZE, HEAD_DIM)
        v2 = _stack(_load_page(v_desc, table, first + 2, max_blocks, kv_head, BLOCK_SIZE, HEAD_DIM),
                    _load_page(v_desc, table, first + 3, max_blocks, kv_head, BLOCK_SIZE, HEAD_DIM),
                    BLOCK_SIZE, HEAD_DIM)
        k = _stack(k, k2, 2 * BLOCK_SIZE, HEAD_DIM)
        v = _stack(v, v2, 2 * BLOCK_SIZE, HEAD_DIM)
    return k, v


@triton.jit
def _tma_partition_kernel(
    q_ptr, k_desc, v_desc, block_tables_ptr, seq_lens_ptr, out_ptr, m_ptr, denom_ptr, acc_ptr,
    partition_size, max_blocks,
    GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr,
    SCALE: tl.constexpr, FP32_DOT: tl.constexpr, ONE_SPLIT: tl.constexpr, PAGES: tl.constexpr,
):
    """The solution's ``_partition_kernel`` with one change: a tile is one page, loaded whole by
    ``k_desc.load`` / ``v_desc.load`` (descriptors over the 4-d caches ``[num_blocks, block_size,
    num_kv_heads, head_dim]``, box ``[1, BLOCK_SIZE, 1, HEAD_DIM]``) at (physical block, 0, KV head, 0)."""
    seq = tl.program_id(0).to(tl.int64)
    kv_head = tl.program_id(1)
    split = tl.program_id(2)
    num_heads = tl.num_programs(1) * GROUP

    seq_len = tl.minimum(tl.load(seq_lens_ptr + seq), max_blocks * BLOCK_SIZE)
    start = split * partition_size  # a whole number of pages: partition_size is
    if split > 0 and start >= seq_len:
        return
    end = tl.minimum(start + partition_size, seq_len)

    rows = tl.arange(0, GROUP_PAD)
    row_ok = rows < GROUP
    heads = kv_head * GROUP + rows
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + (seq * num_heads + heads)[:, None] * HEAD_DIM + dims[None, :], mask=row_ok[:, None], other=0.0)

    m = tl.full([GROUP_PAD], float("-inf"), tl.float32)
    denom = tl.zeros([GROUP_PAD], tl.float32)
    acc = tl.zeros([GROUP_PAD, HEAD_DIM], tl.float32)

    table = block_tables_ptr + seq * max_blocks
    TILE: tl.constexpr = PAGES * BLOCK_SIZE
    offs = tl.arange(0, TILE)
    for first in range(start // BLOCK_SIZE, tl.cdiv(end, BLOCK_SIZE), PAGES):
        k, v = _load_pages(k_desc, v_desc, table, first, max_blocks, kv_head, PAGES, BLOCK_SIZE, HEAD_DIM)
        valid = first * BLOCK_SIZE + offs < end
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

    if ONE_SPLIT:
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
    plain._check_inputs("paged_decode", q, k_cache, v_cache, block_tables, seq_lens, num_splits)
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
    plain._check_inputs("split_summaries", q, k_cache, v_cache, block_tables, seq_lens, num_splits, none_ok=False)
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
    """The solution's rule (README step 4): this kernel's programs are no larger than the plain ones."""
    if WAVES is None:
        return plain.choose_num_splits(batch, num_kv_heads, capacity, num_sms)
    wanted = max(1, WAVES * num_sms // max(1, batch * num_kv_heads))
    splits = min(1 << (wanted.bit_length() - 1), max(1, capacity // plain.MIN_SPLIT_TOKENS))
    if batch > 1 and capacity >= plain.RAGGED_CAPACITY:
        splits = max(splits, math.ceil(capacity / plain.RAGGED_SPLIT_TOKENS))
    return splits


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
        SCALE=1.0 / math.sqrt(head_dim), FP32_DOT=q.dtype == torch.float32, ONE_SPLIT=one_split, PAGES=PAGES,
        num_warps=NUM_WARPS, num_stages=NUM_STAGES,
    )
