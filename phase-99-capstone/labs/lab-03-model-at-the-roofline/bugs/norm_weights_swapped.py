"""The two RMSNorm weights of a layer swapped: the input norm's weight scales the MLP's input.

With transformers' initial weights (all ones) nobody would notice; with trained ones (here, weights
drawn in [0.5, 1.5]) every layer's input is scaled wrong.
"""

CAUGHT_BY = ["test_merged_weights_hold_the_layers_weights", "test_tokens_and_logits_match_generate"]

EDITS = [
    ("            input_norm=layer.input_layernorm.weight.detach(),\n",
     "            input_norm=layer.post_attention_layernorm.weight.detach(),\n"),
    ("            post_norm=layer.post_attention_layernorm.weight.detach(),\n",
     "            post_norm=layer.input_layernorm.weight.detach(),\n"),
]
