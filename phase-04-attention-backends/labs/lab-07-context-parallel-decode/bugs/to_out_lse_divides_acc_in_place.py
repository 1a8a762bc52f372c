"""to_out_lse divides acc in place (acc.div_) to save a tensor.

The caller's accumulator becomes the rank's output. Symptom: to_out_lse's own test reports its
input acc modified; in the distributed tests the caller's acc changes during the given
combine_all_gather, and the message says it is to_out_lse, which that function calls, that writes.
"""

CAUGHT_BY = [
    "test_combine_keeps_dtype_and_leaves_the_summaries_alone",
    "test_to_out_lse_is_the_output_and_the_log_sum_exp",
]

EDIT = (
    '    out = acc / safe_denom.unsqueeze(-1)  # acc is zeros where nothing was seen\n',
    '    out = acc.div_(safe_denom.unsqueeze(-1))  # no new tensor\n',
)
