"""A decode-only step wider than the largest full graph is sent to that graph.

The graph runs as many rows as it was captured with: a decode batch of 10 rows replayed from the graph
of 8 would drop two (the runner refuses the plan). Such a step is "any other step": a piecewise graph
if one is large enough, else eager.
"""

CAUGHT_BY = ["test_choose_graph_picks_the_smallest_graph_that_fits", "test_sizes_at_the_api_limits"]

EDITS = [
    ("        if shape.uniform_decode and self.full_sizes and shape.num_reqs <= self.full_sizes[-1]:\n"
     "            size = self.full_sizes[bisect.bisect_left(self.full_sizes, shape.num_reqs)]\n",
     "        if shape.uniform_decode and self.full_sizes:\n"
     "            index = min(bisect.bisect_left(self.full_sizes, shape.num_reqs), len(self.full_sizes) - 1)\n"
     "            size = self.full_sizes[index]  # the largest when none is wide enough\n"),
]
