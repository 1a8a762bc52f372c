"""Kernel: a tile's query rows are counted from row 0 of ``q``, not from its chunk's start.

The chunks are packed one after another in ``q``; token ``j`` of sequence ``s`` is row
``query_start_loc[s] + j``. Without the chunk's start, every sequence attends with the first
chunk's queries (and reads past its end into the next chunk's). Right for a batch of one.
"""

CAUGHT_BY = ["test_kernel_ragged_batch", "test_kernel_one_token_chunks_are_decode_steps"]

EDIT = (
    "    q_rows = (chunk_start + token).to(tl.int64) * stride_q_token + head.to(tl.int64) * stride_q_head\n",
    "    q_rows = token.to(tl.int64) * stride_q_token + head.to(tl.int64) * stride_q_head  # BUG: from row 0 of q\n",
)
