"""The mutants of a lab: small wrong versions of its solution, each one edit a bug of the gallery could make.

A mutant changes one thing in ``solution.py`` or in one of the lab's given modules (the ``_*.py``
files the solution imports), the way a learner's classic mistakes do. The operators:

- ``arithmetic``: ``+`` and ``-``, ``*`` and ``/``, ``/`` and ``//``, ``%`` to ``//``, ``@`` to ``*``,
  ``&`` and ``|``, ``**`` to ``*`` (and their ``op=``): a wrong formula, a true division for a floor
  one, an elementwise product for a matrix one;
- ``unary minus``: ``-x`` to ``x``: a sign; ``-(-a // b)`` (a ceiling) read as a floor;
- ``compare``: ``<`` and ``<=``, ``>`` and ``>=``, ``==`` and ``!=``, ``is`` and ``is not``, ``in``
  and ``not in``: an off-by-one at a boundary, a test turned around;
- ``constant``: an integer ``n`` to ``n + 1`` and ``n - 1``; ``0.0`` and ``1.0``; ``True`` and
  ``False``: an off-by-one, a wrong start;
- ``-inf``: ``-inf`` to ``0.0``, ``0.0`` to ``-inf``: a running max that starts at 0;
- ``and/or``: ``and`` and ``or``: a condition half wrong;
- ``not``: ``not`` removed, or added to an ``if``/``while`` test: a test turned around;
- ``check removed``: ``if <x>: raise ...`` never raising: a missing input check;
- ``statement removed``: an assignment (not of a string: a kernel's source, a message), an ``op=``,
  a call made for its effect, a bare ``return``, ``break`` or ``continue`` replaced by ``pass``: a
  forgotten update;
- ``return value``: ``return x`` to ``return None``: a result computed and not handed back;
- ``slice bound``: ``a[lo:hi]`` with ``hi`` or ``lo`` plus or minus 1 (bounds that are not
  constants, which the constants' own mutants cover): a slice one too long or short;
- ``range bound``: the end of ``range``/``arange`` plus or minus 1 (not a constant): a loop one
  too long or short;
- ``argument dropped``: a keyword argument, or the last positional one where the lab's own
  function has a default for it: a forgotten ``dtype=``, ``axis=``, ``strict=``;
- ``min/max``: ``min`` and ``max`` (and ``minimum``, ``argmin``, ``amin``...): the wrong end.

Nothing is mutated in docstrings and comments (they are not code), in strings and f-strings, in
``raise`` statements and ``assert`` messages (an error's words), in decorators and annotations, or
under ``if __name__ == "__main__":`` (a demo no test runs).

Each mutant is an edit ``(old, new)`` of one source file, in the form a bug of the gallery uses
(:mod:`labkit.course.bugs`): ``old`` is the whole line (or lines) that the change touches, widened
by the lines around it until it occurs exactly once in the file. ``(file, old, new)`` names the
mutant whatever else changes in the file, which is how a lab's list of survivors names it
(:mod:`labkit.course.survivors`). :func:`lab_mutants` generates them, in a fixed order.
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass
from pathlib import Path

SOLUTION = "solution.py"


@dataclass(frozen=True)
class Mutant:
    source: str  # the file of the lab folder it edits: "solution.py" or a given module "_checks.py"
    old: str  # whole lines of the file, occurring exactly once in it
    new: str
    line: int  # where ``old`` starts in the file (1-based), for people: the survivors list never uses it
    operator: str  # what changed, in words: "compare: < to <="

    @property
    def key(self) -> tuple[str, str, str]:
        """What names the mutant stably: its file and its edit."""
        return (self.source, self.old, self.new)

    @property
    def where(self) -> str:
        """``file:line`` of the changed line."""
        old, new = self.old.splitlines(), self.new.splitlines()
        same = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new)))
        return f"{self.source}:{self.line + same}"

    def diff(self) -> str:
        """The edit as a unified diff, its lines numbered as in the file (the lines around the change
        that make ``old`` unique are its context)."""
        old, new = self.old.splitlines(keepends=True), self.new.splitlines(keepends=True)
        hunk = list(difflib.unified_diff(old, new, self.source, "mutant", n=len(old) + len(new)))
        if len(hunk) < 3:
            return ""
        header = f"@@ -{self.line},{len(old)} +{self.line},{len(new)} @@\n"
        return "".join([*hunk[:2], header, *hunk[3:]])


# --------------------------------------------------------------------------- which files


def given_modules(lab_dir: Path) -> list[str]:
    """The lab's given modules the solution imports, directly or through another given module, in the
    order they are first imported: ``["_engine_base.py", "_runner.py"]``."""
    lab_dir = Path(lab_dir)
    found: list[str] = []
    queue = [SOLUTION]
    while queue:
        tree = ast.parse((lab_dir / queue.pop(0)).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            for name in names:
                file = f"{name}.py"
                if name.startswith("_") and (lab_dir / file).is_file() and file not in found:
                    found.append(file)
                    queue.append(file)
    return found


def lab_mutants(lab_dir: Path) -> list[Mutant]:
    """Every mutant of the lab: its solution's, then its given modules', each file in source order."""
    lab_dir = Path(lab_dir)
    return [m for source in [SOLUTION, *given_modules(lab_dir)]
            for m in file_mutants((lab_dir / source).read_text(encoding="utf-8"), source)]


# --------------------------------------------------------------------------- the operators

_SWAPS = {  # arithmetic: the operator's class -> (its text, [(the mutant's operator, its text)])
    ast.Add: ("+", ["-"]), ast.Sub: ("-", ["+"]), ast.Mult: ("*", ["/"]), ast.Div: ("/", ["*", "//"]),
    ast.FloorDiv: ("//", ["/", "*"]), ast.Mod: ("%", ["//"]), ast.MatMult: ("@", ["*"]),
    ast.BitAnd: ("&", ["|"]), ast.BitOr: ("|", ["&"]), ast.Pow: ("**", ["*"]),
}
_COMPARES = {
    ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="), ast.NotEq: ("!=", "=="), ast.Is: ("is", "is not"), ast.IsNot: ("is not", "is"),
    ast.In: ("in", "not in"), ast.NotIn: ("not in", "in"),
}
_MIN_MAX = {"min": "max", "max": "min", "minimum": "maximum", "maximum": "minimum", "argmin": "argmax",
            "argmax": "argmin", "amin": "amax", "amax": "amin", "fmin": "fmax", "fmax": "fmin",
            "nanmin": "nanmax", "nanmax": "nanmin", "cummin": "cummax", "cummax": "cummin"}
_RANGES = {"range", "arange"}
_ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_REMOVABLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete, ast.Break, ast.Continue)


class _Source:
    """A file's text, with AST positions turned into offsets of the text."""

    def __init__(self, text: str):
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def offset(self, lineno: int, col: int) -> int:
        # AST columns count UTF-8 bytes; the text counts characters.
        line = self.lines[lineno - 1]
        return self.starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", "replace"))

    def span(self, node) -> tuple[int, int]:
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    def segment(self, node) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    def line_of(self, offset: int) -> int:
        """The 0-based line that holds ``offset``."""
        lo, hi = 0, len(self.lines) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo


def _between(src: _Source, left, right) -> tuple[int, int]:
    """The text between two nodes: where an operator's token is (with parentheses, spaces, comments)."""
    return src.offset(left.end_lineno, left.end_col_offset), src.offset(right.lineno, right.col_offset)


def _token_at(src: _Source, start: int, end: int, token: str) -> tuple[int, int] | None:
    """Where ``token`` (an operator) is between ``start`` and ``end``, outside comments."""
    text = src.text[start:end]
    code = re.sub(r"#[^\n]*", lambda m: " " * len(m.group()), text)
    word = token[0].isalpha()
    pattern = r"\b" + r"\s+".join(map(re.escape, token.split())) + r"\b" if word else \
        r"(?<![-+*/%@&|<>=!])" + re.escape(token) + r"(?![-+*/%@&|<>=])"
    found = list(re.finditer(pattern, code))
    if len(found) != 1:
        return None
    return start + found[0].start(), start + found[0].end()


def _wrap(src: _Source, node) -> str:
    """The node's text, in parentheses unless it is an atom."""
    text = src.segment(node)
    return text if isinstance(node, _ATOMS) and not text.startswith("-") else f"({text})"


def _is_neg_inf(node) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = node.operand
        return (isinstance(inner, ast.Attribute) and inner.attr == "inf") or (
            isinstance(inner, ast.Name) and inner.id == "inf")
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float"
            and len(node.args) == 1 and isinstance(node.args[0], ast.Constant)
            and str(node.args[0].value).strip().lower() in ("-inf", "-infinity"))


def _callee(node: ast.Call) -> str | None:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _defaults(tree: ast.Module) -> dict[str, tuple[int, int]]:
    """The file's functions and methods: name -> (positional parameters without self, how many have
    defaults). A name defined twice is left out (which one a call reaches is not known)."""
    seen: dict[str, tuple[int, int] | None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            params = [*node.args.posonlyargs, *node.args.args]
            if params and params[0].arg in ("self", "cls"):
                params = params[1:]
            seen[node.name] = None if node.name in seen else (len(params), len(node.args.defaults))
    return {name: value for name, value in seen.items() if value is not None}


def _skipped(tree: ast.Module) -> set[int]:
    """The ids of the nodes nothing is mutated under: messages, docstrings, decorators, annotations, demos."""
    roots = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise | ast.JoinedStr):
            roots.append(node)
        elif isinstance(node, ast.Assert) and node.msg is not None:
            roots.append(node.msg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            roots += node.decorator_list
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                roots += [a.annotation for a in ast.walk(node.args) if isinstance(a, ast.arg) and a.annotation]
                roots += [node.returns] if node.returns else []
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
        elif isinstance(node, ast.If) and "__name__" in ast.dump(node.test) and "__main__" in ast.dump(node.test):
            roots.append(node)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
                    first.value.value, str):
                roots.append(first)
    return {id(n) for root in roots for n in ast.walk(root)}


def _changes(src: _Source, tree: ast.Module):
    """Every change the operators make: (start, end, replacement, operator), in source order."""
    skip = _skipped(tree)
    defaults = _defaults(tree)
    out = []

    def add(start, end, text, what):
        out.append((start, end, text, what))

    def token(left_node, right_node, old_tok, new_tok, what):
        where = _token_at(src, *_between(src, left_node, right_node), old_tok)
        if where:
            add(*where, new_tok, f"{what}: {old_tok} to {new_tok}")

    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.BinOp) and type(node.op) in _SWAPS:
            old_tok, news = _SWAPS[type(node.op)]
            for new_tok in news:
                token(node.left, node.right, old_tok, new_tok, "arithmetic")
        elif isinstance(node, ast.AugAssign) and type(node.op) in _SWAPS:
            old_tok, news = _SWAPS[type(node.op)]
            for new_tok in news:
                token(node.target, node.value, old_tok + "=", new_tok + "=", "arithmetic")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and not _is_neg_inf(node):
            if not isinstance(node.operand, ast.Constant):  # -1: the constant's own mutants cover it
                start, end = src.span(node)
                add(start, end, _wrap(src, node.operand), "unary minus: removed")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            start, end = src.span(node)
            add(start, end, _wrap(src, node.operand), "not: removed")
        elif isinstance(node, ast.Compare):
            left = node.left
            for op, right in zip(node.ops, node.comparators, strict=True):
                old_tok, new_tok = _COMPARES[type(op)]
                token(left, right, old_tok, new_tok, "compare")
                left = right
        elif isinstance(node, ast.BoolOp):
            old_tok, new_tok = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
            start, end = src.span(node)
            pieces, last = [], start
            for left, right in zip(node.values, node.values[1:], strict=False):
                where = _token_at(src, *_between(src, left, right), old_tok)
                if where is None:
                    break
                pieces += [src.text[last:where[0]], new_tok]
                last = where[1]
            else:
                add(start, end, "".join(pieces) + src.text[last:end], f"and/or: {old_tok} to {new_tok}")
        elif _is_neg_inf(node):
            start, end = src.span(node)
            add(start, end, "0.0", f"-inf: {src.segment(node)} to 0.0")
        elif isinstance(node, ast.Constant):
            _constant(src, node, add)
        elif isinstance(node, ast.Slice):
            for bound, name in ((node.lower, "lo"), (node.upper, "hi")):
                if bound is not None and not isinstance(bound, ast.Constant):
                    start, end = src.span(bound)
                    for sign in ("+", "-"):
                        add(start, end, f"{_wrap(src, bound)} {sign} 1", f"slice bound: {name} {sign} 1")
        if isinstance(node, ast.Call):
            _call(src, node, defaults, add)
        if isinstance(node, ast.If | ast.While) and not _raises_only(node) and not _negated_elsewhere(node.test):
            start, end = src.span(node.test)
            add(start, end, f"not {_wrap(src, node.test)}", "not: added")
        if isinstance(node, ast.If) and _raises_only(node):
            start, end = src.span(node.test)
            add(start, end, "False", "check removed")
        if isinstance(node, _REMOVABLE) or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)) or (
                isinstance(node, ast.Return) and (node.value is None or (
                    isinstance(node.value, ast.Constant) and node.value.value is None))):
            if not (isinstance(node, ast.AnnAssign) and node.value is None) and not _defines_text(node):
                start, end = src.span(node)
                add(start, end, "pass", "statement removed")
        elif isinstance(node, ast.Return) and node.value is not None:
            start, end = src.span(node.value)
            add(start, end, "None", "return value: None")
    return sorted(out, key=lambda change: (change[0], change[1]))


def _defines_text(node) -> bool:
    """An assignment of a string (a kernel's source, a message): without it the name does not exist,
    which any use shows; it models no mistake."""
    value = getattr(node, "value", None)
    return isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(value, ast.Constant) and isinstance(
        value.value, str)


def _negated_elsewhere(test) -> bool:
    """A test another operator already turns around: ``not x``, ``a == b``, ``a is b``, ``a in b``."""
    turned = (ast.Eq, ast.NotEq, ast.Is, ast.IsNot, ast.In, ast.NotIn)
    return (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)) or (
        isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], turned))


def _raises_only(node) -> bool:
    """An ``if`` whose body only raises, with no ``else``: an input check."""
    return isinstance(node, ast.If) and not node.orelse and all(isinstance(s, ast.Raise) for s in node.body)


def _constant(src: _Source, node: ast.Constant, add) -> None:
    start, end = src.span(node)
    value = node.value
    if isinstance(value, bool):
        add(start, end, str(not value), f"constant: {value} to {not value}")
    elif isinstance(value, int):
        for new in (value + 1, value - 1):
            add(start, end, str(new), f"constant: {src.segment(node)} to {new}")
    elif isinstance(value, float) and value in (0.0, 1.0):
        add(start, end, "1.0" if value == 0.0 else "0.0", f"constant: {src.segment(node)} to {1.0 - value}")
        if value == 0.0:
            add(start, end, 'float("-inf")', f"-inf: {src.segment(node)} to -inf")


def _call(src: _Source, node: ast.Call, defaults: dict, add) -> None:
    name = _callee(node)
    if name in _MIN_MAX:
        func = node.func
        end = src.offset(func.end_lineno, func.end_col_offset)
        add(end - len(name), end, _MIN_MAX[name], f"min/max: {name} to {_MIN_MAX[name]}")
    if name in _RANGES and node.args and not any(isinstance(a, ast.Starred) for a in node.args):
        stop = node.args[1] if len(node.args) >= 2 else node.args[0]
        if not isinstance(stop, ast.Constant):
            start, end = src.span(stop)
            for sign in ("+", "-"):
                add(start, end, f"{_wrap(src, stop)} {sign} 1", f"range bound: end {sign} 1")
    # Arguments dropped: the comma goes with them.
    args = [*node.args, *node.keywords]
    args.sort(key=lambda a: (a.lineno, a.col_offset))
    droppable = [k for k in node.keywords if k.arg is not None]
    known = defaults.get(name) if isinstance(node.func, ast.Name | ast.Attribute) else None
    positional = [a for a in node.args if not isinstance(a, ast.Starred)]
    if known and positional and len(positional) == len(node.args) and len(positional) > known[0] - known[1]:
        droppable.append(positional[-1])
    for arg in droppable:
        i = args.index(arg)
        if i > 0:
            start = src.offset(args[i - 1].end_lineno, args[i - 1].end_col_offset)
            end = src.offset(arg.end_lineno, arg.end_col_offset)
        elif len(args) > 1:
            start, end = src.offset(arg.lineno, arg.col_offset), src.offset(args[1].lineno, args[1].col_offset)
        else:
            start, end = src.span(arg)
        what = f"{arg.arg}=" if isinstance(arg, ast.keyword) else "the last positional argument"
        add(start, end, "", f"argument dropped: {what}")


# --------------------------------------------------------------------------- changes as edits


def file_mutants(text: str, source: str) -> list[Mutant]:
    """The mutants of one file's ``text`` (``source`` is its name in the lab folder), each an edit
    whose ``old`` occurs exactly once in ``text``; changes that do not parse are left out, and a
    change that another one already made is kept once."""
    src = _Source(text)
    tree = ast.parse(text)
    # A change is parsed within the smallest function (or top-level statement) around it: the whole
    # file, parsed once per change, is most of the time a large lab's mutants would take.
    scopes = sorted(((src.starts[min([n.lineno, *(d.lineno for d in getattr(n, "decorator_list", []))]) - 1],
                      src.starts[n.end_lineno], n.col_offset > 0)
                     for n in [*tree.body, *(n for n in ast.walk(tree) if isinstance(n, _SCOPES))]),
                    key=lambda scope: scope[1] - scope[0])
    mutants, seen = [], set()
    for start, end, replacement, what in _changes(src, tree):
        if src.text[start:end] == replacement:
            continue
        lo, hi, nested = next((s for s in scopes if s[0] <= start and end <= s[1]), (0, len(text), False))
        try:  # an indented function parses as the body of an "if"
            ast.parse(("if 1:\n" if nested else "") + text[lo:start] + replacement + text[end:hi])
        except SyntaxError:
            continue
        mutant = _as_edit(src, start, end, replacement, source, what)
        if mutant is not None and mutant.key not in seen:
            seen.add(mutant.key)
            mutants.append(mutant)
    return mutants


def _as_edit(src: _Source, start: int, end: int, replacement: str, source: str, what: str) -> Mutant | None:
    """The change as whole lines, widened (a line before, then a line after, in turn) until the old
    lines occur once in the file."""
    first, last = src.line_of(start), src.line_of(max(start, end - 1))
    before = True
    while True:
        lo, hi = src.starts[first], src.starts[last + 1]
        old = src.text[lo:hi]
        if src.text.count(old) == 1:
            new = src.text[lo:start] + replacement + src.text[end:hi]
            return Mutant(source, old, new, first + 1, what)
        if first == 0 and last == len(src.lines) - 1:
            return None
        if (before and first > 0) or last == len(src.lines) - 1:
            first -= 1
        else:
            last += 1
        before = not before
