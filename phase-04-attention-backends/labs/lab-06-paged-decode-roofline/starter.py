"""Lab 04-06, your work: paged decode at the memory roofline.

Build, in the order of the README's steps:

1. ``_partition_kernel``: one program per (sequence, KV head, split); all the query
   heads of the KV head's group together through ``tl.dot``; writes the split's
   unnormalized (m, denom, acc) in float32 (or, with one split, the output).
2. ``_reduce_kernel``: one program per (sequence, query head); merges the splits
   that exist with lab 04-04's merge and divides once.
3. ``paged_decode``: checks its inputs, picks the partition, launches both.
4. ``_choose_num_splits``: the split count when the caller gives none.

The kernels' signatures are the solution's; change them if you like, the tests only
call ``paged_decode``. Run ``LAB_IMPL=starter pytest <this folder>``.
"""

from __future__ import annotations

from labkit import triton_env

triton_env.select_backend()

import torch  # noqa: E402, F401
import triton  # noqa: E402, F401
import triton.language as tl  # noqa: E402

TILE_TOKENS = 64
NUM_WARPS = 4
NUM_STAGES = 3
SPLIT_TILE = 16
WAVES = 4
MIN_SPLIT_TOKENS = 128
RAGGED_CAPACITY = 16384
RAGGED_SPLIT_TOKENS = 1024


@triton.jit
def _partition_kernel(
    q_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, seq_lens_ptr, scratch_ptr, out_ptr,
    partition_size, max_blocks, stride_block, stride_slot, stride_head,
    GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr,
    SCALE: tl.constexpr, TILE_N: tl.constexpr, FP32_DOT: tl.constexpr, ONE_SPLIT: tl.constexpr,
):
    # README step 1. program ids: (sequence, KV head, split). Exit at once when the
    # split starts past seq_len; loop over the split's tokens TILE_N at a time, each
    # token finding its block through the table; online softmax over the tile; write
    # (m, denom, acc) for the group's real heads (or the output when ONE_SPLIT).
    pass


@triton.jit
def _reduce_kernel(
    scratch_ptr, out_ptr, seq_lens_ptr, partition_size, capacity, max_splits,
    HEAD_DIM: tl.constexpr, SPLIT_TILE: tl.constexpr,
):
    # README step 2. program ids: (sequence, query head). Merge the summaries of the
    # ceil(seq_len / partition_size) splits that exist; seq_len 0 gives zeros.
    pass


def _choose_num_splits(batch: int, num_kv_heads: int, capacity: int, device) -> int:
    """The split count when the caller gives none (README step 4)."""
    raise NotImplementedError(
        "_choose_num_splits: not implemented yet (README step 4: enough programs to fill the SMs a few times)"
    )


def paged_decode(q, k_cache, v_cache, block_tables, seq_lens, num_splits=None):
    """One decode step of attention over a paged KV cache, for a ragged batch.

    q ``[batch, num_heads, head_dim]``; k_cache, v_cache ``[num_blocks, block_size,
    num_kv_heads, head_dim]``; block_tables ``[batch, max_blocks]`` int32; seq_lens
    ``[batch]`` int32. Returns ``out`` like ``q``. ``num_splits``: ``None`` chooses;
    an int ``n`` cuts the table's capacity into partitions of ``ceil(capacity / n)``
    tokens rounded up to whole blocks (README, "What a forced split count means").
    """
    raise NotImplementedError(
        "paged_decode: not implemented yet (README step 3: check the inputs, choose the partition, "
        "launch _partition_kernel then _reduce_kernel; steps 1-2 write the kernels)"
    )
