"""Load a lab's implementation by path, the way ``LAB_IMPL`` asks for it.

``LAB_IMPL`` names a module of the lab folder: ``solution`` (the default; ``starter`` in a
class edition, :mod:`labkit.course.edition`), ``starter``, a student's copy (``alice`` for
``alice.py``) or a path inside the folder without ``.py`` (``bugs/no_correction``). Each file is loaded under a
module name unique to its lab and implementation, so one pytest run over every
lab never hands one lab another lab's ``solution``.

A bug of the gallery (``bugs/<name>.py``) is not code: it names the edit it makes to the
solution (:mod:`labkit.course.bugs`), and loading it loads the solution with that edit. A bug
whose edit lands in a lab's given module (``SOURCE = "_checks.py"``: a private module that the
starter and the solution both import) loads the solution with the edited module in its place; one
whose edit lands in given code several labs share (``SOURCE = "labkit/block_table.py"``) loads the
solution, and the given modules it imports, with that edited module in place of labkit's.

``LAB_IMPL=mutant`` is the maintainers' mutation testing (``labs mutate``,
:mod:`labkit.course.mutate`): one generated edit, handed over in ``LABS_MUTANT`` instead of a
file of ``bugs/``, loaded as a bug is.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import linecache
import os
import re
import sys
from pathlib import Path
from types import ModuleType

DEFAULT_IMPL = "solution"
# Files in a lab folder that are not implementations.
NOT_IMPLEMENTATIONS = {"test_lab", "lab", "bench", "tune", "conftest", "figures"}


class ImplNotFoundError(LookupError):
    """LAB_IMPL names no module of the lab folder."""


def impl_name() -> str:
    """The implementation under test: ``$LAB_IMPL``, or :func:`default_impl`."""
    return os.environ.get("LAB_IMPL", "").strip() or default_impl()


def default_impl() -> str:
    """What an unset ``LAB_IMPL`` means: ``solution``, or ``starter`` in a class edition."""
    from labkit.course import edition

    return edition.default_impl()


def _is_implementation(rel: str) -> bool:
    """Whether a lab folder's file (``rel``: its path without ``.py``) is something LAB_IMPL may name:
    not a test, not a demo or benchmark, not a private helper (``_x.py``, ``checks/_x.py``)."""
    parts = rel.split("/")
    return not (
        "__pycache__" in parts
        or parts[-1] in NOT_IMPLEMENTATIONS
        or any(p.startswith(("_", "test_")) for p in parts)
    )


# LAB_IMPL=mutant: the solution with the edit that LABS_MUTANT holds, as JSON
# {"lab": <the lab folder>, "source": <a file of it>, "old": ..., "new": ...} (labs mutate writes it).
MUTANT_IMPL = "mutant"
MUTANT_ENV = "LABS_MUTANT"

# Folders below a lab whose modules LAB_IMPL may name: the gallery's bugs, and kernels that go past
# the lab (``going-further/hopper_decode``: the same API, run by the same tests).
IMPL_FOLDERS = ("bugs", "going-further")


def available_impls(lab_dir: Path) -> list[str]:
    """The names LAB_IMPL may take in this lab folder (``bugs/x``, ``going-further/x`` for files below it)."""
    lab_dir = Path(lab_dir)
    names = []
    for path in sorted(lab_dir.rglob("*.py")):
        rel = path.relative_to(lab_dir).with_suffix("").as_posix()
        parts = rel.split("/")
        if _is_implementation(rel) and (len(parts) == 1 or (len(parts) == 2 and parts[0] in IMPL_FOLDERS)):
            names.append(rel)
    return names


def impl_path(lab_dir: Path, impl: str) -> Path:
    """The file ``impl`` names inside ``lab_dir``; ImplNotFoundError if there is none."""
    lab_dir = Path(lab_dir).resolve()
    if impl == MUTANT_IMPL:
        return lab_dir / _mutant(lab_dir).source
    rel = impl.removesuffix(".py")
    path = (lab_dir / f"{rel}.py").resolve()
    inside = lab_dir in path.parents
    if not inside or not path.is_file() or rel not in available_impls(lab_dir):
        choices = ", ".join(available_impls(lab_dir)) or "(none)"
        if default_impl() == "starter":  # a class edition: a reference arrives when it is released
            why = " (a reference solution is here once your instructor releases it)" if rel == DEFAULT_IMPL else ""
            advice = f"Use one of these{why}, or unset LAB_IMPL for your own work (starter.py)."
        else:
            advice = "Use one of these (LAB_IMPL=starter for your own work), or unset LAB_IMPL for the reference " \
                     "solution."
        raise ImplNotFoundError(f"LAB_IMPL={impl!r} names no module in {lab_dir.name}/.\n"
                                f"  It has: {choices}\n  {advice}")
    return path


def module_name(lab_dir: Path, impl: str) -> str:
    """A name unique to (lab, implementation), safe as a sys.modules key."""
    lab_dir = Path(lab_dir).resolve()
    tag = f"{lab_dir.parent.parent.name}__{lab_dir.name}__{impl}"
    # The path's hash keeps two checkouts' same-named labs apart too.
    where = hashlib.sha1(str(lab_dir).encode()).hexdigest()[:8]
    return f"labimpl_{where}_" + re.sub(r"\W", "_", tag)


def lab_dir_of(file: str | Path) -> Path:
    """The lab folder that holds ``file`` (the nearest folder above it with a ``test_lab.py``)."""
    here = Path(file).resolve()
    for folder in [here, *here.parents]:
        if folder.is_dir() and (folder / "test_lab.py").is_file():
            return folder
    raise ImplNotFoundError(f"{here} is not inside a lab folder (no test_lab.py above it)")


def load_impl(lab_dir: Path, impl: str | None = None) -> ModuleType:
    """Import ``impl`` (default: ``$LAB_IMPL`` or ``solution``) from ``lab_dir``.

    The module is cached under its unique name: loading the same pair twice returns the same
    module. Modules the file imports from its own lab folder (lab-local helpers) work, and are
    dropped from ``sys.modules`` afterwards so that another lab's same-named helper is never
    handed out in their place. A bug of the gallery loads as the solution with the bug's edit; a
    bug whose ``SOURCE`` is one of the lab's given modules (04-03's ``_prefill_checks.py``) or a
    shared labkit module (``labkit/block_table.py``) loads as the solution importing that module
    with the edit.
    """
    from labkit.course import bugs

    lab_dir = Path(lab_dir).resolve()
    impl = impl or impl_name()
    path = impl_path(lab_dir, impl)
    name = module_name(lab_dir, impl)
    if name in sys.modules:
        return sys.modules[name]
    if impl == MUTANT_IMPL:
        return _load_edited(lab_dir, name, _mutant(lab_dir), "the mutant's edit")
    if bugs.is_bug_file(path):
        return _load_edited(lab_dir, name, bugs.read_bug(path), "the bug's edit", path)
    return exec_file(lab_dir, name, path)


def _load_edited(lab_dir: Path, name: str, bug, what: str, path: Path | None = None) -> ModuleType:
    """The solution with ``bug``'s edits (a :class:`labkit.course.bugs.Bug`, from a file or a mutant)."""
    from labkit.course import bugs

    source_path = bug.source_path(lab_dir)
    text = bugs.apply_edits(source_path.read_text(encoding="utf-8"), bug)
    # The edited text gets a file name of its own in linecache: tracebacks show the edited lines,
    # and Triton (which reads a kernel's source through inspect) compiles the edit.
    filename = f"{path or lab_dir / bug.name} (= {bug.source} with {what})"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    code = compile(text, filename, "exec", dont_inherit=True)
    if bug.shared:
        # The edit is in labkit's given code, which the lab's given modules import: run the solution
        # with the edited module under labkit's name.
        module = bug.source.removesuffix(".py").replace("/", ".")
        return exec_file(lab_dir, name, lab_dir / bugs.DEFAULT_SOURCE, given=(module, source_path, code))
    if bug.source.startswith("_"):
        # The edit is in a given module that the solution imports: run the solution with it.
        return exec_file(lab_dir, name, lab_dir / bugs.DEFAULT_SOURCE, given=(source_path.stem, source_path, code))
    return exec_file(lab_dir, name, source_path, code)


def _mutant(lab_dir: Path):
    """The edit of ``LAB_IMPL=mutant``, as a bug of the gallery named ``mutant``; ImplNotFoundError when
    ``LABS_MUTANT`` is unset, malformed, or meant for another lab."""
    from labkit.course import bugs

    try:
        spec = json.loads(os.environ.get(MUTANT_ENV, ""))
        lab, source, old, new = (spec[key] for key in ("lab", "source", "old", "new"))
    except (ValueError, KeyError, TypeError):
        raise ImplNotFoundError(f"LAB_IMPL={MUTANT_IMPL} is for labs mutate: it needs {MUTANT_ENV}, the edit as "
                                f"JSON {{lab, source, old, new}}") from None
    if Path(lab).resolve() != lab_dir or not (lab_dir / source).is_file() or "/" in source:
        raise ImplNotFoundError(f"{MUTANT_ENV} edits {source!r} of {lab}, not a file of {lab_dir.name}/")
    return bugs.Bug(MUTANT_IMPL, lab_dir / source, None, None, edits=[(old, new)], source=source)


def exec_file(lab_dir: Path, name: str, path: Path, code=None,
              given: tuple[str, Path, object] | None = None) -> ModuleType:
    """Run ``path`` (or ``code`` compiled from it) as module ``name``; ``given = (module name, file,
    code)`` puts that module, run from ``code``, where every ``import`` of this load finds it first
    (a lab-local given module, or a shared labkit one that the lab's given modules import)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    # Lab-local modules already imported would not import the edited module again: hidden for this load.
    hidden = {key: sys.modules.pop(key) for key in _lab_local(lab_dir)} if given is not None else {}
    replaced = sys.modules.get(given[0]) if given is not None else None
    before = set(sys.modules)
    sys.modules[name] = module
    sys.path.insert(0, str(path.parent))
    given_module = None
    try:
        if given is not None:
            given_name, given_path, given_code = given
            given_module = importlib.util.module_from_spec(
                importlib.util.spec_from_file_location(given_name, given_path))
            sys.modules[given_name] = given_module
            exec(given_code, given_module.__dict__)
        if code is None:
            spec.loader.exec_module(module)
        else:
            exec(code, module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        sys.path.remove(str(path.parent))
        if given is not None and sys.modules.get(given[0]) is given_module:
            # The edited module serves this load only.
            if replaced is None:
                del sys.modules[given[0]]
            else:
                sys.modules[given[0]] = replaced
        for key in _lab_local(lab_dir, set(sys.modules) - before - {name}):
            del sys.modules[key]
        sys.modules.update(hidden)
    return module


def _lab_local(lab_dir: Path, keys=None) -> list[str]:
    """The modules among ``keys`` (default: all imported) whose file lies in ``lab_dir``."""
    found = []
    for key in list(sys.modules if keys is None else keys):
        origin = getattr(sys.modules.get(key), "__file__", None) or ""
        if origin and lab_dir in Path(origin).resolve().parents:
            found.append(key)
    return found


def under_test(lab_dir: Path) -> ModuleType:
    """The module a lab's tests exercise (the ``lab`` fixture): ``$LAB_IMPL``'s, or under ``labs grade``
    a stand-in for the student's file (:mod:`labkit.testing.seam`)."""
    from labkit.testing import seam

    return seam.grader.lab_module(lab_dir) if seam.grader is not None else load_impl(lab_dir)


def load_sibling(file: str | Path, impl: str = DEFAULT_IMPL) -> ModuleType:
    """From a file inside a lab folder (a ``lab.py``, a ``bench.py``), load another
    implementation of the same lab: ``load_sibling(__file__)`` is its solution."""
    return load_impl(lab_dir_of(file), impl)


def load_reference(lab_id: str) -> ModuleType:
    """The reference solution of lab ``lab_id`` ("02-01"): what a later lab builds on.

    A lab that uses an earlier lab's code takes its ``solution.py`` through this, never the
    learner's ``starter.py``, so the labs can be done in any order and a bug in one lab fails
    that lab's tests only. In a class edition that has not released that reference yet, it is the
    learner's ``starter.py`` of that lab (:func:`labkit.course.edition.reference_impl`)."""
    from labkit.course import edition, registry

    return load_impl(registry.get(lab_id).path, edition.reference_impl(lab_id))
