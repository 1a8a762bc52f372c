"""Reference gathers whole blocks: the torch reference copies every slot of each block it
visits, the empty tail slots of the last block included.

Symptom: the "obviously correct" debugger is wrong exactly where the kernel is hardest
(seq_len not a multiple of block_size), so it agrees with a kernel that has the same
missing tail mask. The tests compare with float64 dense attention, never with this
function, and the poisoned tail slots make the error loud.
"""

import math

import torch

from labkit.bugs import solution_with

CAUGHT_BY = ["test_torch_reference_matches_dense_fp32", "test_source_example_130_tokens_in_9_scattered_blocks"]


def paged_attention_torch(q, k_cache, v_cache, block_table, seq_len):
    _check_inputs(q, k_cache, v_cache, block_table, seq_len, for_triton=False)  # noqa: F821 (from the solution)
    num_heads, head_dim = q.shape
    num_kv_heads = k_cache.shape[2]
    block_size = k_cache.shape[1]
    if seq_len == 0:
        return torch.zeros_like(q)
    table = block_table.tolist()
    num_logical = -(-seq_len // block_size)
    k = torch.cat([k_cache[table[i]] for i in range(num_logical)]).float()  # BUG: whole blocks, tail included
    v = torch.cat([v_cache[table[i]] for i in range(num_logical)]).float()
    group = num_heads // num_kv_heads
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    scores = torch.einsum("hd,thd->ht", q.float(), k) / math.sqrt(head_dim)
    return torch.einsum("ht,thd->hd", torch.softmax(scores, dim=-1), v).to(q.dtype)


globals().update(solution_with(__file__, paged_attention_torch=paged_attention_torch))
