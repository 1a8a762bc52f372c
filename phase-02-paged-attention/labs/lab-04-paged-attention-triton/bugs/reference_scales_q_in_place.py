"""The reference divides q by sqrt(head_dim) in place.

``q.float()`` copies an fp16 tensor but returns an fp32 tensor itself, so ``.div_()`` then
scales the caller's query. The output of that call is right; the caller's q is not, and a
second call with it is scaled twice. Only fp32 inputs show it.
"""

CAUGHT_BY = ["test_inputs_are_left_unchanged"]

EDIT = (
    '    scores = torch.einsum("hd,thd->ht", q.float(), k) / math.sqrt(head_dim)\n',
    '    scores = torch.einsum("hd,thd->ht", q.float().div_(math.sqrt(head_dim)), k)  # BUG: in place\n',
)
