"""default_capture_sizes appends the budget only when it is already among the sizes.

The condition's ``not in`` turned into ``in``: a budget that is the cut and not a multiple of 8
(20, say) never becomes a size, and a budget already there is appended twice (the runner drops the
copy). Symptom: with the default sizes and a budget of 20, the piecewise graphs stop at 16 tokens, and
every step of 17 to 20 tokens runs eagerly.
"""

CAUGHT_BY = ["test_default_graph_sizes_end_at_the_budget"]

SOURCE = "_model_runner.py"  # the given model runner

EDIT = (
    "    if top == max_num_batched_tokens and top not in sizes:\n",
    "    if top == max_num_batched_tokens and top in sizes:\n",
)
