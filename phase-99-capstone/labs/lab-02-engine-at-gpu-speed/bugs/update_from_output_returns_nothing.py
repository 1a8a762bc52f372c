"""update_from_output finishes the right requests but returns nothing.

The engine's own step ignores the answer, so every token is right; a caller that asks which requests
the output finished (a server streaming its final responses) gets None. Symptom: the tokens and the
pool are right, and ``update_from_output(...)`` is None where its docstring promises the finished
requests.
"""

CAUGHT_BY = ["test_update_from_output_returns_the_requests_it_finished"]

EDIT = (
    "        return finished\n",
    "        # (the engine's step ignores the answer)\n",
)
