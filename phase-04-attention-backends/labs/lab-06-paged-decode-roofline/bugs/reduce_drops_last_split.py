"""The reduce counts splits with floor(seq_len / partition_size), so the last, partly filled
split of a sequence is never merged. Symptom: right when every length is a multiple of the
partition, wrong otherwise (and zeros for sequences shorter than one partition)."""

import triton
import triton.language as tl

from labkit.bugs import solution_with

CAUGHT_BY = ["test_every_split_count_gives_the_same_answer", "test_empty_and_one_token_sequences"]


@triton.jit
def _reduce_kernel(
    scratch_ptr, out_ptr, seq_lens_ptr, partition_size, capacity, max_splits,
    HEAD_DIM: tl.constexpr, SPLIT_TILE: tl.constexpr, PDL: tl.constexpr,
):
    seq = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)
    num_heads = tl.num_programs(1)

    seq_len = tl.minimum(tl.load(seq_lens_ptr + seq), capacity)
    if PDL:
        # Launched before the partition kernel finished (programmatic dependent launch):
        # wait here until all of its programs are done and their summaries visible. Every
        # program waits, even one with nothing to merge, so when this kernel is complete
        # the partition kernel is too, and later work on the stream can rely on both.
        tl.extra.cuda.gdc_wait()
    num_splits = seq_len // partition_size  # BUG: drops the last partial split
    if num_splits <= 1:
        return  # the partition kernel wrote this sequence's output itself

    n = tl.num_programs(0).to(tl.int64) * num_heads * max_splits
    state = (seq * num_heads + head) * max_splits
    dims = tl.arange(0, HEAD_DIM)
    offs = tl.arange(0, SPLIT_TILE)
    m = float("-inf")
    denom = 0.0
    acc = tl.zeros([HEAD_DIM], tl.float32)
    for first in range(0, num_splits, SPLIT_TILE):
        split = first + offs
        exists = split < num_splits
        m_s = tl.load(scratch_ptr + state + split, mask=exists, other=float("-inf"))
        d_s = tl.load(scratch_ptr + n + state + split, mask=exists, other=0.0)
        a_s = tl.load(scratch_ptr + 2 * n + (state + split)[:, None] * HEAD_DIM + dims[None, :],
                      mask=exists[:, None], other=0.0)
        # Lab 04-04's merge: rescale every summary to the shared max, then add.
        m_new = tl.maximum(m, tl.max(m_s, axis=0))
        weight = tl.exp(m_s - m_new)  # 0 where the split does not exist
        correction = tl.exp(m - m_new)
        denom = denom * correction + tl.sum(weight * d_s, axis=0)
        acc = acc * correction + tl.sum(weight[:, None] * a_s, axis=0)
        m = m_new

    out = acc / denom  # > 0: at least two splits, each with a valid token
    tl.store(out_ptr + (seq * num_heads + head) * HEAD_DIM + dims, out.to(out_ptr.dtype.element_ty))


globals().update(solution_with(__file__, _reduce_kernel=_reduce_kernel))
