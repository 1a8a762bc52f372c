"""The output staging counts half the warps in true division: 3 warps stage 1.5 outputs.

vLLM's ``NUM_WARPS / 2`` is C++ integer division: 3 warps stage one output row. Symptom: wrong
outputs_bytes (and totals) for 96 threads, right for every even number of warps.
"""

CAUGHT_BY = ["test_budget_follows_the_launcher"]

EDIT = (
    "    outputs = (num_warps // 2) * head_size * FLOAT32_BYTES\n",
    "    outputs = (num_warps / 2) * head_size * FLOAT32_BYTES\n",
)
