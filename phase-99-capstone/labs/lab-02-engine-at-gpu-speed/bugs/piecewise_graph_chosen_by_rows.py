"""The piecewise graph is chosen by the step's rows instead of its tokens.

A piecewise graph is captured per token count: a step of 5 tokens in 3 rows picked the graph of 4
tokens, too small for it (the runner refuses the plan); every prefill chunk longer than its batch is
wide would lose its last tokens.
"""

CAUGHT_BY = ["test_choose_graph_picks_the_smallest_graph_that_fits",
             "test_every_step_runs_from_a_graph_below_the_largest_size"]

EDIT = (
    "            size = self.piecewise_sizes[bisect.bisect_left(self.piecewise_sizes, shape.num_tokens)]\n",
    "            size = self.piecewise_sizes[bisect.bisect_left(self.piecewise_sizes, shape.num_reqs)]  # rows\n",
)
