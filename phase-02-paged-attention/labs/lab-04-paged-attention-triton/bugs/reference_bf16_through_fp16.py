"""The torch reference turns every 16-bit input into float16 before fp32, bfloat16 included.

float16's largest value is 65504; bfloat16 reaches about 3e38. Keys past float16's range become
inf, their scores inf or NaN, and the output NaN.
Symptom: right for float16, fp32 and ordinary bfloat16 values; NaN once a bfloat16 key passes 65504.
"""

CAUGHT_BY = ["test_torch_reference_bfloat16"]

EDIT = (
    "    k = torch.cat(keys).float()  # [seq_len, num_kv_heads, head_dim], dense now\n",
    "    k = torch.cat(keys)\n"
    "    k = (k.half() if k.element_size() == 2 else k).float()  # BUG: bf16 squeezed into fp16's range\n",
)
