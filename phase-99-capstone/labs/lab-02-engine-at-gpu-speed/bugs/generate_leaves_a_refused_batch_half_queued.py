"""The given generate notes nothing of what it queued, so a refused batch stays half queued.

When a later prompt of the batch is refused, the ValueError comes out, but the prompts before it are
still in the waiting queue. Symptom: sending the corrected batch again fails with "request_id ... is
already taken", and the next run also serves the requests of the batch that was refused.
"""

CAUGHT_BY = ["test_generate_refuses_a_bad_batch_and_queues_none_of_it"]

SOURCE = "_gpu_engine_base.py"  # the given half of the engine

EDIT = (
    "                queued.append(self.add_request(request_id, prompt, limit))\n",
    "                self.add_request(request_id, prompt, limit)  # nothing noted to take back\n",
)
