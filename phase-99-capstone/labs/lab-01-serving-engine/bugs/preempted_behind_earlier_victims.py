"""A preempted request goes back to the queue behind the requests preempted before it that still wait.

It ran more recently than anyone in the queue, so it belongs at the very head (vLLM prepends it); put
behind the earlier victims, it is readmitted after them. The tokens stay right; the queue's order does
not, and only while two victims wait at once. Symptom: a waiting queue [c, b] where the plan has [b, c],
and c admitted before b.
"""

CAUGHT_BY = ["test_a_new_victim_goes_ahead_of_an_earlier_one_still_waiting"]

EDIT = (
    "        self.waiting.appendleft(request)\n",
    "        # BUG: behind the earlier victims that still wait, instead of at the very head\n"
    "        victims = [r for r in self.waiting if r.status == RequestStatus.PREEMPTED]\n"
    "        at = next((i for i, r in enumerate(self.waiting) if r not in victims), len(self.waiting))\n"
    "        self.waiting.insert(at, request)\n",
)
