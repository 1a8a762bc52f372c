"""The reference attention builds its key positions with torch.arange on the default device, the CPU.

On a CPU nothing changes. Symptom (GPU, backend="reference"): the first step raises a RuntimeError
(tensors on different devices) where the CPU positions meet the step's positions on the GPU.
"""

CAUGHT_BY = ["test_gpu_reference_backend_matches_generate"]

SOURCE = "_model_runner.py"  # the given model runner

EDIT = (
    "    key_pos = torch.arange(keys.shape[1], device=q.device)\n",
    "    key_pos = torch.arange(keys.shape[1])\n",
)
