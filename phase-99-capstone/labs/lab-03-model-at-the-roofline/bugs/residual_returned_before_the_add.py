"""The fused kernel norms ``x + residual`` but writes the old residual back.

The output is right for this layer; the residual stream never grows, so the next layer adds its
output to a stream that misses this one.
"""

CAUGHT_BY = ["test_fused_add_rms_norm_returns_the_new_residual_and_its_norm", "test_tokens_and_logits_match_generate"]

EDIT = (
    "        tl.store(res_ptrs, x, mask=mask)\n",
    "        tl.store(res_ptrs, residual, mask=mask)\n",
)
