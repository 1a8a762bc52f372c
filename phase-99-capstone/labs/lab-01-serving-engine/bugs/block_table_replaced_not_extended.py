"""The runner's block table is replaced by the step's new block ids instead of extended with them.

The first step of a request sets its whole table, so the first chunk works; any later step that gets a
new block forgets the earlier ones (and a step that gets none empties the table), and the slots of the
chunk after it point into the wrong blocks.
"""

CAUGHT_BY = ["test_tokens_match_generate", "test_step_inputs_match_brute_force",
             "test_scheduling_invariants_hold_every_step"]

EDIT = (
    "            request.block_ids.extend(scheduler_output.new_block_ids[request_id])\n",
    "            request.block_ids = list(scheduler_output.new_block_ids[request_id])  # replaced, not extended\n",
)
