"""Kernel input check written as if ``seq_lens`` held the prefix alone, not prefix + chunk.

The check "a chunk fits in its sequence" becomes ``query_len <= seq_len + query_len``, always
true, so a ``seq_lens`` entry shorter than its chunk goes through: negative positions, rows
that see no key at all, 0/0 = NaN in the output, and no error naming the argument. vLLM's
``seq_lens`` (and this lab's) count the chunk too: the prefix is ``seq_len - query_len``.
"""

# The value checks run for CPU tensors only: on a GPU they would cost a synchronization per call.
SHOWS_ON = ["cpu"]

CAUGHT_BY = ["test_kernel_bad_input_gets_a_clear_error"]

SOURCE = "_prefill_checks.py"  # a given check, edited

EDIT = (
    "    if bool((query_lens > lens).any()):\n",
    "    if bool((query_lens > lens + query_lens).any()):  # BUG: seq_lens taken for the prefix alone\n",
)
