"""The (out, lse) check lets a 0-d out through.

A 0-d out has no head_dim axis; from_out_lse then answers an acc of shape [1] built by broadcasting.
Symptom: from_out_lse of a 0-d out returns instead of raising a ValueError.
"""

CAUGHT_BY = ["test_from_out_lse_rejects_bad_input"]

SOURCE = "_checks.py"

EDIT = (
    "    if out.dim() < 1 or lse.shape != out.shape[:-1]:\n",
    "    if out.dim() < 0 or lse.shape != out.shape[:-1]:\n",
)
