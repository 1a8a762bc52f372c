"""The splits' running maxima and sums allocated in ``q``'s dtype instead of float32.

Right in float32. In float16 the partition kernel's float32 max and sum of each split are rounded on
their way to the reduce: near a score of 1000 the max moves in steps of 0.5, while the split's sums
were taken against the exact max, so the reduce weighs each split by up to exp(0.25) too much or too
little and the output drifts by a tenth of the values' scale.
"""

CAUGHT_BY = ["test_decode_attention_contract"]

EDIT = (
    "    m = torch.empty((batch, num_heads, max_splits), dtype=torch.float32, device=q.device)\n",
    "    m = torch.empty((batch, num_heads, max_splits), dtype=q.dtype, device=q.device)\n",
)
