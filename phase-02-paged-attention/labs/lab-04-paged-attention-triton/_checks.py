"""Lab 02-04, given: the input checks of both functions (``_check_inputs``).

Written once, here; ``starter.py`` and ``solution.py`` both import it and call ``_check_inputs``
first in ``paged_attention_torch`` and ``paged_attention_triton``: anything the kernel cannot take
becomes a ValueError with a plain message before any launch (a Triton compile error or a crash is
no message). It hands back ``seq_len`` as a Python int, the one to compute with from then on.
"""

from __future__ import annotations

import os

import torch

from labkit.integers import as_int

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _check_inputs(q, k_cache, v_cache, block_table, seq_len, *, for_triton: bool) -> int:
    """Raise ValueError with a plain message for anything the kernel cannot take; return ``seq_len``
    as a Python int (a numpy unsigned integer wraps around under ``-seq_len``: ``-np.uint32(5)`` is
    4294967291)."""
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
    # An int or a numpy integer (labkit.integers, the check the labs share), as a Python int from here on.
    seq_len = as_int(seq_len, "seq_len", low=0)
    needed = -(-seq_len // block_size)
    if block_table.numel() < needed:
        raise ValueError(
            f"seq_len={seq_len} needs {needed} blocks of {block_size} tokens, block_table has {block_table.numel()}"
        )
    devices = {t.device for t in (q, k_cache, v_cache, block_table)}
    if len(devices) > 1:
        raise ValueError(f"q, k_cache, v_cache and block_table must be on one device, got {sorted(map(str, devices))}")
    if not for_triton:
        return seq_len
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
    return seq_len
