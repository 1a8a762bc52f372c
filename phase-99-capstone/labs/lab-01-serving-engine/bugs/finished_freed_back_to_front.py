"""update_from_output frees the requests that finished in one step from the last of the batch to the first.

Every token is still right, but the pool's free queue holds the blocks in another order than vLLM's
(each stopped request freed as the loop over the batch reaches it). Symptom: once no never-used block is
left, the next request gets other block ids (and another request's cached prefix is evicted first).
"""

CAUGHT_BY = ["test_requests_finished_in_one_step_free_their_blocks_in_batch_order"]

EDIT = (
    "        for request in finished:\n            self.kv_manager.free(request)\n",
    "        for request in reversed(finished):  # BUG: last first\n            self.kv_manager.free(request)\n",
)
