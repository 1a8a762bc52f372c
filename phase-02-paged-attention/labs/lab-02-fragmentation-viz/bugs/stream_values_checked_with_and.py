"""_check_stream refuses a stream only when it has a negative arrival and an empty prompt or answer.

``or`` became ``and``: each condition alone is an error. Symptom: no ValueError for a negative
arrival step (or for a prompt of 0 tokens) on its own.
"""

CAUGHT_BY = ["test_each_bad_argument_is_named"]

SOURCE = "_stream.py"  # the given checks

EDIT = (
    "    if np.any(stream[:, 0] < 0) or np.any(stream[:, 1:] < 1):\n",
    "    if np.any(stream[:, 0] < 0) and np.any(stream[:, 1:] < 1):\n",
)
