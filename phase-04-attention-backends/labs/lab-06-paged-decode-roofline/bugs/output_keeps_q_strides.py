"""The output is allocated with ``torch.empty_like(q)``, which keeps q's strides, and the kernel
writes it as if it were contiguous.

For a dense q that is not contiguous (stored ``[num_heads, batch, head_dim]`` and viewed as
``[batch, num_heads, head_dim]``), ``empty_like`` gives an output with the same permuted strides,
while the kernel stores head ``h`` of sequence ``b`` at ``(b * num_heads + h) * head_dim``. (A slice
of ``qkv`` is not dense, so ``empty_like`` falls back to a contiguous tensor there and hides it.)
Symptom: right for a contiguous q or a slice of qkv; for a permuted q the outputs land on other
(sequence, head) positions.
"""

CAUGHT_BY = ["test_seq_lens_and_q_as_other_views"]

EDIT = (
    "    out = q.new_empty(q.shape)\n",
    "    out = torch.empty_like(q)  # shaped like q, and strided like it too\n",
)
