"""Random paged KV caches for tests: scattered block ids, ragged lengths, padded tables, tokens
placed through a table with every other slot poisoned, and inputs handed over read-only.

All in numpy (float64 unless asked); Triton labs convert with ``torch.from_numpy(...).to(dtype)``.
"""

from __future__ import annotations

import numpy as np

from labkit.testing.poison import poison_unused_slots


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


# vLLM reserves block 0 as its null block (``BlockPool.null_block`` in vllm/v1/core/block_pool.py): it
# is never handed to a request, and the entries of a zero-filled block table past a request's
# blocks point at it.
NULL_BLOCK = 0


def padded_block_table(
    rng: np.random.Generator, seq_len: int, block_size: int, pad_columns: int, spare_blocks: int = 3
) -> tuple[np.ndarray, int]:
    """One sequence's shuffled block ids followed by ``pad_columns`` entries of :data:`NULL_BLOCK`:
    ``(block_table int32 [needed + pad_columns], num_blocks)``.

    A table padded to a batch's longest row, the way vLLM pads it: the sequence's blocks come from
    ``1 .. num_blocks - 1`` (block 0 is never one of them), the padding is 0. The pool holds the null
    block and ``spare_blocks`` blocks nobody uses, so every slot but the sequence's can be poisoned.
    """
    needed = blocks_needed(seq_len, block_size)
    num_blocks = 1 + needed + spare_blocks
    ids = 1 + rng.permutation(num_blocks - 1)[:needed]
    table = np.concatenate([ids, np.full(pad_columns, NULL_BLOCK)]).astype(np.int32)
    return table, num_blocks


def paged_copy(
    k: np.ndarray, v: np.ndarray, block_table, num_blocks: int, block_size: int, *, poison: str = "huge", dtype=None
) -> tuple[np.ndarray, np.ndarray]:
    """``(k_cache, v_cache)`` ``[num_blocks, block_size, *k.shape[1:]]`` holding token ``t`` of the
    contiguous ``k``, ``v`` (``[seq_len, ...]``) at ``[block_table[t // block_size], t % block_size]``,
    with every other slot poisoned (``poison``: a kind of :data:`labkit.POISON_KINDS`).

    ``dtype`` (default: ``k``'s) is the caches' type; the tokens are rounded to it, so a test's
    float64 truth is computed from the cache's values (``labkit.gather_f64``) or from ``k``, ``v``
    rounded the same way.
    """
    k, v = np.asarray(k), np.asarray(v)
    dtype = k.dtype if dtype is None else dtype
    table = np.asarray(block_table, dtype=np.int64)
    seq_len = k.shape[0]
    k_cache = np.zeros((num_blocks, block_size, *k.shape[1:]), dtype=dtype)
    v_cache = np.zeros((num_blocks, block_size, *v.shape[1:]), dtype=dtype)
    t = np.arange(seq_len)
    k_cache[table[t // block_size], t % block_size] = k
    v_cache[table[t // block_size], t % block_size] = v
    poison_unused_slots(k_cache, table, seq_len, kind=poison)
    poison_unused_slots(v_cache, table, seq_len, kind=poison)
    return k_cache, v_cache


def read_only(*arrays: np.ndarray):
    """The numpy arrays, each made read-only (``flags.writeable = False``), as a tuple (one array
    alone when one is given).

    Hand these to a function that must only read its inputs: one that writes into them (``q *=
    scale``, a zeroed ``v``) fails at once ("assignment destination is read-only") instead of
    quietly changing the data a test's expectation is computed from.
    """
    for array in arrays:
        array.flags.writeable = False
    return arrays[0] if len(arrays) == 1 else arrays
