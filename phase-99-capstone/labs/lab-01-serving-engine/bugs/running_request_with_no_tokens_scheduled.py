"""A running request that gets 0 tokens this step is still scheduled.

``num_new_tokens`` answers 0 for a request with nothing to compute now (never in this lab's engine;
lab 99-02's engine, which reads its tokens a step late, has one whenever a request's last token is on
its way). Scheduled anyway, it asks the KV-cache manager for blocks for 0 tokens (the engine's checks
stop it there) and would take a row in the batch that computes nothing.
"""

CAUGHT_BY = ["test_schedule_asks_the_engine_for_each_running_request"]

EDIT = (
    "            if num_new_tokens == 0:\n"
    "                index += 1\n"
    "                continue  # nothing to compute this step (never here; in lab 99-02's engine, yes)\n",
    "",
)
