"""FlashAttention's head-size reason does not say what the limit is.

The reason must name the limit and the layer's value; "not supported" leaves the user guessing
whether 320 is too large, not a multiple of 8, or never allowed. Symptom: the reason for head size
320 on an A100 (or 520 on an H100) does not mention 256 (512).
"""

CAUGHT_BY = ["test_backend_problems_name_the_limit"]

EDIT = (
    '            return f"head size {head_size} is not a multiple of 8 up to {largest}"\n',
    '            return f"head size {head_size} is not supported by FlashAttention"  # BUG: no limit named\n',
)
