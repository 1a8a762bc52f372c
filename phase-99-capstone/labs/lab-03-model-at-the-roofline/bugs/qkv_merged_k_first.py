"""The merged projection stacked k, q, v instead of q, k, v.

Each slice of the GEMM's output is then another projection's: the "queries" are the key heads and
the first query heads, the "keys" are query heads. Nothing crashes; every token is wrong.
"""

CAUGHT_BY = ["test_merged_weights_hold_the_layers_weights", "test_tokens_and_logits_match_generate"]

EDIT = (
    "            qkv=torch.cat([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight]),\n",
    "            qkv=torch.cat([attn.k_proj.weight, attn.q_proj.weight, attn.v_proj.weight]),\n",
)
