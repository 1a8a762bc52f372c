"""A lab's declaration: ``lab.toml`` in its folder, the one place that says what the course knows of it.

Read as data, never run::

    id = "02-06"                       # phase number, lab number
    title = "Paged attention in pure numpy"
    builds = "slot mapping, KV scatter, ..."   # one line for the lab map
    tags = ["cpu"]                     # what it needs to run: see TAGS
    needs = ["02-01", "02-05"]         # the earlier labs whose ideas or code it builds on
    references = ["02-05"]             # of those, the ones whose solution it loads (labkit.load_reference)
    given = ["_checks.py"]             # its given modules (given code, child scripts), staged for grading
    patches = ["numpy.exp"]            # the functions of numpy or math its tests replace (monkeypatch)

    [api]                              # the names the tests reach, as starter and solution define them
    functions = ["build_slot_mapping", "write_kv", "paged_attention"]
    classes = []
    constants = []                     # module-level values a test reads
    reexports = []                     # names taken from a given module or an earlier lab's reference

    [labkit]                           # the labkit names each file the grading sandbox runs imports
    "starter.py" = ["triton_env"]

The registry (study order, the lab map), the grader (the API it lends, what it stages) and the
repository's checks all read it through :func:`read`; a mistake in it is a :class:`DeclarationError`
that names the file and the key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

FILE = "lab.toml"
# What a lab needs to run: "python" (the standard library only), "cpu" (numpy only), "triton" (torch +
# triton; GPU or interpreter), "distributed" (torch.distributed: gloo on a CPU, NCCL on GPUs), and
# "model" as well: a transformer built with transformers (a tiny one on a CPU).
TAGS = ("python", "cpu", "triton", "distributed", "model")
# The labkit names a file run in the grading sandbox may import, and the module of labkit that gives each
# (the sandbox holds only the grader's worker and these: labkit.grader.sandbox stages them).
SANDBOX_LABKIT = {
    "triton_env": "testing/triton_env",
    "load_reference": "grader/references",
    "testing.child": "testing/child",
    "block_table.check_block_ids": "block_table",
    "integers.as_int": "integers",
}
_ID = re.compile(r"\d{2}-\d{2}")
_KEYS = {"id", "title", "builds", "tags", "needs", "references", "given", "patches", "api", "labkit"}
# The modules whose functions a lab's tests may replace (labkit.grader.lending.WATCHED_MODULES).
_PATCHABLE = re.compile(r"(numpy|numpy\.linalg|math)\.[a-z_]\w*")
_API_KEYS = {"functions": "callable", "classes": "callable", "constants": "value", "reexports": "any"}


class DeclarationError(ValueError):
    """A lab's ``lab.toml`` is missing, unreadable or says something impossible."""


@dataclass(frozen=True)
class Api:
    functions: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    constants: tuple[str, ...] = ()
    reexports: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return self.functions + self.classes + self.constants + self.reexports

    def kinds(self) -> dict[str, str]:
        """name -> "callable" (a function or class the starter defines), "value" (a constant), or "any"
        (a name taken from elsewhere, which may be any of them): what the grader's stand-in takes."""
        return {name: kind for key, kind in _API_KEYS.items() for name in getattr(self, key)}


@dataclass(frozen=True)
class Declaration:
    path: Path  # the lab folder
    id: str
    title: str
    builds: str
    tags: tuple[str, ...]
    needs: tuple[str, ...]
    references: tuple[str, ...]
    given: tuple[str, ...]
    patches: tuple[str, ...]
    api: Api
    labkit: dict[str, tuple[str, ...]]  # file -> labkit names it imports

    @property
    def given_files(self) -> list[Path]:
        """The given modules in the folder: a class edition holds back one that holds an earlier lab's
        answers until that lab's reference is released (labkit/course/edition.py, HELD_WITH)."""
        return [self.path / name for name in self.given if (self.path / name).is_file()]


def read(lab_dir: Path) -> Declaration:
    """The declaration of the lab in ``lab_dir``, checked: a DeclarationError says what is wrong and where."""
    lab_dir = Path(lab_dir)
    file = lab_dir / FILE
    if not file.is_file():
        raise DeclarationError(
            f'{file}: missing; every lab declares itself in its folder (CONTRIBUTING.md: "Adding a lab")'
        )
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise DeclarationError(f"{file}: not valid TOML: {err}") from None

    def fail(key: str, message: str):
        raise DeclarationError(f"{file}: {key}: {message}")

    if unknown := sorted(set(data) - _KEYS):
        fail(unknown[0], f"not a key of a lab's declaration (the keys: {', '.join(sorted(_KEYS))})")
    for key in ("id", "title", "builds"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            fail(key, "missing, or not a string")

    def names(table: dict, key: str, where: str, pattern=re.compile(r"[A-Za-z_]\w*")) -> tuple[str, ...]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and pattern.fullmatch(v) for v in value):
            fail(where, f"a list of names, not {value!r}")
        if len(set(value)) != len(value):
            fail(where, "a name listed twice")
        return tuple(value)

    if not _ID.fullmatch(data["id"]):
        fail("id", f"{data['id']!r} is not NN-MM (phase number, lab number)")
    tags = names(data, "tags", "tags")
    if not tags or (bad := [t for t in tags if t not in TAGS]):
        fail("tags", f"{bad if tags else []}: at least one, each one of {', '.join(TAGS)}")
    needs = names(data, "needs", "needs", _ID)
    references = names(data, "references", "references", _ID)
    if data["id"] in needs:
        fail("needs", "a lab does not need itself")
    if extra := [r for r in references if r not in needs]:
        fail("references", f"{extra}: a lab loads the reference of a lab it needs only (add it to needs)")
    given = names(data, "given", "given", re.compile(r"_\w+\.py"))

    patches = names(data, "patches", "patches", re.compile(r"[\w.]+"))
    if bad := [p for p in patches if not _PATCHABLE.fullmatch(p)]:
        fail(
            "patches",
            f"{bad}: a function of numpy, numpy.linalg or math, such as numpy.exp (the grader "
            "passes a test's replacement of those, and of the lab's own API names, to the submission)",
        )

    api_table = data.get("api", {})
    if not isinstance(api_table, dict) or (unknown := sorted(set(api_table) - set(_API_KEYS))):
        fail("api", f"a table of {', '.join(_API_KEYS)}")
    api = Api(**{key: names(api_table, key, f"api.{key}") for key in _API_KEYS})
    if private := [n for n in api.names if n.startswith("_")]:
        fail("api", f"{private}: the API is public names only")
    if len(set(api.names)) != len(api.names):
        fail("api", "a name listed under two kinds")

    imports = data.get("labkit", {})
    if not isinstance(imports, dict):
        fail("labkit", "a table: file -> the labkit names it imports")
    labkit = {}
    for name in imports:
        if name != "starter.py" and name not in given:
            fail(f"labkit.{name}", "starter.py or a given module only (list it under given)")
        labkit[name] = names(imports, name, f"labkit.{name}", re.compile(r"[a-z_.]+"))
        if unknown := [n for n in labkit[name] if n not in SANDBOX_LABKIT]:
            fail(
                f"labkit.{name}",
                f"{unknown}: the grading sandbox's labkit has only "
                f"{', '.join(SANDBOX_LABKIT)}; a file the sandbox runs may import nothing else of labkit "
                "(add a module to SANDBOX_LABKIT, whole, if it must)",
            )
    return Declaration(
        lab_dir, data["id"], data["title"], data["builds"], tags, needs, references, given, patches, api, labkit
    )


def find(root: Path) -> list[Declaration]:
    """Every lab of the course under ``root`` (``phase-*/labs/*/lab.toml``), by id; ids unique."""
    found = sorted((read(file.parent) for file in Path(root).glob(f"phase-*/labs/*/{FILE}")), key=lambda d: d.id)
    for a, b in zip(found, found[1:], strict=False):
        if a.id == b.id:
            raise DeclarationError(f"{b.path / FILE}: id: {b.id} is the id of {a.path} too")
    return found


def study_order(labs: list[Declaration]) -> list[Declaration]:
    """Each lab after every lab it needs; among those ready, the smallest id first. A need of no lab, or a
    circle of needs, is a DeclarationError."""
    by_id = {lab.id: lab for lab in labs}
    for lab in labs:
        if unknown := [n for n in lab.needs if n not in by_id]:
            raise DeclarationError(f"{lab.path / FILE}: needs: {unknown}: no such lab")
    order, placed = [], set()
    while len(order) < len(labs):
        ready = [lab for lab in labs if lab.id not in placed and placed.issuperset(lab.needs)]
        if not ready:
            stuck = sorted(lab.id for lab in labs if lab.id not in placed)
            raise DeclarationError(f"needs: the labs {stuck} need each other in a circle")
        order.append(ready[0])
        placed.add(ready[0].id)
    return order
