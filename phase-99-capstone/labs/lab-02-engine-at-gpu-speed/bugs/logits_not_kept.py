"""With keep_logits on, update_from_output hands over the tokens but keeps no logits.

request.logits stays empty: whoever asked for the logits of each output token (the tests, an
evaluation) gets nothing.
"""

CAUGHT_BY = ["test_logits_match_generate_within_float32_tolerance"]

EDIT = (
    "            if self.keep_logits:\n"
    "                request.logits.append(model_output.logits[row[req_id]].clone())\n",
    "",
)
