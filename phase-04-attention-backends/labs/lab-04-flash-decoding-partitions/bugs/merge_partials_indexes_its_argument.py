"""merge_partials takes its argument for a list: it reads ``partials[0]`` and ``partials[1:]``.

The docstring accepts the summaries in any iterable (the given code makes a list of them first);
a generator of summaries, the natural way to hand over one per split, has no ``[0]``. Symptom:
merge_partials of a generator raises instead of answering.
"""

CAUGHT_BY = ["test_summaries_in_any_number_form_merge_in_float64"]

EDIT = (
    "        partials = list(partials)\n",
    "        len(partials)  # a list already\n",
)
