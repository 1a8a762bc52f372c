"""The "nothing runs, yet a request waits" guard reads the second request of the queue.

On an idle step (the pool empty, the next request not arrived yet) with one request in the queue,
``waiting[1]`` does not exist. Symptom: IndexError "deque index out of range" on the first step
where nothing runs and exactly one request is still to come.
"""

CAUGHT_BY = ["test_idle_steps"]

EDIT = (
    "        if not tables and waiting and arrival[waiting[0]] <= t:  # an empty pool fits any one request\n",
    "        if not tables and waiting and arrival[waiting[1]] <= t:  # an empty pool fits any one request\n",
)
