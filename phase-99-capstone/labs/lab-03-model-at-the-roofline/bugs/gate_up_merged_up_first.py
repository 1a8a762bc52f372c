"""The MLP's merged weight stacked up before gate: SiLU then runs on the up projection.

``silu_and_mul`` takes the first half as the gate, so the activation lands on the wrong projection:
``silu(up) * gate`` instead of ``silu(gate) * up``. Same shapes, wrong model.
"""

CAUGHT_BY = ["test_merged_weights_hold_the_layers_weights", "test_tokens_and_logits_match_generate"]

EDIT = (
    "            gate_up=torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]),\n",
    "            gate_up=torch.cat([mlp.up_proj.weight, mlp.gate_proj.weight]),\n",
)
