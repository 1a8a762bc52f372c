"""Every program reads sequence 0's query (the sequence offset left out of the query pointer).

Symptom: sequence 0 is right, every other sequence's scores are its keys against the wrong
query.
"""

CAUGHT_BY = ["test_qk_triton_matches_float64_on_ragged_lengths", "test_qk_triton_fp16_inputs"]

EDIT = (
    '    q = tl.load(q_ptr + seq * head_dim + dims, mask=in_head, other=0.0).to(tl.float32)\n',
    '    q = tl.load(q_ptr + dims, mask=in_head, other=0.0).to(tl.float32)  # BUG: always sequence 0\n',
)
