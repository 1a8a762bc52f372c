"""The fused kernel writes ``x + residual`` back, but norms ``x`` alone.

The residual stream is right; the next sub-layer sees the norm of one layer's output instead of the
norm of the whole stream.
"""

CAUGHT_BY = ["test_fused_add_rms_norm_returns_the_new_residual_and_its_norm", "test_tokens_and_logits_match_generate"]

EDITS = [
    ("        x = (x.to(tl.float32) + residual.to(tl.float32)).to(residual.dtype)\n"
     "        tl.store(res_ptrs, x, mask=mask)\n",
     "        tl.store(res_ptrs, (x.to(tl.float32) + residual.to(tl.float32)).to(residual.dtype), mask=mask)\n"),
]
