"""Kernel launch: the output's rows addressed with q's strides.

The output is "shaped like q", and for contiguous tensors it has q's strides too. But q may be a
slice of the fused ``qkv`` projection and ``out`` a tensor of its own (or the other way round):
then each token's output lands in another token's row. Symptom: right whenever q and out are laid
out alike; wrong rows, and sentinels overwritten, when one of them is a view.
"""

CAUGHT_BY = ["test_kernel_memory_layouts_engines_pass"]

EDIT = (
    "        q.stride(0), q.stride(1), out.stride(0), out.stride(1),\n",
    "        q.stride(0), q.stride(1), q.stride(0), q.stride(1),  # out laid out like q?\n",
)
