"""from_out_lse saves a copy when every lse is finite: acc is then the caller's out itself.

Only the masking of empty summaries needs a new tensor, so skipping it when nothing is empty looks
free. The returned acc then shares memory with the caller's out: whatever writes into one writes
into the other. Symptom: with every key set seen, writing into acc changes out, and back.
"""

CAUGHT_BY = ["test_conversions_return_new_tensors"]

EDIT = (
    '    acc = torch.where(seen.unsqueeze(-1), out, torch.zeros_like(out))  # out may hold anything where no key\n',
    "    acc = out if bool(seen.all()) else torch.where(seen.unsqueeze(-1), out, torch.zeros_like(out))  # no copy\n",
)
