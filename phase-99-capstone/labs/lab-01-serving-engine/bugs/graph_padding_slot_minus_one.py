"""A CUDA-graph replay gives its padding rows the slot -1 (vLLM's PAD_SLOT_ID) instead of 0.

vLLM's write kernel skips a negative slot; this runner writes with tensor indexing, which takes -1
for the cache's last row. Symptom (GPU): every padded decode replay writes the padding row's key and
value into the last row of the pool's last block, another request's row once the pool is busy.
"""

CAUGHT_BY = ["test_gpu_graph_padding_writes_only_the_null_block"]

SOURCE = "_runner.py"  # the given model runner (its CUDA graphs)

EDIT = (
    "        self.slot_mapping.copy_(torch.tensor(inputs.slot_mapping + [0] * pad), non_blocking=True)\n",
    "        self.slot_mapping.copy_(torch.tensor(inputs.slot_mapping + [-1] * pad), non_blocking=True)\n",
)
