"""Scores past seq_len written as 0 instead of -inf.

vLLM's kernel does store 0 in its logits buffer for the masked tail, and its value loop
reads those slots back, as zero probabilities, because its exponentials were computed for
the valid tokens only. Here the scores are the output: 0 is a real score, and a softmax over
the row gives the padding the weight exp(0 - max).
"""

CAUGHT_BY = ["test_qk_triton_writes_minus_inf_past_seq_len", "test_qk_triton_matches_float64_on_ragged_lengths"]

EDIT = (
    '        tl.store(scores_ptr + seq * max_len + t, tl.where(valid, s, float("-inf")), mask=t < max_len)\n',
    '        tl.store(scores_ptr + seq * max_len + t, tl.where(valid, s, 0.0), mask=t < max_len)  # BUG: 0\n',
)
