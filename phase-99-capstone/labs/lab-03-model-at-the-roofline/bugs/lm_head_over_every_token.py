"""The final norm and the head run over every token of the step, and the rows to sample are picked
after.

The tokens are right; a prefill step of 4096 tokens computes 4096 rows of 32000 logits to keep a few.
Only the launch count sees it: the head's product has the step's tokens as rows.
"""

CAUGHT_BY = ["test_each_step_removes_the_launches_it_promises"]

EDITS = [
    ("    rows = hidden.index_select(0, logits_indices)\n"
     "    stream = residual.index_select(0, logits_indices)  # a copy: the add below changes it, not the caller's\n",
     "    rows, stream = hidden, residual.clone()\n"),
    ("    row_logits = F.linear(normed, lm_head_weight)  # [rows to sample, padded_vocab], the model's dtype\n",
     "    row_logits = F.linear(normed, lm_head_weight).index_select(0, logits_indices)\n"),
]
