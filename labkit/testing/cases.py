"""Random paged KV caches and the other inputs the labs' tests build.

- numpy, float64: :func:`random_block_table`, :func:`random_block_tables`, :func:`random_paged_cache`,
  :func:`padded_block_table` (vLLM's null block as padding), :func:`paged_copy` (tokens placed
  through a table, every other slot poisoned) and :func:`read_only` (inputs a function must not
  write): the numpy labs' tests.
- torch, any dtype and device: :func:`decode_case` (one decode step of a batch: q, paged caches,
  block tables, lengths), :func:`dense_kv` (the contiguous copy dense attention reads) and
  :func:`sdpa_decode` (torch's dense attention on it), shared by the Triton labs' tests, their demos
  and benchmarks, and the roofline check. torch is imported only by these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from labkit.testing.poison import poison_unused_slots
from labkit.testing.reference import paged_attention_f64


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
# --------------------------------------------------------------------------- one decode step, in torch


@dataclass(frozen=True)
class DecodeCase:
    """One decode step of a batch over a paged cache, as torch tensors on one device.

    ``q`` ``[batch, num_heads, head_dim]``; ``k_cache``, ``v_cache`` ``[num_blocks, block_size,
    num_kv_heads, head_dim]``; ``block_tables`` ``[batch, max_blocks]`` int32; ``seq_lens``
    ``[batch]`` int32. Built by :func:`decode_case`; the tests, ``lab.py``, the benchmarks and the
    roofline check share it.
    """

    q: Any
    k_cache: Any
    v_cache: Any
    block_tables: Any
    seq_lens: Any

    @property
    def lens(self) -> list[int]:
        """``seq_lens`` as Python ints."""
        return [int(n) for n in self.seq_lens.tolist()]

    def to(self, device) -> DecodeCase:
        """The same case on ``device`` (the values drawn once, on the device the case was built on)."""
        return DecodeCase(*(t.to(device) for t in (self.q, self.k_cache, self.v_cache, self.block_tables,
                                                   self.seq_lens)))

    def one(self, b: int = 0) -> tuple:
        """The arguments of a one-sequence kernel for sequence ``b``:
        ``(q [num_heads, head_dim], k_cache, v_cache, block_table [max_blocks], seq_len int)``."""
        return self.q[b], self.k_cache, self.v_cache, self.block_tables[b], self.lens[b]

    def poison(self, kind: str = "huge") -> DecodeCase:
        """Poison, in place, every slot of both caches that holds no token of the batch
        (:func:`labkit.poison_unused_slots`); returns the case."""
        tables = self.block_tables.cpu().numpy()
        for cache in (self.k_cache, self.v_cache):
            poison_unused_slots(cache, tables, self.lens, kind=kind)
        return self

    def expected_f64(self) -> np.ndarray:
        """The float64 truth ``[batch, num_heads, head_dim]``, from the values the tensors hold
        (after rounding to their dtype): :func:`labkit.paged_attention_f64` per sequence."""
        tables = self.block_tables.cpu().numpy()
        return np.stack([paged_attention_f64(self.q[b], self.k_cache, self.v_cache, tables[b], n)
                         for b, n in enumerate(self.lens)])


def scattered_block_tables(
    rng: np.random.Generator, seq_lens, block_size: int, spare_blocks: int = 0, pad_columns: int = 0
) -> tuple[np.ndarray, int]:
    """Block tables over a shuffled pool: ``(block_tables [batch, max_needed + pad_columns] int32, num_blocks)``.

    The pool holds exactly the blocks the batch needs plus ``spare_blocks``, shuffled, so every
    sequence's blocks are distinct and scattered. Entries past a sequence's last block (its padding
    columns, and the shorter rows of a ragged batch) point at spare blocks, cycled, or at block 0
    when there are none: poison the spare blocks and a kernel that reads past
    ``ceil(seq_len / block_size)`` reads poison.
    """
    need = [blocks_needed(n, block_size) for n in seq_lens]
    num_blocks = sum(need) + spare_blocks
    pool = rng.permutation(num_blocks).astype(np.int32)
    used, spare = pool[: sum(need)], pool[sum(need) :]
    width = max(need, default=0) + pad_columns
    tables = np.zeros((len(need), width), dtype=np.int32)
    start = 0
    for b, n in enumerate(need):
        tables[b, :n] = used[start : start + n]
        if spare.size and width > n:
            tables[b, n:] = np.resize(spare, width - n)
        start += n
    return tables, num_blocks


def decode_case(
    seq_lens,
    *,
    num_heads: int,
    num_kv_heads: int,
    head_dim: int,
    block_size: int,
    dtype,
    device="cpu",
    seed: int = 0,
    spare_blocks: int = 0,
    pad_columns: int = 0,
) -> DecodeCase:
    """A random decode step: standard-normal ``q``, K and V drawn on ``device`` in ``dtype``
    (reproducible for a seed and a device), block tables from :func:`scattered_block_tables`.

    Sized for a benchmark as well as a test: nothing is built in float64 and nothing is copied
    between devices but the tables. Needs torch.
    """
    import torch

    lens = [int(n) for n in seq_lens]
    tables, num_blocks = scattered_block_tables(np.random.default_rng(seed), lens, block_size,
                                                spare_blocks, pad_columns)
    gen = torch.Generator(device=device).manual_seed(seed)
    cache_shape = (num_blocks, block_size, num_kv_heads, head_dim)

    def randn(*shape):
        return torch.randn(shape, generator=gen, device=device, dtype=dtype)

    return DecodeCase(
        q=randn(len(lens), num_heads, head_dim),
        k_cache=randn(*cache_shape),
        v_cache=randn(*cache_shape),
        block_tables=torch.from_numpy(tables).to(device),
        seq_lens=torch.tensor(lens, dtype=torch.int32, device=device),
    )


def dense_kv(cache, block_tables, seq_len: int, contiguous: bool = True):
    """``[batch, num_kv_heads, seq_len, head_dim]``: the first ``seq_len`` tokens of each row of
    ``block_tables`` gathered out of ``cache`` ``[num_blocks, block_size, num_kv_heads, head_dim]``
    (a copy), in the layout ``scaled_dot_product_attention`` reads. Every row must hold ``seq_len``
    tokens: call it once per length for a ragged batch. ``contiguous=False`` leaves the last
    transpose as a view (what a gather-then-attend engine would hand over)."""
    batch = block_tables.shape[0]
    _, block_size, num_kv_heads, head_dim = cache.shape
    n_blocks = blocks_needed(seq_len, block_size)
    blocks = cache[block_tables[:, :n_blocks].long()]  # [batch, n_blocks, block_size, kv_heads, dim]
    tokens = blocks.reshape(batch, n_blocks * block_size, num_kv_heads, head_dim)[:, :seq_len]
    dense = tokens.permute(0, 2, 1, 3)
    return dense.contiguous() if contiguous else dense


def sdpa_decode(q, k, v):
    """Dense decode attention by torch's ``scaled_dot_product_attention``: ``q`` ``[batch,
    num_heads, head_dim]`` against ``k``, ``v`` ``[batch, num_kv_heads, seq_len, head_dim]``
    (grouped-query heads when there are fewer KV heads); returns ``[batch, num_heads, head_dim]``."""
    from torch.nn.functional import scaled_dot_product_attention

    gqa = q.shape[1] != k.shape[1]
    return scaled_dot_product_attention(q.unsqueeze(2), k, v, enable_gqa=gqa).squeeze(2)
