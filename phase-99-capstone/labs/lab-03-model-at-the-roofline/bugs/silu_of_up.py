"""SiLU applied to the up projection, the gate taken as the multiplier: ``silu(up) * gate``.

The two halves are loaded the wrong way round. Same shapes, same cost, another MLP.
"""

CAUGHT_BY = ["test_silu_and_mul_matches_float64", "test_tokens_and_logits_match_generate"]

EDITS = [
    ("    gate = tl.load(gate_ptrs, mask=mask, other=0.0)\n",
     "    gate = tl.load(gate_ptrs + width, mask=mask, other=0.0)\n"),
    ("    up = tl.load(gate_ptrs + width, mask=mask, other=0.0)\n",
     "    up = tl.load(gate_ptrs, mask=mask, other=0.0)\n"),
]
