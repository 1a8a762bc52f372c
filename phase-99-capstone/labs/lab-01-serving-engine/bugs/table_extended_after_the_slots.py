"""The block table is extended after the slots are computed, not before.

The new tokens of this step may live in blocks the request got this step: the slot mapping reads the
table before they are in it. A new request's first chunk then finds an empty table (IndexError in
prepare_inputs); with a table kept from an earlier step, the first token past a block boundary does.
"""

CAUGHT_BY = ["test_tokens_match_generate", "test_step_inputs_match_brute_force",
             "test_scheduling_invariants_hold_every_step"]

EDITS = [
    ("            request.block_ids.extend(scheduler_output.new_block_ids[request_id])\n", ""),
    ("            inputs.block_tables.append(list(table))\n",
     "            inputs.block_tables.append(list(table))\n"
     "            request.block_ids.extend(scheduler_output.new_block_ids[request_id])  # too late\n"),
]
