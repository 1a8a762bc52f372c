"""from_out_lse leaves out the given check of out and lse.

numpy arrays then fail inside torch with a TypeError, and shapes that do not fit broadcast or fail
deep inside. Symptom: from_out_lse of numpy arrays raises a TypeError instead of a ValueError naming
torch.Tensor.
"""

CAUGHT_BY = ["test_from_out_lse_rejects_bad_input"]

EDIT = (
    "    _check_out_lse(out, lse)\n",
    "",
)
