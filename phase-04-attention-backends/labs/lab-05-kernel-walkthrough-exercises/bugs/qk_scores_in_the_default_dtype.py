"""The scores are allocated without a dtype: torch's default dtype, whatever the caller set it to.

Right while the default is float32; a caller who set ``torch.set_default_dtype(torch.float64)``
gets float64 scores. Symptom: a float64 result where the docstring promises fp32.
"""

CAUGHT_BY = ["test_qk_triton_scores_are_fp32_whatever_torchs_default_dtype"]

EDIT = (
    "    scores = torch.empty((num_seqs, max_len), dtype=torch.float32, device=q.device)\n",
    "    scores = torch.empty((num_seqs, max_len), device=q.device)\n",
)
