"""Kernel launch: q's token stride taken as ``num_heads * head_dim``, as if q were contiguous.

Engines slice q out of the fused ``qkv`` projection: its rows are ``(num_heads + 2 * num_kv_heads)
* head_dim`` apart. Symptom: right for a contiguous q; with a slice of qkv every token after the
first reads its queries out of another token's row, or out of its keys and values.
"""

CAUGHT_BY = ["test_kernel_memory_layouts_engines_pass"]

EDIT = (
    "        q.stride(0), q.stride(1), out.stride(0), out.stride(1),\n",
    "        num_heads * head_dim, q.stride(1), out.stride(0), out.stride(1),  # as if q were contiguous\n",
)
