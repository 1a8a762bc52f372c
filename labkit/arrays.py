"""Poisoning and comparison helpers for the labs' tests.

Poison: fill every cache slot that holds no valid token with a huge value, so
that a kernel that reads past ``seq_len`` or through a wrong block id fails
loudly instead of "almost working" on small garbage.

Compare: fail with a message that says where the arrays differ (which head,
which token or block, by how much), not only that they do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from labkit.reference import to_f64


def poison_value(dtype) -> float:
    """A huge but finite value for ``dtype`` (numpy or torch): 1e6, or less where
    the type cannot hold it (fp16's largest value is 65504)."""
    name = str(dtype).removeprefix("torch.")
    if name in ("float16", "half"):
        return 3.0e4
    return 1.0e6


def valid_slot_mask(num_blocks: int, block_size: int, block_tables, seq_lens) -> np.ndarray:
    """``[num_blocks, block_size]`` booleans: True where some sequence keeps a valid token.

    ``block_tables``/``seq_lens`` are one table and one length, or a batch of each.
    """
    tables = np.asarray(to_f64(block_tables), dtype=np.int64)
    lens = np.atleast_1d(np.asarray(seq_lens, dtype=np.int64))
    if tables.ndim == 1:
        tables = tables[None]
    valid = np.zeros((num_blocks, block_size), dtype=bool)
    for table, seq_len in zip(tables, lens, strict=True):
        for t in range(int(seq_len)):
            valid[table[t // block_size], t % block_size] = True
    return valid


def poison_unused_slots(cache, block_tables, seq_lens, value: float | None = None):
    """Overwrite, in place, every slot of ``cache`` ``[num_blocks, block_size, ...]``
    that holds none of the valid tokens: the tail of each last block, every block
    no sequence uses. Works on numpy arrays and torch tensors; returns ``cache``."""
    num_blocks, block_size = cache.shape[0], cache.shape[1]
    unused = ~valid_slot_mask(num_blocks, block_size, block_tables, seq_lens)
    value = poison_value(cache.dtype) if value is None else value
    if hasattr(cache, "detach"):  # torch
        import torch

        cache[torch.from_numpy(unused).to(cache.device)] = value
    else:
        cache[unused] = value
    return cache


def _where(index: tuple, axes: Sequence[str] | None) -> str:
    if not axes:
        return f"index {tuple(int(i) for i in index)}"
    names = list(axes) + [f"axis {i}" for i in range(len(axes), len(index))]
    return ", ".join(f"{name} {int(i)}" for name, i in zip(names, index, strict=False))


def assert_close(
    actual,
    expected,
    *,
    atol: float,
    rtol: float = 0.0,
    axes: Sequence[str] | None = None,
    what: str = "output",
    where: Callable[[tuple], str] | None = None,
) -> None:
    """Assert ``|actual - expected| <= atol + rtol * |expected|`` everywhere.

    ``axes`` names the dimensions ("head", "dim") so the message can say where the
    worst difference is and which entries of the first axis differ at all;
    ``where(index)`` may add context to the worst location (e.g. "logical block 2").
    NaN and inf in ``actual`` always fail.
    """
    __tracebackhide__ = True
    a, e = to_f64(actual), to_f64(expected)
    if a.shape != e.shape:
        raise AssertionError(f"{what}: shape {a.shape}, expected {e.shape}")
    if a.size == 0:
        return
    diff = np.abs(a - e)
    bad = ~(diff <= atol + rtol * np.abs(e))  # NaN compares False, so it is bad
    if not bad.any():
        return
    nonfinite = ~np.isfinite(a)
    if nonfinite.any():
        worst = tuple(np.argwhere(nonfinite)[0])
        head = f"{int(nonfinite.sum())} non-finite value(s) (NaN/inf); first at {_where(worst, axes)}"
    else:
        worst = np.unravel_index(np.argmax(np.where(bad, diff, -1.0)), a.shape)
        head = f"max |Δ| = {diff[worst]:.3g} at {_where(worst, axes)}"
    lines = [
        f"{what}: {int(bad.sum())} of {a.size} values differ by more than "
        f"atol={atol:g}" + (f" + rtol={rtol:g}·|expected|" if rtol else "") + f"; {head}",
        f"  there: got {a[worst]:.6g}, expected {e[worst]:.6g}"
        + (f" ({where(worst)})" if where else ""),
    ]
    if a.ndim >= 2:
        first = axes[0] if axes else "axis 0"
        rows = sorted({int(i) for i in np.argwhere(bad)[:, 0]})
        shown = ", ".join(map(str, rows[:16])) + (" ..." if len(rows) > 16 else "")
        lines.append(f"  {first}s that differ: {shown} (of {a.shape[0]})")
    raise AssertionError("\n".join(lines))


def assert_equal(
    actual,
    expected,
    *,
    axes: Sequence[str] | None = None,
    what: str = "output",
    where: Callable[[tuple], str] | None = None,
) -> None:
    """Exact equality for integer arrays (slot mappings, block counts), with the
    first mismatch named."""
    __tracebackhide__ = True
    a, e = np.asarray(actual), np.asarray(expected)
    if a.shape != e.shape:
        raise AssertionError(f"{what}: shape {a.shape}, expected {e.shape}")
    bad = a != e
    if not bad.any():
        return
    first = tuple(np.argwhere(bad)[0])
    extra = f" ({where(first)})" if where else ""
    raise AssertionError(
        f"{what}: {int(bad.sum())} of {a.size} entries differ; first at {_where(first, axes)}"
        f"{extra}: got {a[first]}, expected {e[first]}"
    )


def max_abs_diff(a, b) -> float:
    """``max |a - b|`` in float64 (NaN if either holds NaN)."""
    return float(np.max(np.abs(to_f64(a) - to_f64(b)))) if np.size(a) else 0.0
