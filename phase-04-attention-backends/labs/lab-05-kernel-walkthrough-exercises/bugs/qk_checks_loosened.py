"""The dtype check refuses only dtypes that both differ and are unsupported; the device check is gone.

An fp16 query with fp32 keys, or keys on another device, reach the kernel. Symptom: a kernel that
reads fp32 keys as fp16 (or fails inside Triton) instead of a ValueError naming the dtypes or the
devices.
"""

CAUGHT_BY = ["test_qk_rejects_bad_input"]

SOURCE = "_walkthrough_checks.py"  # the given input checks

EDITS = [
    ("    if q.dtype != k.dtype or q.dtype not in (torch.float16, torch.bfloat16, torch.float32):\n",
     "    if q.dtype != k.dtype and q.dtype not in (torch.float16, torch.bfloat16, torch.float32):\n"),
    ("    if q.device != k.device:\n        raise ValueError(f\"q is on {q.device}, k on {k.device}\")\n", ""),
]
