"""Every graph step replays the largest captured graph instead of the smallest that fits.

The tokens stay right (the padding is harmless), but a decode step of 3 rows computes 8, and a
piecewise step of 5 tokens computes 64: the graphs exist to save launches, and this spends the time
again on padding.
"""

CAUGHT_BY = ["test_choose_graph_picks_the_smallest_graph_that_fits"]

EDIT = (
    "            size = self.full_sizes[bisect.bisect_left(self.full_sizes, shape.num_reqs)]\n",
    "            size = self.full_sizes[-1]  # the largest, whatever the step\n",
)
