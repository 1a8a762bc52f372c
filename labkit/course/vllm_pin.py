"""The vLLM release the course cites, and the check that every citation holds there.

The course reads vLLM at one release, ``RELEASE``. Links into vLLM's tree name that tag, and
every path and definition the course cites must exist there. So that the check runs without
vLLM's source, a small index of the release is committed next to this file (``INDEX``): every
file under ``vllm/``, ``csrc/`` and ``benchmarks/``, and the definitions of each file (for Python files: classes,
functions, methods, module and class attributes, enum members; for C++/CUDA files: kernels,
functions, structs and classes found by a simple pattern).

Two commands, for the maintainers:

    python -m labkit.course.vllm_pin index <unpacked release>   # rewrite INDEX from the source
    python -m labkit.course.vllm_pin check                      # list every citation that fails

``<unpacked release>`` is the release's source distribution unpacked (the folder that holds
``vllm/``, ``csrc/`` and ``benchmarks/``): ``vllm-0.22.1.tar.gz`` from PyPI, downloaded without building it.
``tests/test_vllm_citations.py`` runs the check (``pytest -m maintainer``).

What counts as a citation (``citations``):

- a link ``github.com/vllm-project/vllm/blob/<ref>/<path>`` (or ``tree``): ``<ref>`` must be
  ``RELEASE`` and ``<path>`` a file or folder of the index;
- any other ``vllm/...``, ``csrc/...`` or ``benchmarks/...`` path in the text: it must exist in the index;
- a definition named with its file: ```Name`` in <path>`` (or ``of``, ``from``), and the list of
  backquoted names that follows a path and a colon (``<path>: `A.b`, `c```): each name must be
  defined in that file (``Class.method`` as written, a bare name anywhere in it);
- a release number ``v0.N.M``: it must be ``RELEASE``.

A note about another release is exempt from all four: a paragraph, list item or table row
that starts with ``**Since then**`` or ``**History**`` (in Markdown), or ``Since then:`` or
``History:`` (in a comment or docstring). Such a note says what changed after, or before,
``RELEASE``, and names the release it read.
"""

from __future__ import annotations

import ast
import gzip
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from labkit.course.registry import ROOT

RELEASE = "v0.22.1"
COMMIT = "0decac0"  # the commit the release's tag points at (the source reports g0decac0d9)
INDEX = Path(__file__).with_name(f"vllm-{RELEASE}.index.gz")
TREES = ("vllm", "csrc", "benchmarks")
_CSRC_SUFFIXES = (".cu", ".cuh", ".cpp", ".h", ".hpp", ".inl")

# ------------------------------------------------------------------------------------------
# The index: one line per file, then one tab-indented line per definition of that file.


def _python_definitions(source: str) -> set[str]:
    """Top-level and class-level names of a Python file: classes, functions, methods, attributes
    (enum members among them, and those a method sets on ``self``), nested classes as ``Outer.Inner``."""
    names: set[str] = set()

    def targets(node) -> list[str]:
        if isinstance(node, ast.Assign):
            return [t.id for t in node.targets if isinstance(t, ast.Name)]
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            return [node.target.id]
        return []

    def self_attributes(method) -> set[str]:
        return {t.attr for sub in ast.walk(method) if isinstance(sub, ast.Assign | ast.AnnAssign)
                for t in (sub.targets if isinstance(sub, ast.Assign) else [sub.target])
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}

    def visit(body, prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                names.add(prefix + node.name)
                visit(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(prefix + node.name)
                if prefix:  # a method: the attributes it sets on self are the class's too
                    names.update(prefix + attr for attr in self_attributes(node))
            elif isinstance(node, ast.If | ast.Try):  # definitions under `if TYPE_CHECKING:` or `try:`
                visit(node.body, prefix)
                visit(getattr(node, "orelse", []), prefix)
            else:
                names.update(prefix + name for name in targets(node))

    try:
        visit(ast.parse(source).body, "")
    except SyntaxError:
        pass
    return names


_C_DEFINITION = re.compile(
    r"(?:__global__|__device__|__host__|inline|static|void|bool|int|int64_t|float|auto|"
    r"torch::Tensor|at::Tensor|std::tuple<[^;{}]*?>)\s+(?:[\w:<>,*&\s]*?\s)?\**&?(\w+)\s*\(",
)
_C_TYPE = re.compile(r"\b(?:struct|class|enum class|enum)\s+(\w+)\s*[:{<]")


def _c_definitions(source: str) -> set[str]:
    """Names of kernels, functions, structs and classes in a C++/CUDA file, by pattern."""
    names = {m.group(1) for m in _C_DEFINITION.finditer(source)}
    names |= {m.group(1) for m in _C_TYPE.finditer(source)}
    return {n for n in names if n not in {"if", "for", "while", "switch", "return", "sizeof"}}


def build_index(release: Path) -> str:
    """The index text of the unpacked release at ``release``."""
    release = Path(release)
    if not all((release / tree).is_dir() for tree in TREES):
        raise SystemExit(f"{release} does not hold {' and '.join(TREES)}/: unpack the release's source distribution")
    lines = [f"# vLLM {RELEASE} ({COMMIT}): files under {', '.join(TREES)}, each followed by its definitions"]
    for path in sorted(p for tree in TREES for p in (release / tree).rglob("*") if p.is_file()):
        rel = path.relative_to(release).as_posix()
        if "__pycache__" in rel:
            continue
        lines.append(rel)
        if path.suffix == ".py":
            defs = _python_definitions(path.read_text(errors="replace"))
        elif path.suffix in _CSRC_SUFFIXES:
            defs = _c_definitions(path.read_text(errors="replace"))
        else:
            defs = set()
        lines += [f"\t{name}" for name in sorted(defs)]
    return "\n".join(lines) + "\n"


def write_index(release: Path) -> Path:
    # mtime=0: the same release gives the same bytes, so a rerun changes nothing in git.
    INDEX.write_bytes(gzip.compress(build_index(release).encode(), mtime=0))
    return INDEX


@dataclass(frozen=True)
class Release:
    """The committed index, read: files, folders, and the definitions of each file."""

    files: dict[str, frozenset[str]]
    folders: frozenset[str]

    @classmethod
    def load(cls, index: Path = INDEX) -> Release:
        files: dict[str, set[str]] = {}
        current = None
        for line in gzip.decompress(index.read_bytes()).decode().splitlines():
            if line.startswith("#") or not line:
                continue
            if line.startswith("\t"):
                files[current].add(line[1:])
            else:
                current = line
                files[current] = set()
        folders = {str(Path(f).parents[i].as_posix()) for f in files for i in range(len(Path(f).parts) - 1)}
        return cls({f: frozenset(d) for f, d in files.items()}, frozenset(folders))

    def has_path(self, path: str) -> bool:
        path = path.rstrip("/")
        return path in self.files or path in self.folders

    def defines(self, path: str, name: str) -> bool:
        """``Class.method`` as written; a bare name at any level of the file."""
        defs = self.files.get(path, frozenset())
        return name in defs or ("." not in name and any(d.endswith("." + name) for d in defs))


# ------------------------------------------------------------------------------------------
# Citations in the course's text.

_LINK = re.compile(r"github\.com/vllm-project/vllm/(?:blob|tree)/([\w.-]+)/(\w[^\s)`'\"#>\]]*)")
_PATH = re.compile(r"(?<![\w/.@-])((?:vllm|csrc|benchmarks)/[\w./-]*)")
_RELEASE_NUMBER = re.compile(r"\bv0\.\d+(?:\.\d+)?\b")
_NAME = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
# `Name` in `path` / `Name` in [`path`](...) / `Name` of path
_NAME_IN_PATH = re.compile(
    rf"`({_NAME})(?:\(\))?`,? (?:in|of|from) \[?`?((?:vllm|csrc|benchmarks)/[\w./-]+)")
# [`path`](...): `A`, `B` / `path`: `A` / `path` `A`
_PATH_THEN_NAMES = re.compile(
    r"((?:vllm|csrc|benchmarks)/[\w./-]+\.\w+)`?\]?(?:\([^)]*\))?:\s+((?:`[^`]+`(?:,\s*|\s+and\s+|\s*->\s*|\s*/\s*)?)+)")
_NOTE = re.compile(r"^(?:Since then|History)(?:\*\*|:)")  # on a line stripped of its leading marks
_NOTE_IN_CELL = re.compile(r"\|\s*\*\*(?:Since then|History)\*\*")
_BLOCK_START = re.compile(r"^\s*(?:[-*+] |\d+\. |#{1,6} |\|)")


@dataclass(frozen=True)
class Citation:
    file: str  # the course's file, relative to the repository root
    line: int
    kind: str  # "link", "path", "name", "release"
    text: str  # what was cited: the link's ref and path, a path, "path: Name", a release number
    problem: str | None  # None: it holds at RELEASE

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.kind} {self.text}: {self.problem or 'ok'}"


def _bare(line: str) -> str:
    """A line without its indentation and the marks around prose: comment, quote, list, table."""
    bare = line.strip().lstrip("#>|-*+ ").strip().strip('"').strip("'").strip()
    return re.sub(r"^\d+\.\s+", "", bare)


def _blocks(lines: list[str], markdown: bool) -> Iterator[list[int]]:
    """Line numbers (0-based) grouped into the paragraphs of a text: a blank line ends one; so
    does, in Markdown, a list item, a table row or a heading, and in Python the step from comment
    to code; and a note's first line starts one."""
    block: list[int] = []
    comment = False
    for i, line in enumerate(lines):
        bare = _bare(line)
        # In Python, a comment and the code next to it are not one paragraph.
        was_comment, comment = comment, not markdown and line.lstrip().startswith("#")
        if not bare or (markdown and _BLOCK_START.match(line)) or _NOTE.match(bare) or comment != was_comment:
            if block:
                yield block
            block = []
        if bare:
            block.append(i)
    if block:
        yield block


def _note_lines(lines: list[str], markdown: bool) -> set[int]:
    """The lines (0-based) inside a note about another release: a paragraph that starts with the
    note's mark, or a table row that holds it in one of its cells."""
    notes: set[int] = set()
    for block in _blocks(lines, markdown):
        first = lines[block[0]]
        if _NOTE.match(_bare(first)) or (first.lstrip().startswith("|") and _NOTE_IN_CELL.search(first)):
            notes.update(block)
    return notes


def citations(text: str, file: str, release: Release) -> list[Citation]:
    """Every vLLM citation of ``text`` (the contents of ``file``), outside notes, checked."""
    lines = text.splitlines()
    notes = _note_lines(lines, file.endswith(".md"))
    found: list[Citation] = []

    def cite(i, kind, what, problem):
        found.append(Citation(file, i + 1, kind, what, problem))

    for i, line in enumerate(lines):
        if i in notes:
            continue
        linked = set()
        for m in _LINK.finditer(line):
            ref, path = m.group(1), m.group(2).rstrip(".,:;")
            linked.add(m.start(2))
            if ref != RELEASE:
                cite(i, "link", f"{ref}/{path}", f"links to {ref}, not the course's release {RELEASE}")
            elif not release.has_path(path):
                cite(i, "link", f"{ref}/{path}", f"no such path at {RELEASE}")
            else:
                cite(i, "link", f"{ref}/{path}", None)
        for m in _PATH.finditer(line):
            if m.start(1) in linked:
                continue
            path = m.group(1).rstrip(".,:;")
            cite(i, "path", path, None if release.has_path(path) else f"no such path at {RELEASE}")
        named = [(m.group(2).rstrip(".,:;"), m.group(1)) for m in _NAME_IN_PATH.finditer(line)]
        for m in _PATH_THEN_NAMES.finditer(line):
            named += [(m.group(1), name) for name in re.findall(r"`([^`]+)`", m.group(2))]
        for path, name in named:
            name = name.removesuffix("()")
            if not re.fullmatch(_NAME, name) or not release.has_path(path):
                continue  # not a definition's name (an expression, a value); a bad path is reported above
            problem = None if release.defines(path, name) else f"{name} is not defined in {path} at {RELEASE}"
            cite(i, "name", f"{path}: {name}", problem)
        for m in _RELEASE_NUMBER.finditer(line):
            if m.group(0) != RELEASE:
                cite(i, "release", m.group(0), f"names {m.group(0)} outside a note (**Since then** / **History**)")
    return found


# The checker's own tests hold wrong citations on purpose.
_NOT_SCANNED = ("tests/test_vllm_citations.py",)


def course_files() -> list[str]:
    """The tracked text files of the course, less the index itself and the checker's tests."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.split("\n")
    skip = {INDEX.relative_to(ROOT).as_posix(), *_NOT_SCANNED}
    return [f for f in out if f and f not in skip and (ROOT / f).is_file()]


def check_course(release: Release | None = None) -> list[Citation]:
    """Every citation of every course file, checked against the index."""
    release = release or Release.load()
    found = []
    for file in course_files():
        try:
            text = (ROOT / file).read_text()
        except (UnicodeDecodeError, OSError):
            continue  # not text
        found += citations(text, file, release)
    return found


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "index":
        path = write_index(Path(argv[1]))
        print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size} bytes)")
        return 0
    if argv == ["check"]:
        found = check_course()
        bad = [c for c in found if c.problem]
        print("\n".join(map(str, bad)))
        print(f"{len(found) - len(bad)} citations hold at {RELEASE}, {len(bad)} do not")
        return 1 if bad else 0
    print(__doc__.split("\n\n")[2], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
