"""Float64 brute-force references: the truth every lab's tests compare against.

Written for clarity, not speed: explicit loops over heads, ordinary softmax
with the max subtracted (float64's exp overflows past ~709, so the references
must survive the overflow tests' logits of ~1000 too).
"""

from __future__ import annotations

import numpy as np


def to_f64(x) -> np.ndarray:
    """A float64 numpy copy of a numpy array, a list or a torch tensor (any device)."""
    if hasattr(x, "detach"):  # a torch tensor: leave torch out of this module's imports
        x = x.detach().to("cpu").double().numpy()
    return np.array(x, dtype=np.float64)


def softmax_f64(scores) -> np.ndarray:
    """Softmax over the last axis in float64, max subtracted first."""
    s = to_f64(scores)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def attention_f64(q, k, v, scale: float | None = None) -> np.ndarray:
    """Dense single-query attention in float64.

    q ``[d]`` with k, v ``[n, d]``; or q ``[num_heads, d]`` with k, v
    ``[n, num_kv_heads, d]`` (grouped-query attention: query head ``h`` reads KV
    head ``h // (num_heads // num_kv_heads)``). Scores are ``q . k * scale`` with
    ``scale = 1/sqrt(d)`` unless given. Zero keys give zeros, never NaN.
    """
    q, k, v = to_f64(q), to_f64(k), to_f64(v)
    if q.ndim == 1:
        return attention_f64(q[None], k[:, None], v[:, None], scale)[0]
    num_heads, d = q.shape
    n, num_kv_heads = k.shape[0], k.shape[1]
    if num_heads % num_kv_heads:
        raise ValueError(f"num_heads={num_heads} is not a multiple of num_kv_heads={num_kv_heads}")
    scale = 1.0 / np.sqrt(d) if scale is None else scale
    group = num_heads // num_kv_heads
    out = np.zeros((num_heads, v.shape[-1]))
    if n == 0:
        return out
    for h in range(num_heads):
        kv = h // group
        scores = k[:, kv, :] @ q[h] * scale
        out[h] = softmax_f64(scores) @ v[:, kv, :]
    return out


def gather_f64(cache, block_table, seq_len: int) -> np.ndarray:
    """The first ``seq_len`` logical tokens of a paged cache, contiguous, in float64.

    Logical token ``t`` lives at ``cache[block_table[t // block_size], t % block_size]``.
    """
    cache = to_f64(cache)
    table = np.asarray(to_f64(block_table), dtype=np.int64)
    block_size = cache.shape[1]
    rows = [cache[table[t // block_size], t % block_size] for t in range(seq_len)]
    return np.stack(rows) if rows else np.zeros((0, *cache.shape[2:]))


def paged_attention_f64(q, k_cache, v_cache, block_table, seq_len: int) -> np.ndarray:
    """Attention over the first ``seq_len`` tokens of a paged cache, in float64."""
    k = gather_f64(k_cache, block_table, seq_len)
    v = gather_f64(v_cache, block_table, seq_len)
    return attention_f64(q, k, v)
