"""The wrapper cleans k's padding in place (``k.nan_to_num_()``) before the launch.

Symptom: the scores are right (the padding is masked anyway), but ``.contiguous()`` of a
contiguous tensor is the tensor itself, so the caller's cache has had its NaN and inf
replaced: a later reader that relies on them (a poison check, a debugging dump) is fooled.
"""

CAUGHT_BY = ["test_qk_triton_leaves_its_inputs_unchanged"]

EDIT = (
    '    q, k, seq_lens, scale = _check_qk_inputs(q, k, seq_lens, scale)\n'
    '    num_seqs, max_len, head_dim = k.shape\n',
    '    q, k, seq_lens, scale = _check_qk_inputs(q, k, seq_lens, scale)\n'
    "    k.nan_to_num_(0.0)  # BUG: writes into the caller's k\n"
    '    num_seqs, max_len, head_dim = k.shape\n',
)
