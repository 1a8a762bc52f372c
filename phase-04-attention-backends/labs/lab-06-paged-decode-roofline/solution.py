"""Lab 04-06, reference solution: paged decode at the memory roofline.

One decode step of attention for a batch of sequences whose K/V live in a paged cache,
written so that the GPU streams the cache at close to its memory bandwidth. Two kernels:

- ``_partition_kernel``: one program per (sequence, KV head, split). All the query heads
  that share the KV head are the rows of one ``tl.dot``, so each K/V byte is read once per
  KV head, not once per query head. With one split it writes the output itself; with
  several, each program writes its split's unnormalized summary (``m``, ``denom``, ``acc``)
  in float32.
- ``_reduce_kernel``: one program per (sequence, query head). It merges the summaries of
  the splits that hold tokens (lab 04-04's exact merge) and divides once.

The public functions follow the README's steps: ``paged_decode`` (step 1 with one split,
step 3 with several), ``split_summaries`` (step 2), ``merge_splits`` (step 3) and
``choose_num_splits`` (step 4).
"""

from __future__ import annotations

import math

from labkit import triton_env

BACKEND = triton_env.select_backend()

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

# The host side, given (_host.py): the kernels' settings, the partition arithmetic, the device
# queries and the input checks.
from _host import (  # noqa: E402
    MIN_SPLIT_TOKENS,
    NUM_STAGES,
    NUM_WARPS,
    RAGGED_CAPACITY,
    RAGGED_SPLIT_TOKENS,
    SPLIT_TILE,
    TILE_TOKENS,
    WAVES,
    _check_inputs,
    _check_summaries,
    _num_sms,
    _partition_size,
    _supports_pdl,
)


@triton.jit
def _partition_kernel(
    q_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, seq_lens_ptr, out_ptr, m_ptr, denom_ptr, acc_ptr,
    partition_size, max_blocks, stride_block, stride_slot, stride_head,
    GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr,
    SCALE: tl.constexpr, TILE_N: tl.constexpr, FP32_DOT: tl.constexpr, ONE_SPLIT: tl.constexpr,
    PDL: tl.constexpr,
):
    """Program ``(b, j, s)`` of a ``(batch, num_kv_heads, max_splits)`` grid: sequence ``b``,
    KV head ``j``, split ``s``, the tokens ``[s * partition_size, min((s + 1) *
    partition_size, seq_len))`` with ``seq_len = min(seq_lens[b], max_blocks * BLOCK_SIZE)``.

    The query heads ``j * GROUP .. j * GROUP + GROUP - 1`` attend to those tokens of KV head
    ``j``, scores scaled by ``SCALE``; logical token ``t`` is slot ``t % BLOCK_SIZE`` of
    physical block ``block_tables[b, t // BLOCK_SIZE]``, its row at ``block * stride_block +
    slot * stride_slot + j * stride_head`` (elements; head_dim contiguous).

    - ``ONE_SPLIT`` (the grid has one split): write each head's attention output, in the
      output's dtype, to ``out[b, h, :]`` (``out`` contiguous ``[batch, num_heads,
      HEAD_DIM]``); zeros when ``seq_len`` is 0. Step 1.
    - otherwise: write the split's float32 summary for each head, unnormalized, to ``m[b, h,
      s]``, ``denom[b, h, s]`` and ``acc[b, h, s, :]`` (contiguous, ``max_splits`` = the
      grid's third dimension). A program whose split holds no token may write nothing. Step 2.

    ``GROUP_PAD`` (>= 16, a power of two >= GROUP) is the row count of the group's tile;
    rows past ``GROUP`` are not heads of this group. ``FP32_DOT``: the inputs are float32.
    ``PDL``: the reduce kernel is launched as a programmatic dependent (going-further/launch-overhead.md);
    the tests pass with it False.
    """
    seq = tl.program_id(0).to(tl.int64)
    kv_head = tl.program_id(1)
    split = tl.program_id(2)
    num_heads = tl.num_programs(1) * GROUP

    # Never past the block table, whatever seq_lens says.
    seq_len = tl.minimum(tl.load(seq_lens_ptr + seq), max_blocks * BLOCK_SIZE)
    start = split * partition_size
    if split > 0 and start >= seq_len:
        return  # this sequence has fewer splits than the grid: nothing to do
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
    offs = tl.arange(0, TILE_N)
    for tile_start in range(start, end, TILE_N):
        token = tile_start + offs
        valid = token < end
        # Each token looks up its own physical block: one tile may span several blocks.
        block = tl.load(table + token // BLOCK_SIZE, mask=valid, other=0).to(tl.int64)
        rows_kv = block * stride_block + (token % BLOCK_SIZE) * stride_slot + kv_head * stride_head
        k = tl.load(k_cache_ptr + rows_kv[:, None] + dims[None, :], mask=valid[:, None], other=0.0)
        v = tl.load(v_cache_ptr + rows_kv[:, None] + dims[None, :], mask=valid[:, None], other=0.0)

        # [GROUP_PAD, TILE_N] scores: every query head of the group against every token.
        if FP32_DOT:
            scores = tl.dot(q, tl.trans(k), input_precision="ieee")
        else:
            scores = tl.dot(q, tl.trans(k))
        scores = tl.where(valid[None, :], scores * SCALE, float("-inf"))

        # Online softmax (lab 04-01); every tile holds a valid token, so m_new is finite.
        m_new = tl.maximum(m, tl.max(scores, axis=1))
        correction = tl.exp(m - m_new)
        p = tl.exp(scores - m_new[:, None])
        denom = denom * correction + tl.sum(p, axis=1)
        if FP32_DOT:
            acc = acc * correction[:, None] + tl.dot(p, v, input_precision="ieee")
        else:
            acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)
        m = m_new

    if PDL:
        # This program's loads are done: once every program of the grid has said so (or
        # exited), the GPU may start launching the reduce kernel, which waits in gdc_wait
        # until this grid has finished (going-further/launch-overhead.md).
        tl.extra.cuda.gdc_launch_dependents()

    if ONE_SPLIT:
        # The whole sequence was this program's: divide here. seq_len 0 gives zeros, not 0/0.
        out = acc / tl.where(denom > 0, denom, 1.0)[:, None]
        out_rows = (seq * num_heads + heads)[:, None] * HEAD_DIM + dims[None, :]
        tl.store(out_ptr + out_rows, out.to(out_ptr.dtype.element_ty), mask=row_ok[:, None])
    else:
        # The split's summary, unnormalized: the reduce kernel divides once, at the end.
        # m and denom are [batch, num_heads, max_splits], acc [batch, num_heads, max_splits, HEAD_DIM].
        state = (seq * num_heads + heads) * tl.num_programs(2) + split
        tl.store(m_ptr + state, m, mask=row_ok)
        tl.store(denom_ptr + state, denom, mask=row_ok)
        tl.store(acc_ptr + state[:, None] * HEAD_DIM + dims[None, :], acc, mask=row_ok[:, None])


@triton.jit
def _reduce_kernel(
    m_ptr, denom_ptr, acc_ptr, seq_lens_ptr, out_ptr, partition_size, max_splits,
    HEAD_DIM: tl.constexpr, SPLIT_TILE: tl.constexpr, PDL: tl.constexpr,
):
    """Program ``(b, h)`` of a ``(batch, num_heads)`` grid: merge the summaries
    ``m[b, h, s]``, ``denom[b, h, s]``, ``acc[b, h, s, :]`` of the ``ceil(seq_lens[b] /
    partition_size)`` splits that hold tokens (never more than ``max_splits``; the other
    entries may hold anything) and write the attention output to ``out[b, h, :]`` in the
    output's dtype; zeros when the sequence has no token. ``SPLIT_TILE`` (a power of two):
    how many splits a step may load at once. ``PDL``: wait for the partition kernel before
    reading (going-further/launch-overhead.md). Step 3.
    """
    seq = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)
    num_heads = tl.num_programs(1)

    seq_len = tl.load(seq_lens_ptr + seq)  # not written by the partition kernel: safe to read early
    if PDL:
        # Launched before the partition kernel finished (programmatic dependent launch): wait
        # until all of its programs are done and their summaries visible.
        tl.extra.cuda.gdc_wait()
    # Only the splits that hold tokens; the others were never written.
    num_splits = tl.minimum(tl.cdiv(seq_len, partition_size), max_splits)

    state = (seq * num_heads + head) * max_splits
    dims = tl.arange(0, HEAD_DIM)
    offs = tl.arange(0, SPLIT_TILE)
    m = float("-inf")
    denom = 0.0
    acc = tl.zeros([HEAD_DIM], tl.float32)
    for first in range(0, num_splits, SPLIT_TILE):
        split = first + offs
        exists = split < num_splits
        m_s = tl.load(m_ptr + state + split, mask=exists, other=float("-inf"))
        d_s = tl.load(denom_ptr + state + split, mask=exists, other=0.0)
        a_s = tl.load(acc_ptr + (state + split)[:, None] * HEAD_DIM + dims[None, :], mask=exists[:, None], other=0.0)
        # Lab 04-04's merge: rescale every summary to the shared max, then add.
        m_new = tl.maximum(m, tl.max(m_s, axis=0))  # finite: split `first` exists
        weight = tl.exp(m_s - m_new)  # 0 where the split does not exist
        correction = tl.exp(m - m_new)
        denom = denom * correction + tl.sum(weight * d_s, axis=0)
        acc = acc * correction + tl.sum(weight[:, None] * a_s, axis=0)
        m = m_new

    out = acc / tl.where(denom > 0, denom, 1.0)  # seq_len 0: no split, zeros
    tl.store(out_ptr + (seq * num_heads + head) * HEAD_DIM + dims, out.to(out_ptr.dtype.element_ty))


def paged_decode(q, k_cache, v_cache, block_tables, seq_lens, num_splits=None):
    """One decode step of attention over a paged KV cache, for a ragged batch.

    q ``[batch, num_heads, head_dim]``; k_cache, v_cache ``[num_blocks, block_size,
    num_kv_heads, head_dim]``; block_tables ``[batch, max_blocks]`` int32; seq_lens
    ``[batch]`` int32. Any of them may be a view with other strides (q a slice of a fused
    qkv, K and V the halves of one pool, a table cut from a wider one), as long as K and V
    share their strides and head_dim is contiguous. Returns ``out`` shaped and typed like
    ``q``: for each sequence ``b`` and head ``h``, softmax(q[b, h] . K^T / sqrt(head_dim)) V
    over the first ``seq_lens[b]`` tokens (never past the table: a longer length counts as
    ``max_blocks * block_size``), K/V from KV head ``h // (num_heads // num_kv_heads)``, for any
    group size. A sequence of length 0 gets zeros. Table entries past a sequence's blocks may
    hold anything (an engine's padding) and are never used. The inputs are left unchanged.

    ``num_splits``: ``1`` runs one program per (sequence, KV head) and no reduce; an int
    ``n > 1`` splits as ``split_summaries`` does and merges with ``merge_splits``; ``None``
    takes ``choose_num_splits``'s count.
    """
    num_splits = _check_inputs("paged_decode", q, k_cache, v_cache, block_tables, seq_lens, num_splits)
    batch, num_heads, _ = q.shape
    _, block_size, num_kv_heads, _ = k_cache.shape
    if num_splits is None:
        capacity = block_tables.shape[1] * block_size
        num_splits = choose_num_splits(batch, num_kv_heads, capacity, _num_sms(q.device))
    if num_splits > 1:
        m, denom, acc, partition_size = split_summaries(q, k_cache, v_cache, block_tables, seq_lens, num_splits)
        return merge_splits(m, denom, acc, seq_lens, partition_size, q.dtype)

    out = q.new_empty(q.shape)
    if out.numel():
        capacity = block_tables.shape[1] * block_size
        # m, denom and acc are not written with one split: out stands in for them.
        _launch_partition(q.contiguous(), k_cache, v_cache, block_tables.contiguous(), seq_lens.contiguous(),
                          out, out, out, out, max(capacity, 1), max_splits=1, one_split=True)
    return out


def split_summaries(q, k_cache, v_cache, block_tables, seq_lens, num_splits):
    """Each split's unnormalized softmax summary, before any merge.

    Inputs as for ``paged_decode``; ``num_splits`` an int >= 1. The table's capacity,
    ``max_blocks * block_size`` tokens, is cut into partitions of ``partition_size =
    ceil(capacity / num_splits)`` tokens rounded up to whole blocks (``_partition_size``);
    split ``s`` of sequence ``b`` holds its tokens ``[s * partition_size, min((s + 1) *
    partition_size, seq_lens[b]))``, and never more than 65,535 splits (CUDA's limit on a grid
    dimension: the partition grows instead). Returns ``(m, denom, acc, partition_size)``:
    float32 ``m``, ``denom`` ``[batch, num_heads, max_splits]`` and ``acc`` ``[batch,
    num_heads, max_splits, head_dim]`` with ``max_splits = ceil(capacity / partition_size)``.
    For each split that holds tokens, ``m`` is the largest scaled score of query head
    ``h`` over the split's tokens, ``denom`` the sum of ``exp(score - m)`` and ``acc`` the
    sum of ``exp(score - m) * v``. Entries of splits that hold no token are unspecified.
    """
    num_splits = _check_inputs("split_summaries", q, k_cache, v_cache, block_tables, seq_lens, num_splits,
                               none_ok=False)
    batch, num_heads, head_dim = q.shape
    _, block_size, _, _ = k_cache.shape
    capacity = max(block_tables.shape[1] * block_size, 1)
    partition_size = _partition_size(capacity, num_splits, block_size)
    max_splits = math.ceil(capacity / partition_size)
    # The scratch buffers: one float32 summary per (sequence, query head, split).
    m = q.new_empty((batch, num_heads, max_splits), dtype=torch.float32)
    denom = torch.empty_like(m)
    acc = q.new_empty((batch, num_heads, max_splits, head_dim), dtype=torch.float32)
    if m.numel():
        _launch_partition(q.contiguous(), k_cache, v_cache, block_tables.contiguous(), seq_lens.contiguous(),
                          q, m, denom, acc, partition_size, max_splits, one_split=False)
    return m, denom, acc, partition_size


def merge_splits(m, denom, acc, seq_lens, partition_size, out_dtype):
    """Merge each (sequence, query head)'s split summaries into its attention output.

    ``m``, ``denom`` float32 ``[batch, num_heads, max_splits]``, ``acc`` float32 ``[batch,
    num_heads, max_splits, head_dim]`` as ``split_summaries`` returns them, with any strides
    (views of scratch buffers sized for more splits, say); sequence ``b``
    has ``ceil(seq_lens[b] / partition_size)`` splits that hold tokens (the others may hold
    anything and must not be read). Returns ``out`` ``[batch, num_heads, head_dim]`` of
    ``out_dtype``: ``sum_s exp(m_s - M) acc_s / sum_s exp(m_s - M) denom_s`` with ``M`` the
    largest ``m_s``; zeros for a sequence with no token. The inputs are left unchanged.
    """
    partition_size = _check_summaries(m, denom, acc, seq_lens, partition_size, out_dtype)
    batch, num_heads, max_splits, head_dim = acc.shape
    out = acc.new_empty((batch, num_heads, head_dim), dtype=out_dtype)
    if out.numel():
        pdl = _supports_pdl(acc.device)
        _reduce_kernel[(batch, num_heads)](
            m.contiguous(), denom.contiguous(), acc.contiguous(), seq_lens.contiguous(), out,
            partition_size, max_splits,
            HEAD_DIM=head_dim, SPLIT_TILE=min(SPLIT_TILE, max(2, triton.next_power_of_2(max_splits))), PDL=pdl,
            launch_pdl=pdl,
        )
    return out


def choose_num_splits(batch: int, num_kv_heads: int, capacity: int, num_sms: int) -> int:
    """The split count ``paged_decode`` uses when the caller gives none.

    ``capacity`` is the block table's length in tokens, ``num_sms`` the GPU's streaming
    multiprocessors; ``batch`` may be 0 (a step with no sequence). Returns an int >= 1:

    1. enough (sequence, KV head, split) programs to give every SM about ``WAVES`` of them,
       rounded down to a power of two;
    2. no split shorter than ``MIN_SPLIT_TOKENS`` (two tiles): below that, a split's fixed
       costs (loading q, writing a summary, merging it) outweigh the parallelism it adds;
    3. a batch whose table holds ``RAGGED_CAPACITY`` tokens or more may be ragged (one long
       sequence among short ones, which rule 1 cannot see): splits of at most
       ``RAGGED_SPLIT_TOKENS``, so the long sequence alone still fills the GPU.
    """
    wanted = max(1, WAVES * num_sms // max(1, batch * num_kv_heads))
    splits = min(1 << (wanted.bit_length() - 1), max(1, capacity // MIN_SPLIT_TOKENS))
    if batch > 1 and capacity >= RAGGED_CAPACITY:
        splits = max(splits, math.ceil(capacity / RAGGED_SPLIT_TOKENS))
    return splits


def _launch_partition(q, k_cache, v_cache, block_tables, seq_lens, out, m, denom, acc, partition_size, max_splits,
                      one_split, *, tile_tokens=None, num_warps=NUM_WARPS, num_stages=NUM_STAGES):
    """``_partition_kernel`` over a ``(batch, num_kv_heads, max_splits)`` grid: ``one_split``
    writes ``out`` (``max_splits`` must be 1), otherwise the summaries ``m``, ``denom``, ``acc``.
    ``tile_tokens``, ``num_warps`` and ``num_stages`` override this lab's settings (lab 99-03 tunes
    them for its model); by default a tile follows the rule below."""
    batch, num_heads, head_dim = q.shape
    _, block_size, num_kv_heads, _ = k_cache.shape
    group = num_heads // num_kv_heads
    _partition_kernel[(batch, num_kv_heads, max_splits)](
        q, k_cache, v_cache, block_tables, seq_lens, out, m, denom, acc,
        partition_size, block_tables.shape[1], k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        GROUP=group, GROUP_PAD=max(16, triton.next_power_of_2(group)), BLOCK_SIZE=block_size, HEAD_DIM=head_dim,
        SCALE=1.0 / math.sqrt(head_dim),
        # Short splits (batch 1 at 8k tokens) stream in smaller tiles: more loads in flight per token.
        TILE_N=tile_tokens or (TILE_TOKENS if partition_size > 2 * TILE_TOKENS else TILE_TOKENS // 2),
        FP32_DOT=q.dtype == torch.float32, ONE_SPLIT=one_split, PDL=not one_split and _supports_pdl(q.device),
        num_warps=num_warps, num_stages=num_stages,
    )
