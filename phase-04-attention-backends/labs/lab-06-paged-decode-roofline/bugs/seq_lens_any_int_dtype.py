"""The input check lets int64 seq_lens through (any integer type looks like lengths).

Symptom: on a GPU the kernel, compiled for the pointer it is given, reads a different type
than the caller meant, or a later layer's kernel does; the mistake surfaces far from its cause
instead of as a clear ValueError naming paged_decode.
"""

CAUGHT_BY = ["test_bad_input_gets_a_clear_error"]

SOURCE = "_host.py"  # the input checks are given: they live in _host.py

EDIT = (
    "    if seq_lens.dtype != torch.int32 or tuple(seq_lens.shape) != (batch,):\n",
    "    if seq_lens.dtype not in (torch.int32, torch.int64) or tuple(seq_lens.shape) != (batch,):\n",
)
