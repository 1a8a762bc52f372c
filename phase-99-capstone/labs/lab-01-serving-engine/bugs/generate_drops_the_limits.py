"""generate queues each prompt without its max_new_tokens: every request gets add_request's default.

Symptom: every request generates 16 tokens, whatever ``max_new_tokens`` (one int or a dict by
request id) asked for.
"""

CAUGHT_BY = ["test_generate_serves_each_prompt_to_its_end"]

SOURCE = "_engine_base.py"  # the given engine half

EDIT = (
    "                queued.append(self.add_request(request_id, prompt, limit))\n",
    "                queued.append(self.add_request(request_id, prompt))\n",
)
