"""The given QK check takes "not floating point" for "integer": boolean seq_lens pass as lengths 1 and 0.

A mask passed where the lengths belong (``seq_lens > 0``, say) is read as lengths of one token and
none. Symptom: scores for the first token of some sequences and -inf everywhere else, instead of a
ValueError naming seq_lens.
"""

CAUGHT_BY = ["test_qk_rejects_bad_input"]

SOURCE = "_walkthrough_checks.py"  # the given input checks

EDIT = (
    "    if lens.dtype == torch.bool or lens.is_complex():  # a mask passed for the lengths would read as 0s and 1s\n"
    "        raise ValueError(f\"seq_lens must be integers; got dtype {lens.dtype}\")\n",
    "",
)
