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

from labkit import triton_env

BACKEND = triton_env.select_backend()  # before Triton is imported: its interpreter when there is no GPU

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from _checks import _check_inputs  # noqa: E402  (given: the input checks of both functions)

# ---------------------------------------------------------------------------
# Step 1: the torch reference, a loop over logical blocks and an ordinary softmax
# ---------------------------------------------------------------------------


def paged_attention_torch(q, k_cache, v_cache, block_table, seq_len):
    """Attention of ``q [num_heads, head_dim]`` over the first ``seq_len`` tokens of a
    paged cache ``[num_blocks, block_size, num_kv_heads, head_dim]``; fp32 inside,
    ``q.dtype`` out."""
    seq_len = _check_inputs(q, k_cache, v_cache, block_table, seq_len, for_triton=False)  # a Python int
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
    ``q`` lives: a CUDA tensor on the GPU, a CPU tensor under ``TRITON_INTERPRET=1``.
    ``q`` may come with any strides: the kernel reads it contiguous."""
    seq_len = _check_inputs(q, k_cache, v_cache, block_table, seq_len, for_triton=True)  # a Python int
    num_heads, head_dim = q.shape
    _, block_size, num_kv_heads, _ = k_cache.shape
    q = q.contiguous()
    out = torch.empty_like(q)
    _paged_attention_kernel[(num_heads,)](
        out, q, k_cache, v_cache, block_table.contiguous(),
        seq_len, 1.0 / math.sqrt(head_dim),
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        GROUP=num_heads // num_kv_heads, BLOCK_SIZE=block_size, HEAD_DIM=head_dim,
    )
    return out
