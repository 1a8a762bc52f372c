"""Lab 02-04: one decode step of attention read through a block table, in Triton.

Your work, in the README's order:
  Step 1. ``paged_attention_torch``: the slow, obviously correct version. Your debugger.
  Step 2. ``_paged_attention_kernel`` and ``paged_attention_triton``: the same attention as
          a Triton kernel, one program per query head, streaming the blocks.
  Step 3. The gate: ``pytest`` until every test passes (max |delta| <= 1e-2 in fp16).

Token ``t`` lives at slot ``t % block_size`` of physical block ``block_table[t // block_size]``;
query head ``h`` reads KV head ``h // (num_heads // num_kv_heads)``; scores are scaled by
``1 / sqrt(head_dim)``. Run the tests with ``LAB_IMPL=starter pytest`` from the lab folder.
"""

from __future__ import annotations

import math  # noqa: F401 (you will need it)

from labkit import triton_env

BACKEND = triton_env.select_backend()  # before Triton is imported: its interpreter when there is no GPU

import torch  # noqa: E402, F401  (you will need it)
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

# Given in _checks.py (read it, do not edit it): _check_inputs(q, k_cache, v_cache, block_table, seq_len,
# for_triton=...) raises a ValueError with a plain message for anything the kernel cannot take, and returns
# seq_len as a Python int. Call it first in both functions (for_triton=False in the torch reference, True
# before a launch) and compute with what it returns: seq_len may come as a numpy integer, unsigned ones
# included, and -np.uint32(5) is 4294967291.
from _checks import _check_inputs  # noqa: E402, F401

# ---------------------------------------------------------------------------
# Step 1: the torch reference
# ---------------------------------------------------------------------------


def paged_attention_torch(q, k_cache, v_cache, block_table, seq_len):
    """One decode step of attention over a paged cache, the slow and obviously correct way.

    ``q`` ``[num_heads, head_dim]``; ``k_cache``, ``v_cache`` ``[num_blocks, block_size,
    num_kv_heads, head_dim]`` in q's dtype; ``block_table`` a 1-D int tensor of physical block
    ids, at least ``ceil(seq_len / block_size)`` of them (the entries past those are never read:
    they may hold anything, -1 included); ``seq_len`` an int >= 0 (or a numpy integer).

    Returns ``[num_heads, head_dim]`` in q's dtype: for each query head ``h``, softmax over the
    ``seq_len`` tokens of ``q[h] . k / sqrt(head_dim)``, times their values, where token ``t``
    is slot ``t % block_size`` of block ``block_table[t // block_size]`` and query head ``h``
    reads KV head ``h // (num_heads // num_kv_heads)``. Arithmetic in fp32. No other cache
    slot may affect the result (they may hold NaN); ``seq_len`` 0 gives zeros; the inputs are
    left unchanged. Bad input raises ``ValueError`` (the given ``_check_inputs``).
    """
    raise NotImplementedError(
        "paged_attention_torch: not implemented yet (README step 1: gather the seq_len tokens through "
        "block_table, then dense attention in fp32)"
    )


# ---------------------------------------------------------------------------
# Step 2: the Triton kernel, one program per query head
# ---------------------------------------------------------------------------


@triton.jit
def _paged_attention_kernel(
    out_ptr, q_ptr, k_cache_ptr, v_cache_ptr, block_table_ptr,
    seq_len, scale,
    stride_block, stride_slot, stride_kv_head,  # cache strides in elements; head_dim is contiguous
    GROUP: tl.constexpr,  # query heads per KV head
    BLOCK_SIZE: tl.constexpr,
    HEAD_DIM: tl.constexpr,
):
    """Program ``head = tl.program_id(0)`` writes ``out[head]``: the attention of ``q[head]``
    over the ``seq_len`` tokens of KV head ``head // GROUP``, in out_ptr's dtype.

    ``q_ptr`` and ``out_ptr`` are ``[num_heads, HEAD_DIM]``, contiguous. Element (block ``b``,
    slot ``s``, KV head ``g``, dim ``d``) of either cache is at ``b * stride_block + s *
    stride_slot + g * stride_kv_head + d``; ``block_table_ptr`` holds int32 block ids;
    ``scale`` is ``1 / sqrt(HEAD_DIM)``. The program streams the sequence one block of
    ``BLOCK_SIZE`` tokens at a time (no buffer of all the scores), reads only the first
    ``ceil(seq_len / BLOCK_SIZE)`` table entries and only the slots of the ``seq_len`` tokens,
    does its arithmetic in fp32 and its address arithmetic in int64 (a large cache passes
    2**31 elements). ``seq_len`` 0 writes zeros.
    """
    pass  # README step 2


def paged_attention_triton(q, k_cache, v_cache, block_table, seq_len):
    """The same attention as ``paged_attention_torch`` (same arguments, same result, same
    errors), computed by ``_paged_attention_kernel`` with one program per query head. Runs
    where ``q`` lives: a CUDA tensor on the GPU, a CPU tensor under ``TRITON_INTERPRET=1``.
    ``q`` may come with any strides (a slice of a fused projection): the kernel reads it
    contiguous, so hand it ``q.contiguous()``.
    """
    raise NotImplementedError(
        "paged_attention_triton: not implemented yet (README step 2: write _paged_attention_kernel, "
        "then launch it with one program per query head)"
    )
