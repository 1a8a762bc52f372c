"""The kernel's head_dim check lists (16, 32, 128, 256): 64 left out.

Symptom: paged_prefill refuses head_dim 64, a power of two from 16 to 256 as its docstring and
error say (and the head size of many models), with "head_dim must be a power of two from 16 to 256".
"""

SOURCE = "_prefill_checks.py"

CAUGHT_BY = ["test_kernel_block_sizes_and_head_dims"]

EDIT = (
    "    if head_dim not in (16, 32, 64, 128, 256):\n",
    "    if head_dim not in (16, 32, 128, 256):  # BUG: 64 left out\n",
)
