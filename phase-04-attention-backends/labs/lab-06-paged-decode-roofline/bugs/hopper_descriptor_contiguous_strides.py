"""Hopper kernel: the descriptor built with the strides of a contiguous cache, not the cache's own.

A tensor descriptor tells the copy engine how to walk memory: shape *and* strides. Written from the
shape alone (``block_size * num_kv_heads * head_dim``, ...), it is right for a contiguous pool and
wrong for the views engines pass, K and V as ``kv[:, 0]``, ``kv[:, 1]`` of one fused pool or a pool
stored heads-outside-slots: the boxes land on other blocks' rows. Symptom: right on contiguous
caches, wrong (or NaN from the poison beside the views) on every view.
"""

SOURCE = "going-further/hopper_decode.py"

CAUGHT_BY = ["test_memory_layouts_engines_pass"]

EDIT = (
    "    return TensorDescriptor(cache, list(cache.shape), list(cache.stride()), [1, block_size, 1, head_dim])\n",
    "    strides = [math.prod(cache.shape[i + 1:]) for i in range(4)]  # as if contiguous\n"
    "    return TensorDescriptor(cache, list(cache.shape), strides, [1, block_size, 1, head_dim])\n",
)
