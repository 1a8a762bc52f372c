"""to_out_lse leaves out the given check of its summaries.

numpy arrays then fail inside torch with a TypeError, summaries of two dtypes are silently promoted,
shapes that do not fit broadcast or fail deep inside, and tensors on two devices raise torch's
RuntimeError. Symptom: to_out_lse of a numpy m raises a TypeError instead of a ValueError naming
torch.Tensor.
"""

CAUGHT_BY = ["test_to_out_lse_rejects_bad_input"]

EDIT = (
    '    _check_summaries("to_out_lse", m, denom, acc)\n',
    "",
)
