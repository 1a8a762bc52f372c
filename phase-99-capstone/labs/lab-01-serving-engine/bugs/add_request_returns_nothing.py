"""add_request queues the request but does not return it.

A caller that keeps the returned request (to read its tokens as they come) gets None. Symptom:
add_request returns None.
"""

CAUGHT_BY = ["test_add_request_accepts_and_refuses_at_its_edges"]

SOURCE = "_engine_base.py"  # the given engine half

EDIT = (
    "        self.waiting.append(request)\n        return request\n",
    "        self.waiting.append(request)\n",
)
