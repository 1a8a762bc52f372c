"""The Blackwell priority lists given to compute capability 11.x as well as 10.x.

_get_backend_priorities tests ``device_capability.major == 10``; an 11.x GPU gets the list of
every other GPU. Symptom: on (11, 0) FlashInfer comes before FlashAttention, and a dense float16
layer with head size 128 gets FLASHINFER where FLASH_ATTN is first in line.
"""

CAUGHT_BY = ["test_candidate_order", "test_dense_defaults"]

EDIT = (
    "    blackwell = capability[0] == 10  # device_capability.major == 10: 10.0 and 10.3 alike\n",
    "    blackwell = capability[0] in (10, 11)  # BUG: the major-10 lists are for major 10 only\n",
)
