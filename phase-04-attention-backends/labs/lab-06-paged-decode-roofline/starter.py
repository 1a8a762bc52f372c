"""Lab 04-06, your work: paged decode at the memory roofline.

Build it in the README's steps; each step has its own tests, which run before the next
step exists (``labs check 04-06`` or ``LAB_IMPL=starter pytest <this folder>``):

1. ``paged_decode`` with ``num_splits=1`` and ``_partition_kernel``'s one-split path: one
   program per (sequence, KV head), the group's query heads as the rows of one ``tl.dot``.
2. ``split_summaries`` and ``_partition_kernel``'s split path: each split's (m, denom, acc).
3. ``merge_splits`` and ``_reduce_kernel``; then ``paged_decode`` with several splits.
4. ``choose_num_splits``; then ``paged_decode`` with ``num_splits=None``.

The kernels' signatures are the solution's (a maintainer test checks it); the tests call only
the public functions. Given ready-made in ``_host.py`` (imported below): the kernels' settings and
the split rule's constants, the partition arithmetic, the SM count, the PDL switch and the input
checks.
"""

from __future__ import annotations

import math  # noqa: F401  (yours to use)

from labkit import triton_env

BACKEND = triton_env.select_backend()

import torch  # noqa: E402, F401
import triton  # noqa: E402, F401
import triton.language as tl  # noqa: E402

# Given (_host.py): the kernels' settings, the partition arithmetic, the device queries and the
# input checks: call the checks first, so that bad input gets a clear error before any kernel runs.
from _host import (  # noqa: E402, F401
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

# ---------------------------------------------------------------------------------------------
# Your work, in the README's steps: the kernels (their signatures are the solution's), then the
# public functions. Each stub says its step; the kernels do nothing until you write them.


@triton.jit
def _partition_kernel(
    q_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, seq_lens_ptr, out_ptr, m_ptr, denom_ptr, acc_ptr,
    partition_size, max_blocks, stride_block, stride_slot, stride_head,
    GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr,
    SCALE: tl.constexpr, TILE_N: tl.constexpr, FP32_DOT: tl.constexpr, ONE_SPLIT: tl.constexpr,
    PDL: tl.constexpr,
):
    """Yours, in two steps: the ``ONE_SPLIT`` path (step 1), then the split path (step 2).

    Program ``(b, j, s)`` of a ``(batch, num_kv_heads, max_splits)`` grid: sequence ``b``,
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
    pass


@triton.jit
def _reduce_kernel(
    m_ptr, denom_ptr, acc_ptr, seq_lens_ptr, out_ptr, partition_size, max_splits,
    HEAD_DIM: tl.constexpr, SPLIT_TILE: tl.constexpr, PDL: tl.constexpr,  # noqa: F811 (the launch passes SPLIT_TILE)
):
    """Yours, step 3.

    Program ``(b, h)`` of a ``(batch, num_heads)`` grid: merge the summaries
    ``m[b, h, s]``, ``denom[b, h, s]``, ``acc[b, h, s, :]`` of the ``ceil(seq_lens[b] /
    partition_size)`` splits that hold tokens (never more than ``max_splits``; the other
    entries may hold anything) and write the attention output to ``out[b, h, :]`` in the
    output's dtype; zeros when the sequence has no token. ``SPLIT_TILE`` (a power of two):
    how many splits a step may load at once. ``PDL``: wait for the partition kernel before
    reading (going-further/launch-overhead.md). Step 3.
    """
    pass


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
    hold anything (an engine's padding) and are never used. The inputs are left unchanged. Bad
    input raises ``_check_inputs("paged_decode", ...)``'s errors before any kernel runs; it returns
    ``num_splits`` as a Python int (None stays None), for a numpy integer count too.

    ``num_splits``: ``1`` runs one program per (sequence, KV head) and no reduce (step 1);
    an int ``n > 1`` splits as ``split_summaries`` does and merges with ``merge_splits``
    (step 3); ``None`` takes ``choose_num_splits``'s count for this GPU (step 4).
    """
    raise NotImplementedError(
        "paged_decode: not implemented yet (README step 1: check the inputs, then launch _partition_kernel "
        "with one split, one program per (sequence, KV head))"
    )


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
    Bad input raises ``_check_inputs("split_summaries", ..., none_ok=False)``'s errors; it returns
    ``num_splits`` as a Python int.
    """
    raise NotImplementedError(
        "split_summaries: not implemented yet (README step 2: the partition, the float32 scratch tensors, "
        "_partition_kernel over (batch, num_kv_heads, max_splits) programs)"
    )


def merge_splits(m, denom, acc, seq_lens, partition_size, out_dtype):
    """Merge each (sequence, query head)'s split summaries into its attention output.

    ``m``, ``denom`` float32 ``[batch, num_heads, max_splits]``, ``acc`` float32 ``[batch,
    num_heads, max_splits, head_dim]`` as ``split_summaries`` returns them, with any strides
    (views of scratch buffers sized for more splits, say); sequence ``b``
    has ``ceil(seq_lens[b] / partition_size)`` splits that hold tokens (the others may hold
    anything and must not be read). Returns ``out`` ``[batch, num_heads, head_dim]`` of
    ``out_dtype``: ``sum_s exp(m_s - M) acc_s / sum_s exp(m_s - M) denom_s`` with ``M`` the
    largest ``m_s``; zeros for a sequence with no token. The inputs are left unchanged.
    Bad input raises ``_check_summaries(...)``'s errors before any kernel runs; it returns
    ``partition_size`` as a Python int (a numpy integer would reach the kernel's launch as it came).
    """
    raise NotImplementedError(
        "merge_splits: not implemented yet (README step 3: _reduce_kernel, one program per (sequence, query head))"
    )


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
    raise NotImplementedError(
        "choose_num_splits: not implemented yet (README step 4: enough programs to fill the SMs a few times, "
        "no tiny splits, ragged batches)"
    )
