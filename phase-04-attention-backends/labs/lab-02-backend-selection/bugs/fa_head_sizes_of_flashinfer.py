"""FlashAttention's head sizes taken to be FlashInfer's: 64, 128 and 256 only.

FlashAttention declares 32 to 256 in steps of 32 (``get_supported_head_sizes``); FlashInfer's list
is the short one. Symptom: models with head size 96 (and 32, 160, 192, 224) fall to FlexAttention
on an A100 or H100, and an override of FlashAttention for head size 96 is refused.
"""

CAUGHT_BY = ["test_dense_defaults", "test_override_is_obeyed"]

EDIT = (
    "_FA_HEAD_SIZES = (32, 64, 96, 128, 160, 192, 224, 256)\n",
    "_FA_HEAD_SIZES = (64, 128, 256)  # BUG: FlashInfer's list\n",
)
