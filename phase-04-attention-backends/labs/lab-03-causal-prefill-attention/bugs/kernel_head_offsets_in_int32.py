"""Kernel: head indices stay int32, so ``head * stride_q_head`` (and out's, and the caches' KV
head) wraps around once a view's heads lie far apart.

The block ids are widened to int64 before they multiply their stride, but the head indices are
not. Right for every layout whose heads sit next to each other (a head's stride is head_dim, or a
block's slots); for a view stored heads outermost, whose heads lie 2**30 elements apart, head 2's
offset is 2**31: in int32 a negative number. Symptom: the kernel reads or writes far outside the
tensor (the interpreter's process crashes), or another head's rows.
"""

CAUGHT_BY = ["test_kernel_heads_further_apart_than_2_31_elements"]

EDITS = [
    (
        "+ (t % BLOCK_SIZE) * stride_slot + kv_head.to(tl.int64) * stride_kv_head\n",
        "+ (t % BLOCK_SIZE) * stride_slot + kv_head * stride_kv_head\n",
    ),
    (
        "    q_rows = (chunk_start + token).to(tl.int64) * stride_q_token + head.to(tl.int64) * stride_q_head\n",
        "    q_rows = (chunk_start + token).to(tl.int64) * stride_q_token + head * stride_q_head\n",
    ),
    (
        "    out_rows = (chunk_start + token).to(tl.int64) * stride_out_token + head.to(tl.int64) * stride_out_head\n",
        "    out_rows = (chunk_start + token).to(tl.int64) * stride_out_token + head * stride_out_head\n",
    ),
]
