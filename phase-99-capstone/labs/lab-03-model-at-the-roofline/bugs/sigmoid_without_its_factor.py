"""The sigmoid of the gate instead of SiLU: ``1 / (1 + exp(-g))`` without the factor ``g``.

Between 0 and 1 whatever the gate, where SiLU grows with it: the MLP's output is scaled wrong
everywhere except where the gate is near 1.
"""

CAUGHT_BY = ["test_silu_and_mul_matches_float64"]

EDIT = (
    "    act = (g / (1.0 + tl.exp(-g))).to(gate.dtype).to(tl.float32)\n",
    "    act = (1.0 / (1.0 + tl.exp(-g))).to(gate.dtype).to(tl.float32)\n",
)
