"""A step is sent to a full decode graph whenever its rows fit one, decode-only or not.

A full graph runs one token per row: a step of 3 rows and 5 tokens replays the graph of 4 rows, which
takes the first 4 tokens as 4 decodes. Chunks lose tokens and rows read the wrong ones.
"""

CAUGHT_BY = ["test_choose_graph_picks_the_smallest_graph_that_fits", "test_tokens_match_generate"]

EDIT = (
    "        if shape.uniform_decode and self.full_sizes and shape.num_reqs <= self.full_sizes[-1]:\n",
    "        if self.full_sizes and shape.num_reqs <= self.full_sizes[-1]:  # decode-only or not\n",
)
