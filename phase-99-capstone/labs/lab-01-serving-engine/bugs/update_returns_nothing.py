"""update_from_output finishes and frees the requests but does not return them.

The engine's state is right (every request finished, freed, out of the running list), and the given
``step`` does not use the return value, so tokens and bookkeeping all pass; but the method's contract
is to return the requests finished in its step, which a caller driving the engine step by step (or
streaming finished requests back to clients) relies on. Symptom: update_from_output returns None.
"""

CAUGHT_BY = ["test_update_from_output_returns_the_requests_it_finished"]

EDIT = (
    "            self.running = [r for r in self.running if r.status is not RequestStatus.FINISHED]\n"
    "        return finished\n",
    "            self.running = [r for r in self.running if r.status is not RequestStatus.FINISHED]\n",
)
