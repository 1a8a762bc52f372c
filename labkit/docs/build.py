"""Build the site: copy the pages into a build folder, run MkDocs (strict), typeset the math.

Pages are read from where they live in the repository and written, under the same relative
paths, to ``<out>/src``, so every relative link between them means what it means on GitHub.
Only what a static site needs is changed, in the copy:

- a link to a folder goes to the folder's ``README.md`` (MkDocs does not resolve folders);
- a link to a source file (``starter.py``, ``LICENSE``) goes to a generated code page beside it
  (``starter.py.md``), highlighted, searchable, and inside the site, so it works offline;
- a linked image is copied; a linked Markdown file becomes a page even if the nav does not list it;
- a lab's README gets a header after its title: where it runs (from the registry), its place in
  study order, links to its starter and tests, and the commands that run them.

A link whose target does not exist is left as it is: the strict build then fails and names it.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from labkit.course import registry
from labkit.course.registry import ROOT, Lab
from labkit.docs import book, hooks

DEFAULT_OUT = ROOT / "build" / "docs"
SETTINGS = ROOT / "docs" / "mkdocs.yml"
ASSETS = ROOT / "docs" / "assets"
OVERRIDES = ROOT / "docs" / "overrides"
_REPO_URL = re.compile(r"^repo_url:\s*(\S+)\s*$", re.M)
CLONE_PLACEHOLDER = "<this repository>"
MATH_FONT = "STIXTwoMath-Regular.ttf"
PRINT_TITLE = "the course as one page"

IMAGES = {".png", ".svg", ".jpg", ".jpeg", ".gif", ".webp"}
LANGUAGES = {".py": "python", ".toml": "toml", ".json": "json", ".yml": "yaml", ".yaml": "yaml",
             ".sh": "bash", ".cu": "cuda", ".cuh": "cuda", ".cfg": "ini", ".txt": "text"}
CODE_PAGE_LIMIT = 1_000_000  # bytes: a bigger file is copied as it is, not rendered

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+).*?\1")
_LINK = re.compile(r"(\]\(\s*<?)([^)\s>]+)")  # [text](target  or  ![alt](target
_REFERENCE = re.compile(r"^(\s{0,3}\[[^\]]+\]:\s*<?)(\S+?)(>?(\s|$))")


class BuildError(Exception):
    """The site cannot be built: a page is missing, or MkDocs failed (its log is in the message)."""


# --------------------------------------------------------------------------- links


def outside_code(text: str):
    """Yield (line number, line with inline code blanked) for every line outside fenced code."""
    fence = None
    for number, line in enumerate(text.split("\n")):
        opened = _FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
        elif fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
        else:
            yield number, _INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)


def rewrite_links(text: str, rewrite) -> str:
    """``text`` with every Markdown link target outside code replaced by ``rewrite(target)``; where
    that is None, an inline link is replaced by its text (a file the site does not publish)."""
    lines = text.split("\n")
    for number, visible in outside_code(text):
        edits = []  # (start, end, replacement), never overlapping
        for m in _LINK.finditer(visible):
            new = rewrite(visible[m.start(2) : m.end(2)])
            opening = _opening_bracket(visible, m.start(1))
            close = visible.find(")", m.end(2))
            if new is not None or opening is None or close < 0 or visible[opening - 1 : opening] == "!":
                edits.append((m.start(2), m.end(2), m.group(2) if new is None else new))
            else:  # [text](target) -> text
                edits += [(opening, opening + 1, ""), (m.start(1), close + 1, "")]
        ref = _REFERENCE.match(visible)
        if ref:
            new = rewrite(ref.group(2))
            edits.append((ref.start(2), ref.end(2), ref.group(2) if new is None else new))
        line = lines[number]
        for start, end, replacement in sorted(edits, reverse=True):
            line = line[:start] + replacement + line[end:]
        lines[number] = line
    return "\n".join(lines)


def _opening_bracket(visible: str, close: int) -> int | None:
    """The index of the ``[`` that the ``]`` at ``close`` closes, or None."""
    depth = 0
    for i in range(close, -1, -1):
        if visible[i] == "]":
            depth += 1
        elif visible[i] == "[":
            depth -= 1
            if depth == 0:
                return i
    return None


class Site:
    """The pages being copied into ``src``, and the files their links pull in."""

    def __init__(self, src: Path):
        self.src = src
        self.queue: list[str] = []  # pages (repository paths) still to copy
        self.seen: set[str] = set()

    def add_page(self, rel: str) -> None:
        if rel not in self.seen:
            self.seen.add(rel)
            self.queue.append(rel)

    def target(self, page: str, target: str) -> str | None:
        """Where a link of ``page`` should point in the site; pulls the target into the site.
        None for a file the site leaves out (``book.UNPUBLISHED``): the link becomes its text."""
        if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith(("#", "/")):
            return target  # a URL, an anchor on the same page, or an absolute path (the build warns)
        path, _, fragment = target.partition("#")
        fragment = f"#{fragment}" if fragment else ""
        found = (ROOT / page).parent.joinpath(path).resolve()
        if not found.exists() or (found != ROOT and ROOT not in found.parents):
            return target  # dead or outside the repository: the strict build names it
        rel = found.relative_to(ROOT).as_posix()
        if rel.split("/")[0] in book.UNPUBLISHED:
            return None
        if found.is_dir():
            if not (found / "README.md").is_file():
                return target  # a folder without a README: the strict build names it
            self.add_page((found / "README.md").relative_to(ROOT).as_posix())
            return f"{path.rstrip('/')}/README.md{fragment}"
        if found.suffix == ".md":
            self.add_page(rel)
        elif found.suffix.lower() in IMAGES or found.stat().st_size > CODE_PAGE_LIMIT or not _is_text(found):
            self.copy(rel)
        else:
            self.write(f"{rel}.md", code_page(rel))
            return f"{path}.md{fragment}"
        return target

    def copy(self, rel: str) -> None:
        dest = self.src / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, dest)

    def write(self, rel: str, text: str) -> None:
        dest = self.src / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")


def _is_text(path: Path) -> bool:
    try:
        path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return False
    return True


_LIST_ITEM = re.compile(r" {0,3}([-*+]|1[.)]) ")
_NOT_PARAGRAPH = re.compile(r"\s|#|\||>|<|([-*+]|\d+[.)]) |(-{3,}|\*{3,}|_{3,})\s*$")


def lists_interrupt_paragraphs(text: str) -> str:
    """A blank line before every list that starts right under a paragraph line. GitHub (CommonMark)
    lets a list interrupt a paragraph; Python-Markdown does not, and would print the items as
    "- one - two" inside the paragraph."""
    lines = text.split("\n")
    visible = dict(outside_code(text))
    glued = [n for n in range(1, len(lines)) if n in visible and n - 1 in visible
             and _LIST_ITEM.match(lines[n]) and lines[n - 1].strip() and not _NOT_PARAGRAPH.match(lines[n - 1])]
    for n in reversed(glued):
        lines.insert(n, "")
    return "\n".join(lines)


# --------------------------------------------------------------------------- figures

_IMAGE = re.compile(r"(?<!\[)!\[([^\]]*)\]\(\s*([^)\s]+)\s*\)")


def figure_markup(text: str, page: str) -> str:
    """Every image of ``page`` (``![alt](x.svg)``, outside code, not already a link; its alt text may
    run over several lines) as a link to itself, so that a click opens it full size, with its width
    and height (no layout jump while it loads); an SVG that has a ``x.dark.svg`` twin
    (``labkit.figures.save``) is written twice, the light one shown in light mode and the dark one in
    dark mode (docs/assets/site.css)."""
    from labkit.figures import dark_path, svg_size

    lines = text.split("\n")
    visible = [" " * len(line) for line in lines]  # code blanked out, offsets kept
    for number, line in outside_code(text):
        visible[number] = line
    edits = []
    for m in _IMAGE.finditer("\n".join(visible)):
        alt, target = " ".join(m.group(1).split()), m.group(2)
        found = (ROOT / page).parent / target.split("#")[0]
        if not found.is_file():
            continue  # a dead image: the strict build names it
        size = ""
        if found.suffix == ".svg":
            width, height = svg_size(found.read_text(encoding="utf-8"))
            size = f'{{ width="{round(width * 96 / 72)}" height="{round(height * 96 / 72)}" }}'
        twin = dark_path(found) if found.suffix == ".svg" else None
        if twin and twin.is_file():
            dark = target.rsplit("/", 1)[0] + "/" + twin.name if "/" in target else twin.name
            markup = (f"[![{alt}]({target}#only-light){size}]({target}){{ .figure .figure--light }}"
                      f"[![{alt}]({dark}#only-dark){size}]({dark}){{ .figure .figure--dark }}")
        else:
            markup = f"[![{alt}]({target}){size}]({target}){{ .figure }}"
        edits.append((m.start(), m.end(), markup))
    for start, end, markup in sorted(edits, reverse=True):
        text = text[:start] + markup + text[end:]
    return text


# --------------------------------------------------------------------------- generated text


def code_page(rel: str) -> str:
    """A page that shows a repository file as highlighted code."""
    path = ROOT / rel
    text = path.read_text(encoding="utf-8")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    language = LANGUAGES.get(path.suffix.lower(), "text")
    lab = registry.lab_for_path(path)
    title = f"Lab {lab.id}: {path.relative_to(lab.path).as_posix()}" if lab else rel
    return (
        front_matter(SEARCH_BOOST["code"])
        + f"# {title}\n\n`{rel}` in the repository, as it was when this site was built.\n\n"
        f"{fence}{language}\n{text.rstrip()}\n{fence}\n"
    )


# Search ranks a section by where its words are (a title counts far more than text), times its
# page's boost: a lab's README first, a code page (which repeats every name a hundred times) last.
SEARCH_BOOST = {"lab": 4.0, "code": 0.2}


def front_matter(boost: float, terms: tuple[str, ...] = ()) -> str:
    """The YAML front matter that sets a page's search boost (Material's ``search.boost``) and the
    terms it teaches (its search ``tags``, which no page shows: the site has no tags plugin)."""
    tags = "tags:\n" + "".join(f"  - {json.dumps(term)}\n" for term in terms) if terms else ""
    return f"---\nsearch:\n  boost: {boost}\n{tags}---\n\n"


def lab_header(lab: Lab) -> str:
    """What a lab page shows under its title, the one place it says where the lab runs and where it
    stands in study order (the READMEs say what a lab needs, not these): then its files and commands."""
    order = [entry.id for entry in registry.LABS]
    place = f"{order.index(lab.id) + 1} of {len(order)} in study order"
    files = [("your file", "starter.py"), ("its tests", "test_lab.py"), ("demo", "lab.py"),
             ("figures", "figures.py"), ("GPU benchmark", "bench.py")]
    links = [f"{what}: [`{name}`]({name})" for what, name in files if (lab.path / name).is_file()]
    given = book.called_modules(lab)
    if given:
        links.append("given: " + ", ".join(f"[`{name}`]({name})" for name in given))
    commands = [
        (f"labs check {lab.id} --impl starter", "your work against the tests, one line per test"),
        (f"LAB_IMPL=starter pytest -q {lab.folder}", "the same with pytest's full messages"),
        (f"labs hint {lab.id}", "the next hint"),
    ]
    if (lab.path / "bugs").is_dir():  # a class edition holds a gallery once the lab's reference is released
        commands.append((f"labs bugs {lab.id}", "the classic mistakes, and the tests that catch each"))
    for script, what in (("lab.py", "the demo"), ("bench.py", "the GPU benchmark")):
        if (lab.path / script).is_file():
            fallback = [(f"python {lab.folder}/{script}", f"{what}: its README says how")]
            commands += script_commands(lab, script, what) or fallback
    rows = "\n".join(f"    | `{command}` | {why} |" for command, why in commands)
    here = f"{lab.folder}/README.md"
    position = order.index(lab.id)
    neighbours = [f"{word} [{book.lab_title(other)}]({_relative(here, f'{other.folder}/README.md')})"
                  for word, other in (("after", registry.LABS[position - 1] if position else None),
                                      ("before", registry.LABS[position + 1] if position + 1 < len(order) else None))
                  if other]
    return (
        f'!!! info "Lab {lab.id} · runs on: {lab.runs_on} · {place}"\n\n'
        + (f"    In study order: {' · '.join(neighbours)}.\n\n" if neighbours else "")
        + f"    {' · '.join(links)}\n\n"
        f"    | command | what it does |\n    |---|---|\n{rows}\n\n"
        f"    `labs` comes with `pip install -e .`; `python -m labkit.cli` is the same command without it.\n"
    )


def script_commands(lab: Lab, script: str, what: str, limit: int = 2) -> list[tuple[str, str]]:
    """The first ``python <lab folder>/<script> ...`` lines of the README's code blocks (a line
    continued with ``\\`` read whole), with the comment on the line above or after it: the lab's own
    commands (``--dry``, ``--out``...), so the header never drifts from them."""
    text = (lab.path / "README.md").read_text(encoding="utf-8")
    prefix = f"python {lab.folder}/{script}"
    found, fence, above, pending = [], None, "", ""
    for line in text.split("\n"):
        opened = _FENCE.match(line)
        if opened:
            fence, above, pending = (None if fence else opened.group(1)), "", ""
            continue
        if not fence:
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        line, pending = pending + line, ""
        command, _, comment = line.strip().partition("#")
        command = " ".join(command.split())
        if not command:
            above = comment.strip()
            continue
        if command == prefix or command.startswith(prefix + " "):
            found.append((command, comment.strip() or above or what))
        above = ""
    return found[:limit]


def lab_footer(lab: Lab) -> str:
    """What ends a lab page: the next lab in study order (and the pages Next shows before it), then
    the lab's hints and results, which Next skips (``book.reading_links``)."""
    here = f"{lab.folder}/README.md"
    following, between = book.next_lab(lab)
    lines = ["", "---", ""]
    if following:
        before = ", ".join(f"[{book.page_title(p)}]({_relative(here, p)})" for p in between)
        lines.append(f"**Next lab:** [{book.lab_title(following)}]({_relative(here, f'{following.folder}/README.md')})"
                     + (f" On the way: {before}." if before else ""))
    else:
        after = ", ".join(f"[{book.page_title(p)}]({_relative(here, p)})" for p in between)
        lines.append("**This is the course's last lab.**" + (f" What follows: {after}." if after else ""))
    extras = [f"[{title.format(id=lab.id)}]({name})" for name, title in book.LAB_PAGES if (lab.path / name).is_file()]
    if extras:
        lines += ["", f"More on this lab: {' · '.join(extras)}."]
    return "\n".join(lines) + "\n"


def _relative(page: str, target: str) -> str:
    """``target`` (a repository path) as a link from ``page``."""
    return os.path.relpath(ROOT / target, (ROOT / page).parent).replace(os.sep, "/")


_HINT = re.compile(r"##\s+(Hint\s+(\d+)\b.*)$")


def folded_hints(text: str) -> str:
    """A hints page with each hint folded under its heading, as ``labs hint`` gives them one at a
    time: the heading (and its anchor) stays, the hint opens on a click."""
    lines = text.split("\n")
    visible = dict(outside_code(text))
    starts = [n for n in range(len(lines)) if n in visible and _HINT.match(visible[n])]
    for i, start in reversed(list(enumerate(starts))):
        end = starts[i + 1] if i + 1 < len(starts) else len(lines)
        while end > start + 1 and not lines[end - 1].strip():
            end -= 1
        number = _HINT.match(visible[start]).group(2)
        body = [f"    {line}" if line.strip() else "" for line in lines[start + 1 : end]]
        lines[start + 1 : end] = ["", f'??? tip "Show hint {number}"', *body]
    return "\n".join(lines)


def with_course_map(text: str) -> str:
    """The home page with the course map (``coursemap``) and the lab map (the registry's table: what
    each lab builds, where it runs) under its heading on study order (or before its first section),
    and a link to the whole course on one page. Both are drawn from the labs' declarations at every
    build, so README.md holds neither and adding a lab never edits it."""
    from labkit.docs.coursemap import course_map

    block = ["", '<div class="course-map-frame course-map-frame--wide" data-search-exclude>',
             course_map(lambda lab: f"{lab.folder}/index.html"), "</div>",
             '<div class="course-map-frame course-map-frame--narrow" data-search-exclude>',
             course_map(lambda lab: f"{lab.folder}/index.html", narrow=True), "</div>", "",
             f"The whole course on one page, to read straight through or to print: [{PRINT_TITLE}]({book.PRINT_PAGE}).",
             "", registry.render_lab_map(), ""]
    lines = text.split("\n")
    sections = [number for number, visible in outside_code(text) if visible.startswith("## ")]
    chosen = next((n for n in sections if "study order" in lines[n].lower()), sections[0] if sections else None)
    if chosen is None:
        return text + "\n" + "\n".join(block)
    at = chosen + 1 if "study order" in lines[chosen].lower() else chosen
    return "\n".join(lines[:at] + block + lines[at:])


def with_lab_header(text: str, lab: Lab) -> str:
    """A lab README with its header placed right after the title (the first ``# `` line)."""
    lines = text.split("\n")
    for number, visible in outside_code(text):
        if visible.startswith("# "):
            return "\n".join(lines[: number + 1] + ["", lab_header(lab)] + lines[number + 1 :])
    return lab_header(lab) + "\n" + text


# --------------------------------------------------------------------------- the build


def assemble(src: Path, repo: str | None = None) -> None:
    """Copy every page (the nav's, and every Markdown file they link to) into ``src``; with the
    repository's address, ``repo``, the home page's ``git clone`` line names it."""
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    site = Site(src)
    for rel in book.pages():
        if not (ROOT / rel).is_file():
            raise BuildError(f"the navigation lists {rel}, which does not exist")
        site.add_page(rel)
    readmes = book.lab_readmes()
    for lab in registry.LABS:  # the header links to these: make them pages even if the README does not
        for name in (*book.LAB_SOURCES, *book.given_modules(lab)):
            if (lab.path / name).is_file():
                site.target(f"{lab.folder}/README.md", name)
    while site.queue:
        rel = site.queue.pop(0)
        text = (ROOT / rel).read_text(encoding="utf-8")
        if rel == "README.md":
            text = with_course_map(text.replace(CLONE_PLACEHOLDER, repo) if repo else text)
        if rel.endswith("/hints.md") and registry.lab_for_path(ROOT / rel):
            text = folded_hints(text)
        if rel in readmes:
            terms = book.SEARCH_TERMS.get(readmes[rel].id, ())
            text = (front_matter(SEARCH_BOOST["lab"], terms) + with_lab_header(text, readmes[rel]).rstrip("\n") + "\n"
                    + lab_footer(readmes[rel]))
        text = lists_interrupt_paragraphs(figure_markup(text, rel))
        site.write(rel, rewrite_links(text, lambda target, rel=rel: site.target(rel, target)))
    site.write(book.PRINT_PAGE, PRINT_SOURCE)
    shutil.copytree(ASSETS, src / "assets")
    copy_math_font(src / "assets" / "fonts")


def copy_math_font(dest: Path) -> None:
    """STIX Two Math (SIL Open Font License), as the ziamath package ships it, for the MathML.

    Browsers draw MathML with an OpenType math font when the system has one; many Linux systems do
    not, and the fallback is cramped. Serving the font with the site makes every reader's
    formulas look alike, and keeps them offline.
    """
    from importlib.resources import files

    font = files("ziamath") / "fonts" / MATH_FONT
    if not font.is_file():
        raise BuildError(f"the ziamath package has no fonts/{MATH_FONT} to serve the formulas with")
    dest.mkdir(parents=True, exist_ok=True)
    (dest / MATH_FONT).write_bytes(font.read_bytes())


def nav_yaml(entries: tuple[book.Entry, ...]) -> list:
    """The navigation in mkdocs.yml's form: ``[{title: path}, path, {title: [...]}]``."""
    out = []
    for entry in entries:
        value = entry.path if entry.path else nav_yaml(entry.children)
        out.append({entry.title: value} if entry.title else value)
    return out


def repo_url(given: str | None = None) -> str | None:
    """The repository's address: ``given`` (``--repo-url``), else docs/mkdocs.yml's ``repo_url``."""
    found = _REPO_URL.search(SETTINGS.read_text(encoding="utf-8"))
    return given or (found.group(1) if found else None)


def write_config(out: Path, repo: str | None = None) -> Path:
    """docs/mkdocs.yml, plus the folders and the navigation generated from the registry, the
    repository's address when ``repo`` is given, and the reading order that ``hooks.py`` gives the
    footer's Previous and Next."""
    import yaml  # the docs extra, like latex2mathml and ziamath below: imported where it is used
    generated = {"docs_dir": "src", "site_dir": "site", "nav": nav_yaml(book.nav()),
                 "hooks": [str(Path(hooks.__file__).resolve())]}
    settings = SETTINGS.read_text(encoding="utf-8")
    if repo:
        settings = _REPO_URL.sub("", settings)
        generated |= {"repo_url": repo, "repo_name": repo.rstrip("/").removesuffix(".git").split("/")[-1]}
    if OVERRIDES.is_dir():
        shutil.copytree(OVERRIDES, out / "overrides", dirs_exist_ok=True)
    (out / hooks.READING_ORDER).write_text(json.dumps(book.reading_links(), indent=1), encoding="utf-8")
    config = out / "mkdocs.yml"
    config.write_text(
        settings
        + "\n# ---- generated by labkit.docs.build from labkit/course/registry.py\n"
        + yaml.safe_dump(generated, sort_keys=False, allow_unicode=True),
        encoding="utf-8",
    )
    return config


def run_mkdocs(config: Path) -> None:
    """``mkdocs build --strict``: any warning (a dead link, a missing page) fails the build."""
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--clean", "-f", str(config)],
        capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    if run.returncode != 0:
        raise BuildError("mkdocs build --strict failed:\n" + (run.stdout + run.stderr).strip())


# --------------------------------------------------------------------------- math

_INLINE_MATH = re.compile(r'<span class="arithmatex">\\\((.*?)\\\)</span>', re.S)
_BLOCK_MATH = re.compile(r'<div class="arithmatex">\\\[(.*?)\\\]</div>', re.S)
_RAW_AMPERSAND = re.compile(r"&(?!#x?[0-9a-fA-F]+;|[a-zA-Z]+;)")


def typeset_math(site: Path) -> int:
    """Replace the TeX that ``pymdownx.arithmatex`` left in the pages by MathML; return the count.

    MathML is rendered by the browser itself (Chromium, Firefox, Safari): no script, no font
    download, nothing fetched when a page opens. A formula latex2mathml cannot read fails the build.
    """
    from latex2mathml.converter import convert

    count = 0

    def mathml(match: re.Match, display: str, page: Path) -> str:
        nonlocal count
        tex = html.unescape(match.group(1)).strip()
        try:
            converted = convert(tex, display=display)
        except Exception as err:  # latex2mathml raises several exception types
            raise BuildError(f"{page.relative_to(site)}: cannot typeset ${tex}$: {err}") from err
        # latex2mathml makes infinity an operator, which browsers space like one: "( − ∞ ,".
        converted = converted.replace("<mo>&#x0221E;</mo>", "<mi>&#x0221E;</mi>")
        # and makes max and min operators, spaced like a sum's sign before their parenthesis:
        # "max (m_a, m_b)"; as functions (like exp and ln) they sit against it.
        converted = re.sub(r"<mo>(max|min)</mo>(?=<mo stretchy=\"false\">&#x00028;)", r"<mi>\1</mi>", converted)
        # latex2mathml passes what it does not know through as text (`\foo`, a bare `&`): refuse it.
        if "\\" in converted or _RAW_AMPERSAND.search(converted):
            raise BuildError(f"{page.relative_to(site)}: ${tex}$ uses TeX that latex2mathml does not know")
        count += 1
        tag = "div" if display == "block" else "span"
        return f'<{tag} class="arithmatex">{converted}</{tag}>'

    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        if "arithmatex" not in text:
            continue
        text = _BLOCK_MATH.sub(lambda m, page=page: mathml(m, "block", page), text)
        text = _INLINE_MATH.sub(lambda m, page=page: mathml(m, "inline", page), text)
        page.write_text(text, encoding="utf-8")
    return count


# --------------------------------------------------------------------------- the course on one page

PRINT_SOURCE = """---
search:
  exclude: true
hide:
  - navigation
  - toc
---

# The course as one page

Every page of the course in reading order, each lab followed by its results, and the labs' hints
gathered at the end, out of sight until you look for them: to read straight through, or to print
(your browser's Print command; each page starts on a new sheet).

<div id="whole-course"></div>
"""
_ARTICLE = re.compile(r'<article class="md-content__inner md-typeset">(.*?)</article>', re.S)
_URL_ATTR = re.compile(r'\b(href|src)="([^"]*)"')
_H1 = re.compile(r"<h1[^>]*>(.*?)</h1>", re.S)


def _slug(url: str) -> str:
    return "page-" + re.sub(r"[^a-zA-Z0-9]+", "-", url.removesuffix(".html")).strip("-").lower()


def _title_text(body: str) -> str:
    """A page's first heading as plain text (its permalink sign left out)."""
    found = _H1.search(body)
    heading = re.sub(r'<a class="headerlink".*?</a>', "", found.group(1), flags=re.S) if found else ""
    return html.unescape(re.sub(r"<[^>]+>", "", heading)).strip()


def _print_contents(parts: list[tuple[str, str, list[tuple[str, str, int]]]]) -> str:
    """The table of contents of the course on one page: ``parts`` are (title, id, [(page title, id,
    depth)]), depth 1 for a lab's results or going-further page, listed under its lab."""
    lines = ['<nav class="print-contents" aria-labelledby="contents">', '<h2 id="contents">Contents</h2>']
    for title, anchor, pages in parts:
        lines += [f'<p class="print-contents__part"><a href="#{anchor}">{html.escape(title)}</a></p>', "<ol>"]
        nested = False
        for page_title, page_anchor, depth in pages:
            item = f'<a href="#{page_anchor}">{html.escape(page_title)}</a>'
            if depth and not nested:
                lines[-1] = lines[-1].removesuffix("</li>") + "<ol>"
                nested = True
            elif not depth and nested:
                lines.append("</ol></li>")
                nested = False
            lines.append(f"<li>{item}</li>")
        lines += ["</ol></li>"] if nested else []
        lines.append("</ol>")
    lines.append("</nav>")
    return "\n".join(lines)


def print_page(site: Path) -> int:
    """Fill the page ``book.PRINT_PAGE`` with a table of contents, the articles of
    ``book.print_pages()`` in order, and an appendix of ``book.hint_pages()`` (each hint shown: a
    printed hint cannot be unfolded); return how many pages. Each page's ids get the page's own
    prefix (two pages both have a "#steps"), and a link to a page of the book becomes a link to its
    place on this page; any other link is made relative to this page, which sits at the site's root.
    The home page comes without its course map (the contents list the same labs)."""
    import posixpath

    course = [book.site_url(path) for path in book.print_pages()]
    hints = [book.site_url(path) for path in book.hint_pages()]
    urls = course + hints
    target = site / book.site_url(book.PRINT_PAGE)
    chunks, contents = [], [("The course", "part-course", []), ("Appendix: the hints, lab by lab", "part-hints", [])]
    for url in urls:
        found = _ARTICLE.search((site / url).read_text(encoding="utf-8"))
        if not found:
            raise BuildError(f"{url} has no article to put on the page of the whole course")
        slug, folder = _slug(url), posixpath.dirname(url)

        def relink(match: re.Match, slug=slug, folder=folder) -> str:
            attr, value = match.group(1), html.unescape(match.group(2))
            if value.startswith("#"):
                value = f"#{slug}--{value[1:]}" if len(value) > 1 else f"#{slug}"
            elif not re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:|/", value):
                path, _, fragment = value.partition("#")
                resolved = posixpath.normpath(posixpath.join(folder, path)) if path else folder
                if attr == "href" and resolved in urls:
                    value = f"#{_slug(resolved)}--{fragment}" if fragment else f"#{_slug(resolved)}"
                else:
                    value = resolved + (f"#{fragment}" if fragment else "")
            return f'{attr}="{html.escape(value, quote=True)}"'

        body = found.group(1)
        if url == "index.html":
            body = re.sub(r'<div class="course-map-frame.*?</svg>\s*</div>', "", body, flags=re.S)
            body = re.sub(r"<p>The whole course on one page[^\n]*?</p>", "", body, count=1)
        if url in hints:
            body = body.replace("<details", "<details open")
        body = re.sub(r'\bid="([^"]+)"', lambda m, slug=slug: f'id="{slug}--{m.group(1)}"', body)
        body = re.sub(r'\b(aria-labelledby|for)="([^"]+)"', lambda m, slug=slug: f'{m.group(1)}="{slug}--{m.group(2)}"',
                      body)
        body = re.sub(r"url\(#([^)]+)\)", lambda m, slug=slug: f"url(#{slug}--{m.group(1)})", body)
        body = _URL_ATTR.sub(relink, body)
        lab = registry.lab_for_path(ROOT / posixpath.dirname(url)) if "/labs/" in url else None
        depth = 1 if lab and not url.endswith(f"{lab.folder}/index.html") and url not in hints else 0
        contents[url in hints][2].append((_title_text(body) or url, slug, depth))
        part = "" if url != (hints[0] if hints else None) else (
            '<h1 class="print-part" id="part-hints">Appendix: the hints, lab by lab</h1>\n'
            "<p>Each lab's hints, in the order <code>labs hint</code> gives them: read one, then go back to"
            " the lab.</p>\n")
        chunks.append(f'{part}<section class="print-page" id="{slug}">\n{body}\n</section>')
    page = target.read_text(encoding="utf-8")
    marker = '<div id="whole-course"></div>'
    if marker not in page:
        raise BuildError(f"{target.name} lost its placeholder {marker}")
    contents[0] = (contents[0][0], _slug(course[0]), contents[0][2])
    filled = (_print_contents([part for part in contents if part[2]]) + '\n<div id="whole-course">\n'
              + "\n".join(chunks) + "\n</div>")
    target.write_text(page.replace(marker, filled), encoding="utf-8")
    return len(chunks)


def relative_404(site: Path) -> None:
    """MkDocs writes 404.html's links from the site's root ("/index.html"), which breaks on a site
    served under a path and opened from a folder: the page sits at the root, so links relative to
    it go to the same places."""
    page = site / "404.html"
    if page.is_file():
        text = page.read_text(encoding="utf-8")
        page.write_text(re.sub(r'\b(href|src)="/(?!/)', r'\1="', text), encoding="utf-8")


def build(out: Path = DEFAULT_OUT, repo: str | None = None) -> Path:
    """Build the site into ``out/site`` and return that folder. ``repo``: the repository's address
    (default: docs/mkdocs.yml's ``repo_url``, if set), shown in the header and the Quickstart."""
    out = Path(out).resolve()
    repo = repo_url(repo)
    assemble(out / "src", repo)
    run_mkdocs(write_config(out, repo))
    relative_404(out / "site")
    typeset_math(out / "site")
    print_page(out / "site")
    return out / "site"
