"""The given QK check hands the caller's q and k on as they are, without ``.contiguous()``.

The kernel's offsets (``seq * head_dim`` for the query, ``(seq * max_len + t) * head_dim`` for the
keys) hold for dense tensors only. Right for every contiguous input; a q sliced from a fused qkv
projection, or a k that is one half of a fused K/V pool, is read at the wrong places. Symptom: NaN
(the K part of qkv, the V half of the pool) or another sequence's numbers, for every sequence after
the first.
"""

CAUGHT_BY = ["test_qk_triton_reads_strided_views"]

SOURCE = "_walkthrough_checks.py"  # the given input checks

EDIT = (
    "    return q.contiguous(), k.contiguous(), lens.to(device=q.device, dtype=torch.int32).contiguous(), scale\n",
    "    return q, k, lens.to(device=q.device, dtype=torch.int32).contiguous(), scale\n",
)
