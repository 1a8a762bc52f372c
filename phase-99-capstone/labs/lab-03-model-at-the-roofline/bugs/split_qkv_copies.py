"""split_qkv hands back copies of q, k and v (``.to(copy=True)``), not views of ``qkv``.

Every value is right, so the projections' test passes; but each layer of every step copies its q, k
and v once more (three more kernels, and ``qkv``'s bytes read and written again), which is what
splitting one merged GEMM's output was meant to avoid. The launch test counts ``clone`` only, and a
copy made with ``.to(copy=True)`` launches ``_to_copy``.
"""

CAUGHT_BY = ["test_split_qkv_gives_each_projection"]

EDIT = (
    "    q = qkv[:, :q_width].view(tokens, num_heads, head_dim)\n"
    "    k = qkv[:, q_width : q_width + kv_width].view(tokens, num_kv_heads, head_dim)\n"
    "    v = qkv[:, q_width + kv_width :].view(tokens, num_kv_heads, head_dim)\n",
    "    q = qkv[:, :q_width].view(tokens, num_heads, head_dim).to(qkv.device, copy=True)  # BUG: copies\n"
    "    k = qkv[:, q_width : q_width + kv_width].view(tokens, num_kv_heads, head_dim).to(qkv.device, copy=True)\n"
    "    v = qkv[:, q_width + kv_width :].view(tokens, num_kv_heads, head_dim).to(qkv.device, copy=True)\n",
)
