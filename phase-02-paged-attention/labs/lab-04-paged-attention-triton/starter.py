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
import numbers
import os

from labkit import triton_env

BACKEND = triton_env.select_backend()  # before Triton is imported: its interpreter when there is no GPU

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

# ---------------------------------------------------------------------------
# Input checks (given: call _check_inputs first in both functions)
# ---------------------------------------------------------------------------

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _check_inputs(q, k_cache, v_cache, block_table, seq_len, *, for_triton: bool) -> None:
    """Raise ValueError with a plain message for anything the kernel cannot take."""
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache), ("block_table", block_table)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if q.dim() != 2:
        raise ValueError(f"q must be [num_heads, head_dim], got shape {tuple(q.shape)}")
    if k_cache.dim() != 4:
        raise ValueError(
            f"k_cache must be [num_blocks, block_size, num_kv_heads, head_dim], got shape {tuple(k_cache.shape)}"
        )
    if v_cache.shape != k_cache.shape:
        raise ValueError(f"v_cache has shape {tuple(v_cache.shape)}, k_cache {tuple(k_cache.shape)}: they must match")
    num_heads, head_dim = q.shape
    _, block_size, num_kv_heads, cache_head_dim = k_cache.shape
    if cache_head_dim != head_dim:
        raise ValueError(f"q has head_dim {head_dim}, the caches {cache_head_dim}")
    if num_kv_heads == 0 or num_heads % num_kv_heads:
        raise ValueError(f"num_heads={num_heads} must be a multiple of num_kv_heads={num_kv_heads}")
    for name, n in (("block_size (k_cache.shape[1])", block_size), ("head_dim", head_dim)):
        if not _is_power_of_two(n) or n < 16:
            raise ValueError(f"{name} must be a power of two >= 16, got {n}")
    if q.dtype not in FLOAT_DTYPES:
        raise ValueError(f"q must be float16, bfloat16 or float32, got {q.dtype}")
    if k_cache.dtype != q.dtype or v_cache.dtype != q.dtype:
        raise ValueError(f"q, k_cache and v_cache must share a dtype, got {q.dtype}, {k_cache.dtype}, {v_cache.dtype}")
    if block_table.dim() != 1 or block_table.dtype not in (torch.int32, torch.int64):
        raise ValueError(
            f"block_table must be a 1-D int32 tensor, got shape {tuple(block_table.shape)} and {block_table.dtype}"
        )
    if isinstance(seq_len, bool) or not isinstance(seq_len, numbers.Integral) or seq_len < 0:
        raise ValueError(f"seq_len must be an int >= 0, got {seq_len!r}")
    needed = -(-seq_len // block_size)
    if block_table.numel() < needed:
        raise ValueError(
            f"seq_len={seq_len} needs {needed} blocks of {block_size} tokens, block_table has {block_table.numel()}"
        )
    devices = {t.device for t in (q, k_cache, v_cache, block_table)}
    if len(devices) > 1:
        raise ValueError(f"q, k_cache, v_cache and block_table must be on one device, got {sorted(map(str, devices))}")
    if not for_triton:
        return
    interpreted = os.environ.get("TRITON_INTERPRET") == "1"
    if q.device.type == "cpu" and not interpreted:
        raise ValueError(
            "CPU tensors need Triton's interpreter: set TRITON_INTERPRET=1 before importing triton "
            "(labkit.triton_env.select_backend() does it when there is no GPU), or move the tensors to CUDA"
        )
    if q.device.type != "cpu" and q.device.type != "cuda":
        raise ValueError(f"the Triton kernel runs on cuda (or cpu under the interpreter), not {q.device.type}")
    if q.dtype == torch.bfloat16 and interpreted:
        raise ValueError("Triton's interpreter computes bfloat16 wrongly: use float16 or float32 on the CPU")
    if k_cache.stride() != v_cache.stride() or k_cache.stride(-1) != 1:
        raise ValueError(
            "k_cache and v_cache must share one layout with head_dim contiguous (call .contiguous() on them)"
        )


# ---------------------------------------------------------------------------
# Step 1: the torch reference
# ---------------------------------------------------------------------------


def paged_attention_torch(q, k_cache, v_cache, block_table, seq_len):
    """One decode step of attention over a paged cache, the slow and obviously correct way.

    ``q`` ``[num_heads, head_dim]``; ``k_cache``, ``v_cache`` ``[num_blocks, block_size,
    num_kv_heads, head_dim]`` in q's dtype; ``block_table`` a 1-D int tensor of physical block
    ids, at least ``ceil(seq_len / block_size)`` of them; ``seq_len`` an int >= 0.

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
    """
    raise NotImplementedError(
        "paged_attention_triton: not implemented yet (README step 2: write _paged_attention_kernel, "
        "then launch it with one program per query head)"
    )
