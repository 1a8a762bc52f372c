"""A token read before its step finished: the engine reads a step's output without waiting for its event.

On a GPU the host tensor is filled by a copy that runs after the step's kernels; read before, it holds
whatever the copy has not replaced yet (here -1). The CPU's lazy timing runs the step only when the
host waits for it, so the tokens read are never the step's.
"""

CAUGHT_BY = ["test_tokens_match_generate", "test_logits_match_generate_within_float32_tolerance"]

EDIT = (
    "            model_output.ready.synchronize()  # the tokens reach the host only once the step has run\n",
    "",
)
