"""from_out_lse returns the caller's lse itself as m, not a copy.

m = lse is exactly right as a number, so every value test passes. But the summary now shares its
memory with the caller's lse: a merge that updates m in place rewrites the caller's lse, and a
caller that reuses its lse buffer (the next layer's kernel writes into it) changes m under the
summary. Symptom: writing into the returned m changes the caller's lse.
"""

CAUGHT_BY = ["test_conversions_return_new_tensors"]

EDIT = (
    "    return lse.clone(), seen.to(out.dtype), torch.where(seen.unsqueeze(-1), out, torch.zeros_like(out))\n",
    "    return lse, seen.to(out.dtype), torch.where(seen.unsqueeze(-1), out, torch.zeros_like(out))  # m is lse\n",
)
