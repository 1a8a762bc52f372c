"""The reference's early return for an empty sequence builds its zeros without naming a device.

``torch.zeros(q.shape, dtype=q.dtype)`` has the right shape, dtype and values, and lives on the
CPU whatever device ``q`` is on. On a CPU machine nothing shows; on a GPU the caller gets a CPU
tensor for ``seq_len == 0`` and a CUDA tensor otherwise.
Symptom (GPU only): the empty-sequence test reports an output on cpu where q is on cuda.
"""

SHOWS_ON = ["cuda"]

CAUGHT_BY = ["test_seq_len_zero_gives_zeros"]

EDIT = (
    "        return torch.zeros_like(q)\n",
    "        return torch.zeros(q.shape, dtype=q.dtype)  # BUG: no device=, so on the CPU\n",
)
