"""FlashAttention's head sizes up to 512 on Hopper only.

is_fa_version_supported(4) holds on 9.x, 10.x and 11.x, and FlashAttention 4's kernels take head
sizes up to 512 there. Symptom: a head size of 512 refused by FLASH_ATTN on a B200 and on 11.0.
"""

CAUGHT_BY = ["test_backend_problems_empty_when_it_can_run"]

EDIT = (
    "        largest = 512 if capability[0] in (9, 10, 11) else 256\n",
    "        largest = 512 if capability[0] == 9 else 256  # BUG: FlashAttention 4 is built for 10.x, 11.x too\n",
)
