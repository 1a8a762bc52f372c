"""Admission skips a waiting request whose tokens do not fit and admits the ones behind it.

First come, first served breaks: small late requests overtake a large one at the head of the queue,
which may then wait for ever while newcomers keep taking the blocks it needs. The tokens stay right; the
order of the schedule shows it.
"""

CAUGHT_BY = ["test_admission_stops_at_the_first_request_that_does_not_fit"]

EDITS = [
    ("        while self.waiting and budget > 0 and len(self.running) < self.max_num_seqs and not "
     "output.preempted_req_ids:\n            request = self.waiting[0]\n",
     "        for request in list(self.waiting):  # every waiting request gets its chance\n"
     "            if budget <= 0 or len(self.running) >= self.max_num_seqs or output.preempted_req_ids:\n"
     "                break\n"),
    ("                break  # not enough blocks: it waits, and so does everyone behind it\n"
     "            self.waiting.popleft()\n",
     "                continue  # not enough blocks: the next one may fit\n"
     "            self.waiting.remove(request)\n"),
]
