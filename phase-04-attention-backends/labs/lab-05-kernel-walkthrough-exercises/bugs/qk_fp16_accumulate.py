"""q and k kept in fp16 through the dot product: products and sums rounded to 11 bits.

Symptom: scores off by a few 1e-3 on 128-long dots of fp16 inputs, and by whole units for
scores near +-1000 (fp16's step at 11,000 is 8); the kernel converts each loaded vector to
fp32 before it multiplies.
"""

CAUGHT_BY = ["test_qk_triton_fp16_inputs", "test_qk_triton_very_large_scores"]

EDITS = [
    (
        '    q = tl.load(q_ptr + seq * head_dim + dims, mask=in_head, other=0.0).to(tl.float32)\n',
        '    q = tl.load(q_ptr + seq * head_dim + dims, mask=in_head, other=0.0)  # BUG: stays fp16\n',
    ),
    (
        '        k = tl.load(rows, mask=valid[:, None] & in_head[None, :], other=0.0).to(tl.float32)\n',
        '        k = tl.load(rows, mask=valid[:, None] & in_head[None, :], other=0.0)  # BUG: stays fp16\n',
    ),
]
