"""The logits are read from the runner's device buffer, not from the step's own copy of them.

The device buffer is rewritten by every step. With the host one step ahead, by the time the host reads
step N's logits step N+1 may have run already: under the lazy timing it has not (the logits are right),
under the eager one it has (they are the next step's).
"""

CAUGHT_BY = ["test_logits_match_generate_within_float32_tolerance"]

EDIT = (
    "                request.logits.append(model_output.logits[row[req_id]].clone())\n",
    "                request.logits.append(self.runner.buffers.logits[row[req_id]].clone())  # live buffer\n",
)
