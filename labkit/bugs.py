"""The classic-bug gallery: wrong implementations that a lab's tests must catch.

Each ``bugs/<name>.py`` in a lab folder is that lab's solution with one classic
mistake. It defines the broken function and takes everything else from a
private copy of the solution, patched so that the solution's own callers use
the broken function too::

    '''Missing correction factor: ... Symptom: ...'''
    from labkit.bugs import solution_with

    CAUGHT_BY = ["test_matches_dense_block_aligned"]

    def paged_online_attention(q, k_cache, v_cache, block_table, seq_len, block_size):
        ...  # the solution, minus the correction

    globals().update(solution_with(__file__, paged_online_attention=paged_online_attention))

Run a lab's tests against one with ``LAB_IMPL=bugs/<name> pytest <lab folder>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from labkit.loader import load_impl, module_name


def _lab_dir(file: str | Path) -> Path:
    here = Path(file).resolve()
    for folder in here.parents:
        if (folder / "test_lab.py").is_file():
            return folder
    raise LookupError(f"{here} is not inside a lab folder (no test_lab.py above it)")


def solution_with(file: str | Path, **replacements: Any) -> dict[str, Any]:
    """A private copy of the lab's solution with ``replacements`` patched in;
    returns its public names (and the replacements) for the bug module's globals."""
    lab_dir = _lab_dir(file)
    bug = Path(file).resolve().relative_to(lab_dir).with_suffix("").as_posix()
    copy = load_impl(lab_dir, "solution", as_name=module_name(lab_dir, f"solution__for__{bug}"))
    for name, value in replacements.items():
        if not hasattr(copy, name):
            raise AttributeError(f"{bug}: the solution has no {name!r} to replace")
        setattr(copy, name, value)
    return {k: v for k, v in vars(copy).items() if not k.startswith("__")}


def gallery(lab_dir: str | Path) -> list[str]:
    """The bug names of a lab (``LAB_IMPL=bugs/<name>``), sorted."""
    folder = Path(lab_dir) / "bugs"
    return sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")) if folder.is_dir() else []
