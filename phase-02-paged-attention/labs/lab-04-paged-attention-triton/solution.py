"""Lab 02-04 solution: one decode step of attention read through a block table, in Triton.

Token ``t`` of a sequence lives at slot ``t % block_size`` of physical block
``block_table[t // block_size]``. Both functions compute, for every query head ``h``::

    out[h] = softmax(q[h] . K[:, g(h)]^T / sqrt(head_dim)) . V[:, g(h)]     g(h) = h // (num_heads // num_kv_heads)

over the first ``seq_len`` tokens gathered through that formula.
``paged_attention_torch`` is the slow, obviously correct version (the debugger);
``paged_attention_triton`` is the kernel: one program per query head, streaming the
sequence one physical block at a time with an online softmax.
"""

from __future__ import annotations

import math
import numbers
import os

from labkit import triton_env

BACKEND = triton_env.select_backend()  # before Triton is imported: its interpreter when there is no GPU

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

# ---------------------------------------------------------------------------
# Input checks (shared by both functions; given to the learner in the starter)
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
# Step 1: the torch reference, a loop over logical blocks and an ordinary softmax
# ---------------------------------------------------------------------------


def paged_attention_torch(q, k_cache, v_cache, block_table, seq_len):
    """Attention of ``q [num_heads, head_dim]`` over the first ``seq_len`` tokens of a
    paged cache ``[num_blocks, block_size, num_kv_heads, head_dim]``; fp32 inside,
    ``q.dtype`` out."""
    _check_inputs(q, k_cache, v_cache, block_table, seq_len, for_triton=False)
    num_heads, head_dim = q.shape
    num_blocks, block_size, num_kv_heads, _ = k_cache.shape
    if seq_len == 0:
        return torch.zeros_like(q)

    # Gather: physical_row(t) = block_table[t // block_size] * block_size + t % block_size.
    k_rows = k_cache.reshape(num_blocks * block_size, num_kv_heads, head_dim)
    v_rows = v_cache.reshape(num_blocks * block_size, num_kv_heads, head_dim)
    table = block_table.tolist()
    keys, values = [], []
    for logical in range(-(-seq_len // block_size)):
        physical = table[logical]
        if not 0 <= physical < num_blocks:
            raise ValueError(f"block_table[{logical}] = {physical} is not a block of the cache (0..{num_blocks - 1})")
        tokens = range(logical * block_size, min((logical + 1) * block_size, seq_len))  # tail block: fewer
        rows = [physical * block_size + t % block_size for t in tokens]
        keys.append(k_rows[rows])
        values.append(v_rows[rows])
    k = torch.cat(keys).float()  # [seq_len, num_kv_heads, head_dim], dense now
    v = torch.cat(values).float()

    # Query head h reads KV head h // group: repeat each KV head for its group.
    group = num_heads // num_kv_heads
    k = k.repeat_interleave(group, dim=1)  # [seq_len, num_heads, head_dim]
    v = v.repeat_interleave(group, dim=1)
    scores = torch.einsum("hd,thd->ht", q.float(), k) / math.sqrt(head_dim)
    probs = torch.softmax(scores, dim=-1)  # subtracts the max: no overflow
    out = torch.einsum("ht,thd->hd", probs, v)
    return out.to(q.dtype)


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
    head = tl.program_id(0)
    kv_head = head // GROUP
    slots = tl.arange(0, BLOCK_SIZE)
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + head * HEAD_DIM + dims).to(tl.float32)

    m = -float("inf")  # running max of the scores
    denom = 0.0  # running sum of exp(score - m)
    acc = tl.zeros([HEAD_DIM], dtype=tl.float32)  # running sum of exp(score - m) * v

    for logical in range(0, tl.cdiv(seq_len, BLOCK_SIZE)):
        # The one line paging adds: which physical block holds these tokens.
        physical = tl.load(block_table_ptr + logical).to(tl.int64)  # int64: offsets pass 2**31
        valid = logical * BLOCK_SIZE + slots < seq_len  # the tail block is partly empty
        offsets = physical * stride_block + slots[:, None] * stride_slot + kv_head * stride_kv_head + dims[None, :]

        k = tl.load(k_cache_ptr + offsets, mask=valid[:, None], other=0.0).to(tl.float32)
        scores = tl.sum(k * q[None, :], axis=1) * scale
        scores = tl.where(valid, scores, -float("inf"))

        m_new = tl.maximum(m, tl.max(scores, axis=0))
        correction = tl.exp(m - m_new)  # rescales what was summed under the old max
        p = tl.exp(scores - m_new)  # 0 for the masked slots

        v = tl.load(v_cache_ptr + offsets, mask=valid[:, None], other=0.0).to(tl.float32)
        denom = denom * correction + tl.sum(p, axis=0)
        acc = acc * correction + tl.sum(p[:, None] * v, axis=0)
        m = m_new

    out = acc / tl.where(denom > 0, denom, 1.0)  # seq_len == 0: zeros, not 0/0
    tl.store(out_ptr + head * HEAD_DIM + dims, out.to(out_ptr.dtype.element_ty))


def paged_attention_triton(q, k_cache, v_cache, block_table, seq_len):
    """The same attention as ``paged_attention_torch``, as a Triton kernel. Runs where
    ``q`` lives: a CUDA tensor on the GPU, a CPU tensor under ``TRITON_INTERPRET=1``."""
    _check_inputs(q, k_cache, v_cache, block_table, seq_len, for_triton=True)
    num_heads, head_dim = q.shape
    _, block_size, num_kv_heads, _ = k_cache.shape
    q = q.contiguous()
    out = torch.empty_like(q)
    _paged_attention_kernel[(num_heads,)](
        out, q, k_cache, v_cache, block_table.contiguous(),
        int(seq_len), 1.0 / math.sqrt(head_dim),
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        GROUP=num_heads // num_kv_heads, BLOCK_SIZE=block_size, HEAD_DIM=head_dim,
    )
    return out
