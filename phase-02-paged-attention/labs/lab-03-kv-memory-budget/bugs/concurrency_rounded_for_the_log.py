"""max_concurrency returns the concurrency rounded to two decimals, as vLLM's log line prints it.

"54.39x" is the log's way to show it; the number itself is 27904 / 513 = 54.3937... Symptom: 54.39
where 54.3937 is expected (a relative error of 7e-5, far above rounding).
"""

CAUGHT_BY = ["test_max_concurrency", "test_the_whole_budget_of_an_h100"]

EDIT = (
    "    return num_blocks / blocks_per_request\n",
    "    return round(num_blocks / blocks_per_request, 2)  # as the log shows it\n",
)
