"""Wrong GQA grouping: the program of KV head j takes query heads j, j + num_kv_heads, ...
(the interleaved ``h % num_kv_heads`` mapping) instead of j*g .. j*g + g - 1.
Symptom: right when num_heads == num_kv_heads, wrong heads everywhere else."""

import triton
import triton.language as tl

from labkit.bugs import solution_with

CAUGHT_BY = ["test_ragged_batch_matches_reference", "test_gqa_grouping"]


@triton.jit
def _partition_kernel(
    q_ptr, k_cache_ptr, v_cache_ptr, block_tables_ptr, seq_lens_ptr, scratch_ptr, out_ptr,
    partition_size, max_blocks, stride_block, stride_slot, stride_head,
    GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, BLOCK_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr,
    SCALE: tl.constexpr, TILE_N: tl.constexpr, FP32_DOT: tl.constexpr, PDL: tl.constexpr,
):
    seq = tl.program_id(0).to(tl.int64)
    kv_head = tl.program_id(1)
    split = tl.program_id(2)
    num_heads = tl.num_programs(1) * GROUP

    # Never past the block table, whatever seq_lens says.
    seq_len = tl.minimum(tl.load(seq_lens_ptr + seq), max_blocks * BLOCK_SIZE)
    start = split * partition_size
    if split > 0 and start >= seq_len:
        return  # this sequence has fewer splits than the grid: nothing to do
    end = tl.minimum(start + partition_size, seq_len)

    # The query heads that share this KV head, padded to >= 16 rows for tl.dot.
    rows = tl.arange(0, GROUP_PAD)
    row_ok = rows < GROUP
    heads = rows * tl.num_programs(1) + kv_head  # BUG: interleaved, h % num_kv_heads
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + (seq * num_heads + heads)[:, None] * HEAD_DIM + dims[None, :], mask=row_ok[:, None], other=0.0)

    m = tl.full([GROUP_PAD], float("-inf"), tl.float32)
    denom = tl.zeros([GROUP_PAD], tl.float32)
    acc = tl.zeros([GROUP_PAD, HEAD_DIM], tl.float32)

    table = block_tables_ptr + seq * max_blocks
    offs = tl.arange(0, TILE_N)
    for tile_start in range(start, end, TILE_N):
        token = tile_start + offs
        valid = token < end
        # Each token looks up its own physical block: one tile may span several blocks.
        block = tl.load(table + token // BLOCK_SIZE, mask=valid, other=0).to(tl.int64)
        rows_kv = block * stride_block + (token % BLOCK_SIZE) * stride_slot + kv_head * stride_head
        k = tl.load(k_cache_ptr + rows_kv[:, None] + dims[None, :], mask=valid[:, None], other=0.0)
        v = tl.load(v_cache_ptr + rows_kv[:, None] + dims[None, :], mask=valid[:, None], other=0.0)

        # [GROUP_PAD, TILE_N] scores: every query head of the group against every token.
        if FP32_DOT:
            scores = tl.dot(q, tl.trans(k), input_precision="ieee")
        else:
            scores = tl.dot(q, tl.trans(k))
        scores = tl.where(valid[None, :], scores * SCALE, float("-inf"))

        # Online softmax; every tile holds a valid token, so m_new is finite.
        m_new = tl.maximum(m, tl.max(scores, axis=1))
        correction = tl.exp(m - m_new)
        p = tl.exp(scores - m_new[:, None])
        denom = denom * correction + tl.sum(p, axis=1)
        if FP32_DOT:
            acc = acc * correction[:, None] + tl.dot(p, v, input_precision="ieee")
        else:
            acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)
        m = m_new

    if PDL:
        # This program's loads are done: once every program of the grid has said so (or
        # exited), the GPU may launch the reduce kernel, whose programs then wait in
        # gdc_wait for this grid to finish. Its launch overlaps this grid's tail.
        tl.extra.cuda.gdc_launch_dependents()

    if seq_len <= partition_size:
        # The whole sequence is this one split: nothing to merge, so divide here and
        # the reduce kernel skips this sequence. seq_len 0 gives zeros, not 0/0.
        out = acc / tl.where(denom > 0, denom, 1.0)[:, None]
        out_rows = (seq * num_heads + heads)[:, None] * HEAD_DIM + dims[None, :]
        tl.store(out_ptr + out_rows, out.to(out_ptr.dtype.element_ty), mask=row_ok[:, None])
    else:
        # The split's summary, unnormalized: the reduce kernel divides once, at the end.
        # scratch holds m [batch, num_heads, max_splits], then denom, then acc [..., HEAD_DIM].
        max_splits = tl.num_programs(2)
        n = tl.num_programs(0).to(tl.int64) * num_heads * max_splits
        state = (seq * num_heads + heads) * max_splits + split
        tl.store(scratch_ptr + state, m, mask=row_ok)
        tl.store(scratch_ptr + n + state, denom, mask=row_ok)
        tl.store(scratch_ptr + 2 * n + state[:, None] * HEAD_DIM + dims[None, :], acc, mask=row_ok[:, None])


globals().update(solution_with(__file__, _partition_kernel=_partition_kernel))
