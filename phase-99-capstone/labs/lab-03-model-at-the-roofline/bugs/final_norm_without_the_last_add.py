"""The final norm taken of the residual stream before the last layer's MLP output is added to it.

The head then reads a stream that misses the last MLP: the logits of a shallower model.
"""

CAUGHT_BY = ["test_sample_greedy_samples_the_rows_asked_for", "test_tokens_and_logits_match_generate"]

EDIT = (
    "    normed, _ = fused_add_rms_norm(rows, stream, norm_weight, eps)\n",
    "    normed = rms_norm(stream, norm_weight, eps)\n",
)
