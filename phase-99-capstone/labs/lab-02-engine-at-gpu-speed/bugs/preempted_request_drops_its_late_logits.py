"""A late token's logits are kept only when its request still runs.

update_from_output hands the token to a request preempted since its step was launched, as it should,
but keeps the logits behind it under the branch for running requests. Symptom: with ``keep_logits``, a
request preempted while a token was on its way ends with one row of logits fewer than output tokens.
"""

CAUGHT_BY = ["test_preempted_requests_keep_the_token_on_its_way"]

EDIT = (
    "            if self.keep_logits:\n"
    "                request.logits.append(model_output.logits[row[req_id]].clone())\n"
    "            if request.status is RequestStatus.RUNNING:\n",
    "            if request.status is RequestStatus.RUNNING:\n"
    "                if self.keep_logits:  # only a running request's logits\n"
    "                    request.logits.append(model_output.logits[row[req_id]].clone())\n",
)
