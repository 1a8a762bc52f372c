"""Comparisons for the labs' tests that say where two arrays differ, not only that they do.

The message names the worst place (which head, which token or block, by how much) and which
entries of the first axis differ at all, so a learner reads the bug off the failure. ``dtype=``
checks the type the API promises: an fp16 kernel that returns float32 fails even when its
numbers are right.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from labkit.testing.reference import to_f64


def dtype_name(dtype) -> str:
    """``"float16"`` for ``np.float16``, ``np.dtype("float16")`` or ``torch.float16``."""
    if dtype is None:
        return "None"
    try:
        return np.dtype(dtype).name  # numpy dtypes and scalar types (np.int64), and names ("int64")
    except TypeError:
        pass
    text = str(dtype).removeprefix("torch.")
    try:
        return np.dtype(text).name
    except TypeError:
        return text  # bfloat16 and the like: numpy has no such dtype


def assert_dtype(actual, dtype, *, what: str = "output") -> None:
    """``actual`` (a numpy array or torch tensor) has the dtype the API names."""
    __tracebackhide__ = True
    got = getattr(actual, "dtype", None)
    if got is None:
        raise AssertionError(f"{what}: expected an array of dtype {dtype_name(dtype)}, got a {type(actual).__name__}")
    if dtype_name(got) != dtype_name(dtype):
        raise AssertionError(f"{what}: dtype {dtype_name(got)}, expected {dtype_name(dtype)}")


def _where(index: tuple, axes: Sequence[str] | None) -> str:
    if not axes:
        return f"index {tuple(int(i) for i in index)}"
    names = list(axes) + [f"axis {i}" for i in range(len(axes), len(index))]
    return ", ".join(f"{name} {int(i)}" for name, i in zip(names, index, strict=False))


def _plural(noun: str) -> str:
    """"token" -> "tokens", "query" -> "queries", "batch" -> "batches", "axis 0" -> "axis 0 indices"."""
    if noun.startswith("axis "):
        return f"{noun} indices"
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u"):
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def assert_close(
    actual,
    expected,
    *,
    atol: float,
    rtol: float = 0.0,
    axes: Sequence[str] | None = None,
    what: str = "output",
    where: Callable[[tuple], str] | None = None,
    dtype=None,
) -> None:
    """Assert ``|actual - expected| <= atol + rtol * |expected|`` everywhere.

    ``axes`` names the dimensions ("head", "dim") so the message can say where the
    worst difference is and which entries of the first axis differ at all;
    ``where(index)`` may add context to the worst location (e.g. "logical block 2").
    ``dtype`` (numpy or torch) is checked first when given.
    NaN and inf in ``actual`` always fail.
    """
    __tracebackhide__ = True
    if dtype is not None:
        assert_dtype(actual, dtype, what=what)
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
        lines.append(f"  {_plural(first)} that differ: {shown} (of {a.shape[0]})")
    raise AssertionError("\n".join(lines))


def assert_equal(
    actual,
    expected,
    *,
    axes: Sequence[str] | None = None,
    what: str = "output",
    where: Callable[[tuple], str] | None = None,
    dtype=None,
) -> None:
    """Exact equality for integer arrays (slot mappings, block counts), with the
    first mismatch named; ``dtype`` (numpy or torch) is checked first when given."""
    __tracebackhide__ = True
    if dtype is not None:
        assert_dtype(actual, dtype, what=what)
    a = actual.detach().cpu().numpy() if hasattr(actual, "detach") else np.asarray(actual)
    e = expected.detach().cpu().numpy() if hasattr(expected, "detach") else np.asarray(expected)
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


def assert_value(actual, expected, *, what: str) -> None:
    """Equality of one plain value (a name, a count, a tuple, ``None``, a bool): ``what: got X,
    expected Y``. For the answers of functions that return no array; ``what`` names the call."""
    __tracebackhide__ = True
    if type(actual) is not type(expected) and (isinstance(actual, bool) or isinstance(expected, bool)):
        raise AssertionError(f"{what}: got {actual!r} ({type(actual).__name__}), expected {expected!r}")
    if not actual == expected:
        raise AssertionError(f"{what}: got {actual!r}, expected {expected!r}")


def require(ok, message: str) -> None:
    """Fail with ``message`` alone: what was expected, what came, where (never pytest's rewrite of
    the expression, which prints the module's internals)."""
    __tracebackhide__ = True
    if not ok:
        raise AssertionError(message)


def assert_refused(call: Callable[[], object], *words: str, what: str, errors: tuple = (ValueError,),
                   hint: str = "") -> None:
    """``call()`` raises one of ``errors`` whose message names every one of ``words``. Anything else
    (another exception, none, a message that misses a word) fails with ``what``, what came instead
    and ``hint``; a stub's NotImplementedError goes through as it is (it names its README step)."""
    __tracebackhide__ = True
    try:
        call()
    except NotImplementedError:
        raise
    except errors as err:
        if all(word in str(err) for word in words):
            return
        got = f"{type(err).__name__}: {err}"
    except Exception as err:  # noqa: BLE001 (the test reports whatever was raised)
        got = f"{type(err).__name__}: {err}"
    else:
        got = "no exception"
    kinds = " or ".join(e.__name__ for e in errors)
    naming = ", ".join(repr(w) for w in words)
    raise AssertionError(f"{what}: expected a {kinds} naming {naming}, got {got}" + (f"; {hint}" if hint else ""))


def max_abs_diff(a, b) -> float:
    """``max |a - b|`` in float64 (NaN if either holds NaN)."""
    return float(np.max(np.abs(to_f64(a) - to_f64(b)))) if np.size(a) else 0.0
