"""Given code several labs share: which entries of a block table a sequence uses, and the check that
those name blocks of the cache.

A block table row lists a sequence's blocks in order; only its first ``ceil(seq_len / block_size)``
entries hold blocks of that sequence's tokens. The rest is padding, which engines fill with whatever
is convenient (vLLM leaves 0, others -1): a kernel must never read through it, and a check must never
refuse it. Every paged-attention lab that takes a block table checks, before anything runs, that the
entries in use name a block of the cache: numpy would read a negative id from the end of the cache
and a kernel would read outside it, both without a word.

Labs 02-06, 04-01, 04-03, 04-06 and 04-07 call :func:`check_block_ids` from their given checks. It
takes numpy arrays and torch tensors alike (the labs' numpy parts and their kernels' host sides),
without importing torch.
"""

from __future__ import annotations

import sys

import numpy as np


def blocks_needed(num_tokens, block_size: int):
    """How many blocks hold ``num_tokens`` tokens: ``ceil(num_tokens / block_size)``, in integers
    (an int, or elementwise for an array or tensor of lengths)."""
    return (num_tokens + block_size - 1) // block_size


def ids_in_use(block_tables, seq_lens, block_size: int):
    """The block ids the sequences' tokens use, flat: row ``i``'s first ``blocks_needed(seq_lens[i])``
    entries, in row order. ``block_tables`` is ``[num_seqs, max_blocks]`` and ``seq_lens``
    ``[num_seqs]``, both numpy or both torch (on one device); a one-sequence table ``[max_blocks]``
    takes an int ``seq_len``. The padding past those entries is never read."""
    if block_tables.ndim == 1:  # one sequence's table
        return block_tables[: blocks_needed(int(seq_lens), block_size)]
    columns, lens = _arange_like(block_tables, block_tables.shape[1]), _int64(seq_lens)
    return block_tables[columns < blocks_needed(lens, block_size)[:, None]]


def check_block_ids(block_tables, seq_lens, block_size: int, num_blocks: int, what: str = "block_tables") -> None:
    """ValueError unless every block id in use (:func:`ids_in_use`) lies in ``[0, num_blocks)``.

    ``what`` names the table in the message (``"paged_decode: block_tables"``). The caller has
    already checked that each row is long enough for its sequence; ids in the padding are not looked at."""
    ids = ids_in_use(block_tables, seq_lens, block_size)
    if len(ids) == 0:
        return
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= num_blocks:
        raise ValueError(f"{what} holds block ids outside the cache's [0, {num_blocks}) among the entries its "
                         f"tokens use (from {low} to {high})")


def _torch_tensor(x) -> bool:
    torch = sys.modules.get("torch")  # a torch tensor means torch is imported; never import it here
    return torch is not None and isinstance(x, torch.Tensor)


def _arange_like(table, n: int):
    """``0..n-1`` as the same kind of array as ``table`` (a torch tensor on its device, else numpy)."""
    return sys.modules["torch"].arange(n, device=table.device) if _torch_tensor(table) else np.arange(n)


def _int64(lengths):
    """Lengths in int64, so that adding ``block_size - 1`` cannot wrap an int32 length."""
    return lengths.long() if _torch_tensor(lengths) else np.asarray(lengths).astype(np.int64)
