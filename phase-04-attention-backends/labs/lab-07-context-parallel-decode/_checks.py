"""Lab 04-07's given input checks, in one place: ``starter.py`` and ``solution.py`` both import them.

Each function that takes input calls its checks first, so that bad input gets a ``ValueError``
naming the argument and what was expected, never a numpy or torch traceback from deep inside.
You call them; you do not write them.

- the layout (steps 1-3): ``_check_count`` (which hands the count back as a Python int),
  ``_check_round``, ``_as_positions``, ``_as_lengths``, ``_as_rank_tables``, ``_check_table_width``
  (counts, positions and lengths fit in int64);
- one rank's summaries (step 4): ``_check_rank_inputs`` (its block ids through
  ``labkit.block_table.check_block_ids``, the check every paged lab shares);
- the summaries in torch (steps 5-6): ``_check_summaries``, ``_check_out_lse``, and ``_world_size``,
  which also says what to do when there is no process group;
- the byte count (step 7): ``_check_combine_bytes_args`` (``batch`` may be 0: a step with no sequence
  sends nothing), which hands the counts back as Python integers, exact however large.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist

from labkit.block_table import check_block_ids
from labkit.integers import as_int

METHODS = ("all_gather", "all_reduce")  # the two combines that combine_bytes counts
# The layout computes in int64: a count, position or length past its largest value cannot be held there
# (numpy raises OverflowError for a Python int, and a uint64 wraps around to a negative number).
INT64_MAX = int(np.iinfo(np.int64).max)


def _check_count(name, value, allow_zero=False, int64=True) -> int:
    """An integer >= 1 (>= 0 with ``allow_zero``), and at most INT64_MAX unless ``int64`` is False
    (combine_bytes counts in Python's exact integers). Returns it as a Python int: a numpy uint64
    meeting int64 arrays would turn them into float64, which holds no integer past 2**53 exactly."""
    # An int or a numpy integer, never a bool: labkit.integers, the check the labs share.
    count = as_int(value, name, low=0 if allow_zero else 1)
    if int64 and count > INT64_MAX:
        raise ValueError(f"{name} must fit in int64 (at most 2**63 - 1), got {value!r}")
    return count


def _check_round(world_size, stripe) -> None:
    """One round of dealing, ``stripe * world_size`` tokens, fits in int64 (local_seq_lens divides by it)."""
    if int(stripe) * int(world_size) > INT64_MAX:
        raise ValueError(f"stripe * world_size (a round of dealing) must fit in int64, got stripe={stripe!r} and "
                         f"world_size={world_size!r}")


def _as_positions(positions) -> np.ndarray:
    array = np.asarray(positions)
    if array.dtype.kind not in "iu":
        raise ValueError(f"positions must be integers, got dtype {array.dtype}")
    if array.size and array.min() < 0:
        raise ValueError(f"positions must be >= 0, got {int(array.min())}")
    if array.size and array.max() > INT64_MAX:
        raise ValueError(f"positions must fit in int64 (at most 2**63 - 1), got {int(array.max())}")
    return array.astype(np.int64)


def _as_lengths(seq_lens) -> np.ndarray:
    array = np.asarray(seq_lens)
    if array.ndim != 1 or array.dtype.kind not in "iu":
        raise ValueError(f"seq_lens must be a 1-D integer array, got {array.dtype} of shape {array.shape}")
    if array.size and array.min() < 0:
        raise ValueError(f"seq_lens must be >= 0, got {int(array.min())}")
    if array.size and array.max() > INT64_MAX:
        raise ValueError(f"seq_lens must fit in int64 (at most 2**63 - 1), got {int(array.max())}")
    return array.astype(np.int64)


def _as_rank_tables(rank_block_tables) -> np.ndarray:
    tables = np.asarray(rank_block_tables)
    if tables.ndim != 2 or tables.dtype.kind not in "iu" or tables.shape[0] == 0:
        raise ValueError(
            "rank_block_tables must be integers [world_size >= 1, max_blocks], "
            f"got {tables.dtype} of shape {tables.shape}"
        )
    return tables


def _check_table_width(tables, ranks, local_blocks) -> None:
    """A clear error when a token's local block lies past the end of its rank's table."""
    if local_blocks.size and local_blocks.max() >= tables.shape[1]:
        i = np.unravel_index(np.argmax(local_blocks), local_blocks.shape)  # positions may have any shape
        raise ValueError(
            f"rank_block_tables has {tables.shape[1]} columns, but a token needs local block "
            f"{int(local_blocks[i])} of rank {int(ranks[i])}"
        )


def _as_f64(x) -> np.ndarray:
    """A float64 numpy copy of a numpy array, a list or a torch tensor (on any device)."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().double().numpy()
    return np.array(x, dtype=np.float64)


def _check_rank_inputs(q, k_cache, v_cache, block_tables, seq_lens):
    """The inputs of ``rank_summaries`` as numpy arrays (float64 for the numbers), or a ValueError
    naming the argument that is wrong. Never copies into the caller's arrays."""
    q, k_cache, v_cache = (_as_f64(x) for x in (q, k_cache, v_cache))
    block_tables, seq_lens = np.asarray(block_tables), np.asarray(seq_lens)
    if q.ndim != 3:
        raise ValueError(f"q must be [batch, num_heads, head_dim], got shape {q.shape}")
    if k_cache.ndim != 4 or k_cache.shape != v_cache.shape:
        raise ValueError(
            "k_cache and v_cache must both be [num_blocks, block_size, num_kv_heads, head_dim], "
            f"got {k_cache.shape} and {v_cache.shape}"
        )
    batch, num_heads, head_dim = q.shape
    num_blocks, block_size, num_kv_heads, cache_dim = k_cache.shape
    if cache_dim != head_dim:
        raise ValueError(f"q has head_dim {head_dim}, k_cache and v_cache {cache_dim}")
    if num_kv_heads == 0 or num_heads % num_kv_heads:
        raise ValueError(f"num_heads={num_heads} must be a multiple of num_kv_heads={num_kv_heads}")
    if block_tables.ndim != 2 or block_tables.shape[0] != batch or block_tables.dtype.kind not in "iu":
        raise ValueError(
            f"block_tables must be integers [batch={batch}, max_blocks], got {block_tables.dtype} "
            f"of shape {block_tables.shape}"
        )
    if seq_lens.shape != (batch,) or seq_lens.dtype.kind not in "iu":
        raise ValueError(f"seq_lens must be integers [batch={batch}], got {seq_lens.dtype} of shape {seq_lens.shape}")
    seq_lens = seq_lens.astype(np.int64)
    capacity = block_tables.shape[1] * block_size
    if batch and (seq_lens.min() < 0 or seq_lens.max() > capacity):
        raise ValueError(
            f"seq_lens must lie in [0, max_blocks * block_size = {capacity}], "
            f"got values from {int(seq_lens.min())} to {int(seq_lens.max())}"
        )
    check_block_ids(block_tables, seq_lens, block_size, num_blocks)
    return q, k_cache, v_cache, block_tables.astype(np.int64), seq_lens


def _check_summaries(fn, m, denom, acc) -> None:
    for name, t in (("m", m), ("denom", denom), ("acc", acc)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{fn}: {name} must be a torch.Tensor (torch.from_numpy(...)), got {type(t).__name__}")
    if not m.dtype.is_floating_point or denom.dtype != m.dtype or acc.dtype != m.dtype:
        raise ValueError(
            f"{fn}: m, denom and acc must share one floating dtype, got {m.dtype}, {denom.dtype}, {acc.dtype}"
        )
    if m.dim() != 2 or denom.shape != m.shape or acc.dim() != 3 or acc.shape[:2] != m.shape:
        raise ValueError(
            f"{fn}: m and denom must be [batch, num_heads] and acc [batch, num_heads, head_dim], "
            f"got {tuple(m.shape)}, {tuple(denom.shape)}, {tuple(acc.shape)}"
        )
    if len({m.device, denom.device, acc.device}) > 1:
        raise ValueError(f"{fn}: m, denom and acc must be on one device, got {m.device}, {denom.device}, {acc.device}")


def _check_out_lse(out, lse) -> None:
    for name, t in (("out", out), ("lse", lse)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"from_out_lse: {name} must be a torch.Tensor, got {type(t).__name__}")
    if not out.dtype.is_floating_point or lse.dtype != out.dtype:
        raise ValueError(f"from_out_lse: out and lse must share one floating dtype, got {out.dtype} and {lse.dtype}")
    if out.dim() < 1 or lse.shape != out.shape[:-1]:
        raise ValueError(f"from_out_lse: out must be [..., head_dim] and lse [...], got {tuple(out.shape)} "
                         f"and {tuple(lse.shape)}")


def _world_size(fn, group) -> int:
    """The size of ``group``, or a clear error when there is no process group to talk to."""
    if not dist.is_available() or not dist.is_initialized():
        raise ValueError(
            f"{fn}: no process group: every rank must call torch.distributed.init_process_group first "
            "(the tests' _ranks.py and lab.py do)"
        )
    return dist.get_world_size(group)


def _check_combine_bytes_args(method, world_size, batch, num_heads, head_dim, itemsize) -> tuple[int, ...]:
    """``combine_bytes``'s arguments: a method of METHODS and counts >= 1, except ``batch >= 0``.
    Returns ``(world_size, batch, num_heads, head_dim, itemsize)`` as Python integers: numpy's
    wrap around past int64, Python's are exact."""
    if method not in METHODS:
        raise ValueError(f"combine_bytes: method must be one of {METHODS}, got {method!r}")
    _check_count("world_size", world_size, int64=False)
    _check_count("batch", batch, allow_zero=True, int64=False)
    for name, value in (("num_heads", num_heads), ("head_dim", head_dim), ("itemsize", itemsize)):
        _check_count(name, value, int64=False)
    return tuple(int(value) for value in (world_size, batch, num_heads, head_dim, itemsize))
