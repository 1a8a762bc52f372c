"""The torch reference upcasts float16 only, and computes bfloat16 inputs in bfloat16.

bfloat16 has fp32's range, so it looks safe to keep, but it has 8 significant bits: near a score of
1000 neighbouring representable scores are 8 apart, and the softmax weights come out wrong.
Symptom: ordinary bfloat16 inputs pass the 2e-2 gate; scores near +1000 or -1000 do not.
"""

CAUGHT_BY = ["test_score_patterns_across_blocks"]

EDITS = [
    ("    k = torch.cat(keys).float()  # [seq_len, num_kv_heads, head_dim], dense now\n",
     "    inside = torch.float32 if q.dtype == torch.float16 else q.dtype  # BUG: bf16 \"has the range\"\n"
     "    k = torch.cat(keys).to(inside)\n"),
    ("    v = torch.cat(values).float()\n", "    v = torch.cat(values).to(inside)\n"),
    ('    scores = torch.einsum("hd,thd->ht", q.float(), k) / math.sqrt(head_dim)\n',
     '    scores = torch.einsum("hd,thd->ht", q.to(inside), k) / math.sqrt(head_dim)\n'),
]
