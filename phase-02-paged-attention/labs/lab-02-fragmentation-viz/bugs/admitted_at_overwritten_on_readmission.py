"""A preempted request's admission step is overwritten when it is admitted again.

admitted_at is the step a request was first admitted (the README's timeline): its wait is
admitted_at - arrival. Overwritten at readmission, a preempted request looks as if it had waited
all that time in the queue, and the mean wait grows with the preemptions. Symptom: admitted_at
of a preempted request is its readmission step.
"""

CAUGHT_BY = ["test_serve_paged_preempts_the_newest_request", "test_serve_paged_matches_brute_force"]

EDIT = (
    "            if timeline[\"admitted_at\"][r] < 0:\n"
    "                timeline[\"admitted_at\"][r] = t\n",
    "            timeline[\"admitted_at\"][r] = t  # every admission, readmissions too\n",
)
