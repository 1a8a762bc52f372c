"""Reference expands KV heads with .repeat instead of .repeat_interleave.

``k.repeat(1, group, 1)`` lays the KV heads out as [kv0, kv1, kv0, kv1, ...], so query
head h reads KV head h % num_kv_heads; the convention (and every engine) is
h // group, which ``repeat_interleave`` gives: [kv0, kv0, ..., kv1, kv1, ...].
Symptom: right for multi-head and multi-query attention, wrong for grouped-query heads.
"""

import math

import torch

from labkit.bugs import solution_with

CAUGHT_BY = ["test_grouped_query_heads", "test_torch_reference_matches_dense_fp32"]


def paged_attention_torch(q, k_cache, v_cache, block_table, seq_len):
    _check_inputs(q, k_cache, v_cache, block_table, seq_len, for_triton=False)  # noqa: F821 (from the solution)
    num_heads, head_dim = q.shape
    num_blocks, block_size, num_kv_heads, _ = k_cache.shape
    if seq_len == 0:
        return torch.zeros_like(q)
    table = block_table.tolist()
    rows = [table[t // block_size] * block_size + t % block_size for t in range(seq_len)]
    k = k_cache.reshape(num_blocks * block_size, num_kv_heads, head_dim)[rows].float()
    v = v_cache.reshape(num_blocks * block_size, num_kv_heads, head_dim)[rows].float()
    group = num_heads // num_kv_heads
    k = k.repeat(1, group, 1)  # BUG: head h gets KV head h % num_kv_heads
    v = v.repeat(1, group, 1)
    scores = torch.einsum("hd,thd->ht", q.float(), k) / math.sqrt(head_dim)
    return torch.einsum("ht,thd->hd", torch.softmax(scores, dim=-1), v).to(q.dtype)


globals().update(solution_with(__file__, paged_attention_torch=paged_attention_torch))
