"""The padding rows keep last step's logits_indices: the graph samples rows past its tokens.

A piecewise graph of 8 tokens and 8 rows, run for 3 rows, gathers the hidden states of rows 3 to 7 at
the indices the last step left there, which may lie past its 8 tokens.
"""

CAUGHT_BY = ["test_graph_padding_is_harmless"]

EDIT = (
    "        b.logits_indices.np[r : plan.num_reqs] = 0\n",
    "",
)
