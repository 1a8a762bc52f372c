"""A torch tensor is converted with ``.numpy()`` directly, not through ``.detach().cpu().double()``.

That works for a float32 CPU tensor outside autograd only: numpy has no bfloat16, refuses a tensor that
requires grad, and cannot read GPU memory. Symptom: rank_summaries of bfloat16 tensors raises a
TypeError.
"""

CAUGHT_BY = ["test_rank_summaries_take_torch_tensors_of_any_floating_dtype"]

SOURCE = "_checks.py"

EDIT = (
    "        x = x.detach().cpu().double().numpy()\n",
    "        x = x.numpy()\n",
)
