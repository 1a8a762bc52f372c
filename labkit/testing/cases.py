"""Random paged KV caches for tests: scattered block ids, ragged lengths.

All in numpy float64; Triton labs convert with ``torch.from_numpy(...).to(dtype)``.
"""

from __future__ import annotations

import numpy as np


def blocks_needed(seq_len: int, block_size: int) -> int:
    """Logical blocks that hold ``seq_len`` tokens: ``ceil(seq_len / block_size)``."""
    return -(-int(seq_len) // block_size)


def random_block_table(
    rng: np.random.Generator, seq_len: int, block_size: int, spare_blocks: int = 3
) -> tuple[np.ndarray, int]:
    """One sequence's distinct, shuffled physical block ids: ``(block_table int32 [needed], num_blocks)``.

    The pool holds ``spare_blocks`` more blocks than the sequence needs, so that
    unused blocks exist and can be poisoned. ``seq_len`` 0 gives an empty table.
    """
    needed = blocks_needed(seq_len, block_size)
    num_blocks = needed + spare_blocks
    return rng.permutation(num_blocks)[:needed].astype(np.int32), num_blocks


def random_block_tables(
    rng: np.random.Generator,
    seq_lens,
    block_size: int,
    num_blocks: int | None = None,
    max_blocks: int | None = None,
    pad: int = 0,
) -> tuple[np.ndarray, int]:
    """Distinct, shuffled physical block ids for each sequence.

    Returns ``(block_tables [batch, max_blocks] int32, num_blocks)``. Entries past
    a sequence's last block hold ``pad``. ``num_blocks`` defaults to twice what the
    batch needs, so that unused blocks exist and can be poisoned.
    """
    need = [blocks_needed(n, block_size) for n in seq_lens]
    total = sum(need)
    num_blocks = max(2 * total, 1) if num_blocks is None else num_blocks
    if total > num_blocks:
        raise ValueError(f"{total} blocks needed, only {num_blocks} in the pool")
    max_blocks = max(max(need, default=0), 1) if max_blocks is None else max_blocks
    ids = rng.permutation(num_blocks)[:total]
    tables = np.full((len(need), max_blocks), pad, dtype=np.int32)
    start = 0
    for i, n in enumerate(need):
        tables[i, :n] = ids[start : start + n]
        start += n
    return tables, num_blocks


def random_paged_cache(
    rng: np.random.Generator,
    num_blocks: int,
    block_size: int,
    *head_shape: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Standard-normal ``(k_cache, v_cache)`` of shape ``[num_blocks, block_size, *head_shape]``
    (``head_shape`` is ``(num_kv_heads, head_dim)`` or just ``(head_dim,)``)."""
    shape = (num_blocks, block_size, *head_shape)
    return rng.standard_normal(shape), rng.standard_normal(shape)
