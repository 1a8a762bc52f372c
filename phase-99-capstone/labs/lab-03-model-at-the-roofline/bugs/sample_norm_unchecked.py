"""The checks of ``sample_greedy`` skip its final norm's arguments (hidden, residual, norm_weight, eps).

Symptom: a hidden state of the wrong shape (1-D) fails on an index deep in the other checks (an
IndexError) instead of a ValueError that names sample_greedy and the argument.
"""

CAUGHT_BY = ["test_bad_input_names_the_argument"]

SOURCE = "_kernel_host.py"  # the input checks are given: they live in _kernel_host.py

EDIT = (
    "    check_rms_norm(fn, hidden, norm_weight, eps, None, residual)\n    _tensor(fn, \"logits_indices\"",
    "    # BUG: the norm's arguments are not checked\n    _tensor(fn, \"logits_indices\"",
)
