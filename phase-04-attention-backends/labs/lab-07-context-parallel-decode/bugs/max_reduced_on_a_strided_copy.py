"""The MAX all-reduce runs on ``m.clone()``, which keeps the strides of a view.

A clone copies the numbers but, for a tensor that is a view (a kernel's lse [num_heads, batch]
transposed), keeps its layout: the copy is not contiguous either. gloo copies such a tensor for the
collective and gets it right; NCCL refuses it. Symptom: right on CPUs, "Tensors must be contiguous"
from deep inside torch.distributed on GPUs, for summaries stored heads first.
"""

CAUGHT_BY = ["test_combine_takes_summaries_stored_heads_first"]

EDIT = (
    "    global_m = m.clone(memory_format=torch.contiguous_format)\n",
    "    global_m = m.clone()  # all_reduce works in place: never on the caller's tensor\n",
)
