"""A test's patches of numpy's and math's functions (04-01 wraps ``np.exp``), made the same way in
the worker for each call: :class:`Patches` names those replaced (``"numpy:exp"`` -> the test's
wrapper, which the worker calls back), :func:`patched` applies them there. Staged into the sandbox.
"""

from __future__ import annotations

import contextlib
import importlib
import operator
import sys

WATCHED_MODULES = ("numpy", "numpy.linalg", "math")  # a test may patch their functions (04-01 wraps np.exp)


class Patches:
    """The watched modules' public functions as they were when made; :meth:`current` names those replaced since."""

    def __init__(self):
        self.baseline = {}
        for name in WATCHED_MODULES:
            module = sys.modules.get(name)
            self.baseline[name] = {attr: value for attr, value in (vars(module).items() if module else ())
                                   if callable(value) and not attr.startswith("_")}
        self.tuples = {m: (operator.itemgetter(*f) if f else None, tuple(f.values())) for m, f in self.baseline.items()}

    def current(self) -> dict:
        """The watched functions a test has replaced: "module:name" -> function."""
        patched = {}
        for module_name, originals in self.baseline.items():
            module = sys.modules.get(module_name)
            current = vars(module) if module else {}
            getter, values = self.tuples[module_name]
            try:  # the common case, nothing patched: one comparison of tuples in C (each call costs it)
                if getter(current) == values:
                    continue
            except (KeyError, TypeError):  # a function deleted, or none watched
                pass
            for attr in [a for a, f in originals.items() if current.get(a, f) is not f]:
                patched[f"{module_name}:{attr}"] = current[attr]
        return patched


@contextlib.contextmanager
def patched(patches: dict):
    """Replace watched module functions ("numpy:exp") by the test's wrappers for one call."""
    saved = []
    try:
        for key, value in patches.items():
            module_name, attr = str(key).split(":", 1)
            if module_name in WATCHED_MODULES:
                module = importlib.import_module(module_name)
                saved.append((module, attr, getattr(module, attr)))
                setattr(module, attr, value)
        yield
    finally:
        for module, attr, original in reversed(saved):
            setattr(module, attr, original)
