"""The course's site (``python -m labkit.docs build``), built strictly and read in a real browser.

Maintainer checks (``pytest -m maintainer``; .ci/run runs them). The build needs the ``docs``
extra; the browser checks drive the system's Chromium (Debian: ``apt-get install -y chromium``)
with Playwright from PyPI (the ``dev`` extra), never a browser Playwright downloads. Each part
skips, saying what to install, when its tools are missing.

The browser loads the site from a local HTTP server and fails on any request that leaves it; it
checks that the home page and every lab page render, that formulas are typeset, that figures load,
that search finds each lab by a word of its README, and that the navigation is the registry's
study order. Screenshots (the home page, a lab page, a figure) are left in ``.ci/artifacts/`` (or ``$DOCS_ARTIFACTS``).
"""

from __future__ import annotations

import functools
import html.parser
import http.server
import os
import posixpath
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from labkit.course import registry

pytestmark = pytest.mark.maintainer

ROOT = registry.ROOT
ARTIFACTS = Path(os.environ.get("DOCS_ARTIFACTS", ROOT / ".ci" / "artifacts"))
CHROMIUM_FLAGS = [  # a closed network: nothing that phones home, no QUIC, no sync, no component updates
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def _require_docs_tools():
    for module in ("mkdocs", "material", "pymdownx", "latex2mathml", "ziamath"):
        pytest.importorskip(module, reason=f'the site needs {module}: pip install -e ".[docs]"')


def _page(lab: registry.Lab) -> str:
    """A lab's page in the built site (MkDocs makes README.md its folder's index.html)."""
    return f"{lab.folder}/index.html"


# The site is built with a repository address (docs/mkdocs.yml's `repo_url`, or `--repo-url`), as a
# published one is: its header shows the repository, and the Quickstart clones it.
REPO_URL = "https://github.com/example-org/paged-attention-labs"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    _require_docs_tools()
    from labkit.docs import build

    return build.build(tmp_path_factory.mktemp("docs"), repo=REPO_URL)


# --------------------------------------------------------------------------- the pieces


def test_navigation_is_the_registry_in_study_order():
    """The nav is generated: the course's lab sections are the registry's labs, in order, README first."""
    from labkit.docs import book

    course = next(entry for entry in book.nav() if entry.title == "Course").children
    labs = [entry for section in course for entry in section.children if entry.children]
    assert [section.title for section in labs] == [book.lab_title(lab) for lab in registry.LABS]
    assert [section.children[0].path for section in labs] == [f"{lab.folder}/README.md" for lab in registry.LABS]
    assert all(page.sub for section in labs for page in section.children[1:]), "a lab's hints or results not a sub-page"


def test_reading_order_is_the_study_order():
    """Next walks the course as it is meant to be read: each phase's overview before its first lab,
    a chapter before the first lab that links to it, the labs in study order, no hints or results."""
    from labkit.docs import book

    order = book.reading_order()
    readmes = [f"{lab.folder}/README.md" for lab in registry.LABS]
    assert [p for p in order if p in readmes] == readmes, "the labs are not in study order"
    for phase in registry.PHASES:
        first = next((lab for lab in registry.LABS if lab.phase == phase), None)
        if first:
            assert order.index(f"{phase}/README.md") < order.index(f"{first.folder}/README.md"), (
                f"{phase}'s overview comes after its first lab, {first.id}")
        for chapter in book.chapters(phase):
            user = book.first_user(chapter)
            if user:
                assert order.index(chapter) < order.index(f"{user.folder}/README.md"), (
                    f"{chapter} comes after lab {user.id}, which uses it")
    assert not [p for p in order if p.endswith(("/hints.md", "/results.md"))], "Next would open hints or results"
    links = book.reading_links()
    for lab in registry.LABS:
        for name in ("hints.md", "results.md"):
            if (lab.path / name).is_file():
                assert links[f"{lab.folder}/{name}"][0] == f"{lab.folder}/README.md", f"{lab.id}'s {name}"
    assert any(book.first_user(c) for phase in registry.PHASES for c in book.chapters(phase)), (
        "no chapter is linked from a lab: the check above checked nothing")


def test_every_lab_page_ends_with_the_next_lab():
    from labkit.docs.build import lab_footer

    for lab, following in zip(registry.LABS, registry.LABS[1:], strict=False):
        footer = lab_footer(lab)
        assert f"**Next lab:** [{following.id} " in footer, f"{lab.id} does not end with {following.id}: {footer}"
    assert "last lab" in lab_footer(registry.LABS[-1])


def test_what_each_lab_builds_on_is_an_earlier_lab():
    """registry.NEEDS, which the course map draws: every lab it names is registered and comes earlier
    in study order, and every lab whose reference solution a lab's files load is among its needs."""
    order = [lab.id for lab in registry.LABS]
    problems = [f"NEEDS names {lab_id}, which is not a registered lab" for lab_id in registry.NEEDS
                if lab_id not in order]
    for lab in registry.LABS:
        for need in lab.needs:
            if need not in order or order.index(need) >= order.index(lab.id):
                problems.append(f"{lab.id} builds on {need}, which does not come before it in study order")
        files = [p for p in lab.path.rglob("*.py") if "bugs" not in p.relative_to(lab.path).parts]
        loaded = {m for p in files for m in re.findall(r"load_reference\(\s*[\"'](\d\d-\d\d)[\"']", p.read_text())}
        problems += [f"{lab.id} loads lab {m}'s reference solution; registry.NEEDS does not say it builds on it"
                     for m in sorted(loaded - set(lab.needs) - {lab.id})]
    assert not problems, "\n".join(problems)


def test_course_map_draws_the_registry():
    from labkit.docs.coursemap import course_map, direct_needs

    svg = course_map(lambda lab: f"{lab.folder}/index.html")
    assert re.findall(r'<a href="([^"]+)"', svg) == [f"{lab.folder}/index.html" for lab in registry.LABS]
    arcs = svg.count('class="course-map__arc"')
    assert arcs == sum(len(parents) for parents in direct_needs().values()) > 0
    assert "\n\n" not in svg, "a blank line would end Markdown's raw HTML block"


def test_links_are_rewritten_outside_code_only():
    from labkit.docs.build import rewrite_links

    text = "\n".join([
        "See [the lab](lab/) and ![a plot](results.png), `[not](a-link)`.",
        "```python",
        "x = d[\"key\"](arg)  # [looks](like-a-link)",
        "```",
        "[ref]: starter.py",
    ])
    out = rewrite_links(text, lambda target: f"<{target}>")
    assert out.splitlines()[0] == "See [the lab](<lab/>) and ![a plot](<results.png>), `[not](a-link)`."
    assert out.splitlines()[1:4] == text.splitlines()[1:4], "a link inside fenced code was rewritten"
    assert out.splitlines()[4] == "[ref]: <starter.py>"
    unpublished = rewrite_links("See [`tests/x`](tests/x), [![a plot](p.svg)](tests/y) and [a](b.md).",
                                lambda target: None if target.startswith("tests/") else target)
    assert unpublished == "See `tests/x`, ![a plot](p.svg) and [a](b.md).", "a link to an unpublished file stays a link"


def test_a_list_right_under_a_paragraph_is_a_list():
    """GitHub lets a list interrupt a paragraph; the copy gives Python-Markdown the blank line it needs."""
    from labkit.docs.build import lists_interrupt_paragraphs

    text = "Counts:\n- passed\n- skipped\n\n```\nx:\n- not a list\n```\n| a |\n- b\n  text\n  - nested\n"
    assert lists_interrupt_paragraphs(text) == text.replace("Counts:\n- passed", "Counts:\n\n- passed")


def test_link_targets_in_the_site(tmp_path):
    """A folder goes to its README, a source file to its code page, an image is copied, and a dead
    link is left dead for the strict build to name."""
    from labkit.docs.build import Site

    lab = registry.LABS[0]
    page = f"{lab.folder}/README.md"
    site = Site(tmp_path)
    assert site.target(page, "starter.py#L3") == "starter.py.md#L3"
    assert f"\n# Lab {lab.id}: starter.py\n" in (tmp_path / lab.folder / "starter.py.md").read_text(), (
        "a code page is titled with its lab, or search lists a dozen bare starter.py")
    assert site.target(page, "../../README.md") == "../../README.md"
    assert site.target(page, "../..") == "../../README.md"
    assert site.target(page, "no-such-file.md") == "no-such-file.md"
    assert site.target(page, "https://example.org/x.py") == "https://example.org/x.py"
    assert site.target(page, "#steps") == "#steps"
    assert site.target(page, "../../../tests/test_repo.py") is None, "the maintainers' tests are not published"
    assert site.target(page, "../../../tests") is None
    phase_readme = (ROOT / lab.phase / "README.md").relative_to(ROOT).as_posix()
    assert phase_readme in site.seen


def test_lab_header_says_where_the_lab_runs_and_how():
    from labkit.docs.build import with_lab_header

    lab = registry.LABS[-1]
    text = with_lab_header("# Title\n\nBody.\n", lab)
    title, blank, header = text.splitlines()[:3]
    assert (title, blank) == ("# Title", "")
    assert f"Lab {lab.id}" in header and f"runs on: {lab.runs_on}" in header
    assert f"{len(registry.LABS)} of {len(registry.LABS)} in study order" in header
    assert f"after [{registry.LABS[-2].id} " in text and "before [" not in text
    assert "[`starter.py`](starter.py)" in text and "[`test_lab.py`](test_lab.py)" in text
    assert f"labs check {lab.id} --impl starter" in text


ONE_HEADER = re.compile(r"\*\*(Runs on|Study order|Before this lab|After it|Next):?\*\*:?", re.I)


def test_lab_readmes_leave_where_and_when_to_the_header():
    """A lab page says once where the lab runs and where it stands in study order: in the header the
    build generates from the registry. A README that says it too says it twice on its page."""
    twice = [f"{lab.id}: {match.group(0)}" for lab in registry.LABS
             for match in ONE_HEADER.finditer((lab.path / "README.md").read_text())]
    assert not twice, f"the header already says these: {twice}"


@pytest.mark.parametrize("lab", [lab for lab in registry.LABS if (lab.path / "bench.py").is_file()],
                         ids=lambda lab: lab.id)
def test_lab_header_runs_scripts_as_the_readme_does(lab):
    """The header's lab.py/bench.py commands are the README's own (a bench that needs `--out` gets it):
    a header that invented them would print a usage error, or drift from the README."""
    from labkit.docs.build import lab_header

    readme = (lab.path / "README.md").read_text()
    commands = re.findall(r"`(python \S+/(?:lab|bench)\.py[^`]*)`", lab_header(lab))
    assert any(command.split()[1].endswith("bench.py") for command in commands), commands
    for command in commands:
        assert command in " ".join(readme.replace("\\\n", " ").split()), f"{lab.id}: {command!r} is not in its README"


# The longest code line a page may show: at 1280 px the column holds about 93 characters of code.
CODE_WIDTH = 90


def _code_lines(text: str):
    """(line number, line) of every line inside a fenced code block."""
    fence = None
    for number, line in enumerate(text.splitlines(), start=1):
        opened = re.match(r"\s*(`{3,}|~{3,})", line)
        if opened and (fence is None or opened.group(1)[0] == fence[0]):
            fence = None if fence else opened.group(1)
        elif fence:
            yield number, line


def test_code_fits_the_column():
    """The code blocks of the home page, SETUP and every lab's README keep their lines within about 88
    characters, comments on lines of their own: nothing a reader copies is cut off at the right or
    hidden under the copy button (the browser check below measures the same at 1280 px)."""
    pages = [ROOT / "README.md", ROOT / "SETUP.md", *(lab.path / "README.md" for lab in registry.LABS)]
    wide = [f"{page.relative_to(ROOT)}:{number}: {len(line)} characters: {line.strip()[:60]}..."
            for page in pages for number, line in _code_lines(page.read_text(encoding="utf-8"))
            if len(line) > CODE_WIDTH]
    assert not wide, f"code lines over {CODE_WIDTH} characters (wrap them; comments above):\n" + "\n".join(wide)


def test_steps_come_first_on_a_lab_page():
    """A lab's README opens (after its title, the header and a few lines on what it is) with its
    "## Steps": what to do comes before the background and the reference material."""
    late = []
    for lab in registry.LABS:
        text = (lab.path / "README.md").read_text(encoding="utf-8")
        fenced = {number for number, _ in _code_lines(text)}
        heads = [line for number, line in enumerate(text.splitlines(), start=1)
                 if line.startswith("## ") and number not in fenced]
        if not heads or heads[0] != "## Steps":
            late.append(f"{lab.id}: its first section is {heads[0] if heads else None!r}")
    assert not late, "\n".join(late)


def test_a_phase_s_pages_sit_in_its_own_section():
    """The sidebar's section of a phase holds its overview, chapters, cheatsheet and exercises, wherever
    study order reads them (Phase 2's cheatsheet after lab 02-04, which sits in Phase 4's section);
    a lab's going-further pages are sub-pages of the lab, like its hints."""
    from labkit.docs import book

    course = next(entry for entry in book.nav() if entry.title == "Course").children
    problems = []
    for section in course:
        for path in (entry.path for entry in book.entries(section.children)):
            phase = path.split("/")[0]
            if "/labs/" not in path and registry.PHASES.get(phase) != section.title:
                problems.append(f"{path} sits in the section {section.title!r}")
    assert not problems, "\n".join(problems)
    for lab in registry.LABS:
        further = book.further_pages(lab)
        entry = next(e for s in course for e in s.children if e.title == book.lab_title(lab))
        assert [e.path for e in entry.children if e.path in further] == further, f"{lab.id}: {further}"
        assert all(e.sub for e in entry.children if e.path in further)
        assert set(further) <= set(book.print_pages()), f"{lab.id}'s going-further pages are not in the book"
    assert any(book.further_pages(lab) for lab in registry.LABS), "no lab has a going-further page: nothing checked"


def test_next_ends_with_the_course():
    """Next stops at the course's last page: the maintainers' pages are not on the reader's way."""
    from labkit.docs import book

    order = book.reading_order()
    assert order[-1].split("/")[0] in registry.PHASES, f"Next ends on {order[-1]}"
    maintainers = [entry.path for entry in book.contributing()]
    assert not set(maintainers) & set(order), "Next leads into the maintainers' pages"
    links = book.reading_links()
    assert links[order[-1]][1] is None


def test_hints_fold_one_by_one():
    """A hints page folds each hint under its heading, as `labs hint` gives them one at a time."""
    from labkit.docs.build import folded_hints

    text = ("# Lab 02-06 hints\n\n## Hint 1\n\nUse `np.arange`.\n\n```python\nx = 1\n```\n\n"
            "## Hint 2: the tail\n\nMask.\n")
    assert folded_hints(text) == (
        "# Lab 02-06 hints\n\n## Hint 1\n\n??? tip \"Show hint 1\"\n\n    Use `np.arange`.\n\n    ```python\n"
        "    x = 1\n    ```\n\n## Hint 2: the tail\n\n??? tip \"Show hint 2\"\n\n    Mask.\n")


def test_hints_and_results_pages_have_one_title_pattern():
    """Every lab's hints page is titled "Lab NN-NN hints", every results page "Lab NN-NN results"."""
    wrong = []
    for lab in registry.LABS:
        for name, kind in (("hints.md", "hints"), ("results.md", "results")):
            if (lab.path / name).is_file():
                title = _first_heading(lab.path / name)
                if title != f"Lab {lab.id} {kind}":
                    wrong.append(f"{lab.id} {name}: {title!r}")
    assert not wrong, "\n".join(wrong)


def test_given_modules_have_code_pages(site):
    """Each lab's given modules (its `_*.py`) are on the site as code pages, as its starter and tests
    are, and the header links those a learner calls."""
    from labkit.docs import book
    from labkit.docs.build import lab_header

    missing = [f"{lab.folder}/{name}" for lab in registry.LABS for name in book.given_modules(lab)
               if not (site / lab.folder / f"{name}.html").is_file()]
    assert not missing, f"given modules without a page: {missing}"
    for lab in registry.LABS:
        for name in book.called_modules(lab):
            assert f"[`{name}`]({name})" in lab_header(lab), f"{lab.id}'s header does not link {name}"
    assert book.called_modules(registry.get("99-02")), "99-02 has given modules to call: nothing checked"


def test_404_links_work_from_any_folder(site):
    """404.html links relative to itself (it sits at the site's root), never from "/": the site works
    under a path of a server and opened from a folder."""
    text = (site / "404.html").read_text(encoding="utf-8")
    rooted = re.findall(r'\b(?:href|src)="(/[^/"][^"]*)"', text)
    assert not rooted, f"404.html links from the server's root: {rooted[:5]}"


def test_the_repository_address_is_a_setting(tmp_path):
    """Unset, nothing names a repository; set (docs/mkdocs.yml's repo_url or --repo-url), the header
    shows it (through a partial that does not ask GitHub's API for stars) and the Quickstart clones it."""
    _require_docs_tools()
    from labkit.docs import build

    assert build.repo_url(None) is None, "docs/mkdocs.yml sets a repo_url: the checks below assume it does not"
    assert "repo_url" not in build.write_config(tmp_path).read_text().split("# ---- generated")[1]
    config = build.write_config(tmp_path, REPO_URL).read_text()
    assert f"repo_url: {REPO_URL}" in config
    partial = (tmp_path / "overrides" / "partials" / "source.html").read_text()
    assert "data-md-component" not in partial.split("#}")[-1], "Material's script would fetch the repository's facts"
    assert build.CLONE_PLACEHOLDER in (ROOT / "README.md").read_text(), "the Quickstart's clone line has no placeholder"


# --------------------------------------------------------------------------- the build


def test_strict_build_fails_on_a_dead_link_and_a_missing_page(tmp_path):
    """The build's own settings turn a link to a page that does not exist, a link to a heading
    that does not exist, and a navigation entry whose file is gone into a failed build."""
    _require_docs_tools()
    from labkit.docs import build

    build.assemble(tmp_path / "src")
    home = tmp_path / "src" / "README.md"
    home.write_text(home.read_text() + "\n[gone](no-such-page.md) [nowhere](CONTRIBUTING.md#no-such-heading)\n")
    (tmp_path / "src" / "SETUP.md").unlink()
    with pytest.raises(build.BuildError) as failed:
        build.run_mkdocs(build.write_config(tmp_path))
    log = str(failed.value)
    for culprit in ("no-such-page.md", "no-such-heading", "SETUP.md"):
        assert culprit in log, f"the failed build does not name {culprit}:\n{log[-2000:]}"


class _Assets(html.parser.HTMLParser):
    """Every URL a page makes the browser load by itself: scripts, stylesheets, icons, images."""

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("script", "img", "iframe", "source", "audio", "video") and attrs.get("src"):
            self.urls.append(attrs["src"])
        if tag == "link" and attrs.get("href"):
            self.urls.append(attrs["href"])


def test_no_page_loads_anything_from_the_network(site):
    """No <script src>, <link href>, <img src>... and no CSS url() points off the site: the site
    works with no network (a CDN script for the math, a web font, would not)."""
    external = []
    for page in site.rglob("*.html"):
        parser = _Assets()
        parser.feed(page.read_text(encoding="utf-8"))
        external += [f"{page.relative_to(site)}: {url}" for url in parser.urls if re.match(r"(https?:)?//", url)]
    for sheet in site.rglob("*.css"):
        for url in re.findall(r"url\(\s*['\"]?((?:https?:)?//[^'\")]+)", sheet.read_text(encoding="utf-8")):
            external.append(f"{sheet.relative_to(site)}: {url}")
    assert not external, "assets loaded from the network:\n" + "\n".join(external[:20])


def test_every_figure_is_on_the_site(site):
    """Each image a phase keeps (a lab's results.svg, the figures/*.svg of a figures.py) is shown
    by some page of the site: an image that no page links to never reaches a reader."""
    from labkit.docs.build import IMAGES

    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "phase-*"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    images = [path for path in listed if Path(path).suffix.lower() in IMAGES]
    assert images, "no image in any phase folder"
    missing = [path for path in images if not (site / path).is_file()]
    assert not missing, f"images no page links to: {missing}"


# What a reader of the course has not got: the maintainers' issue tracker, their tools and their
# copies of other repositories, files outside the repository. A page says what a claim is and how
# the reader can check it (a link at vLLM's release tag, a command of this repository).
WORKSHOP_TALK = {
    "an issue number": re.compile(r"\bissues?\s+#?\d+|(?<![\w&])#\d{1,4}\b(?![\w-])", re.I),
    "stored copies of a repository": re.compile(r"\bstored\s+cop(y|ies)\b", re.I),
    "a path outside the repository": re.compile(r"\.\./shared\b|(?<![\w.])/work/|\bshared/tools\b"),
    "a maintainer's tool": re.compile(
        r"\bseed_overlap\b|\bsource-book-map\b|\bissues\s+(show|note|resolved|blocked)\b|\bthe course's tools\b"
        r"|\b(search|fetch|find_string|read_file) tool\b", re.I),
}


def _published_and_lab_files(site_src: Path) -> dict[str, str]:
    """Every page of the site as the build wrote it, and every text file of every phase folder."""
    files = {f"site: {p.relative_to(site_src)}": p.read_text(encoding="utf-8") for p in site_src.rglob("*.md")}
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "phase-*"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for rel in listed:
        try:
            files[rel] = (ROOT / rel).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue  # a figure, or a file deleted in the work tree
    return files


def test_no_workshop_talk_on_pages_or_in_labs(tmp_path):
    """No published page and no lab file speaks of issue numbers, stored copies of repositories,
    paths outside the repository or tools a reader does not have."""
    from labkit.docs import build

    build.assemble(tmp_path / "src")
    found = []
    for name, text in _published_and_lab_files(tmp_path / "src").items():
        for number, line in enumerate(text.splitlines(), start=1):
            for what, pattern in WORKSHOP_TALK.items():
                match = pattern.search(line)
                if match:
                    found.append(f"{name}:{number}: {what} ({match.group(0)!r}): {line.strip()[:100]}")
    assert not found, "say what the claim is and how a reader checks it:\n" + "\n".join(found)


def test_the_maintainers_tests_are_not_published(site):
    """tests/ (the grader's hostile class, the example class, the checks) has no page on the site."""
    from labkit.docs import book

    published = [p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()]
    leaked = [p for p in published if p.split("/")[0] in book.UNPUBLISHED]
    assert not leaked, f"published from an unpublished folder: {leaked[:10]}"


def test_every_figure_is_an_svg_a_reader_can_read():
    """Every picture a phase keeps is an SVG that labkit.figures.save wrote: no wider than the site's
    column, no text under its minimum size, and a dark twin that is the same picture recoloured."""
    from labkit import figures

    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "phase-*"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    from labkit.docs.build import IMAGES

    images = [ROOT / p for p in listed if Path(p).suffix.lower() in IMAGES and (ROOT / p).is_file()]
    assert images, "no figure in any phase folder"
    problems = [f"{p.relative_to(ROOT)}: not an SVG (draw it with labkit.figures.save)" for p in images
                if p.suffix != ".svg"]
    for light in (p for p in images if p.suffix == ".svg" and not p.name.endswith(".dark.svg")):
        text = light.read_text(encoding="utf-8")
        problems += [f"{light.relative_to(ROOT)}: {problem}" for problem in figures.check_svg(text)]
        twin = figures.dark_path(light)
        if not twin.is_file():
            problems.append(f"{light.relative_to(ROOT)}: no dark twin {twin.name} (rerun its script)")
        elif twin.read_text(encoding="utf-8") != figures.dark_svg(text):
            problems.append(f"{twin.relative_to(ROOT)}: not the light figure recoloured (rerun its script)")
    assert not problems, "\n".join(problems)


def test_every_phase_has_a_cheatsheet_and_exercises():
    """Each phase of the registry has its one-page summary and its graded questions."""
    missing = [f"{phase}/{name}" for phase in registry.PHASES for name in ("CHEATSHEET.md", "EXERCISES.md")
               if not (ROOT / phase / name).is_file()]
    assert not missing, f"missing (docs/README.md, 'Adding to the site'): {missing}"


class _VisibleText(html.parser.HTMLParser):
    """The text of a page's article, outside code, MathML, scripts and styles."""

    SKIP = {"code", "pre", "math", "script", "style"}

    def __init__(self):
        super().__init__()
        self.depth = 0  # inside how many skipped elements
        self.inside_article = False
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "article":
            self.inside_article = True
        if tag in self.SKIP:
            self.depth += 1

    def handle_endtag(self, tag):
        if tag in self.SKIP and self.depth > 0:
            self.depth -= 1

    def handle_data(self, data):
        if self.inside_article and not self.depth:
            self.text.append(data)


RAW_TEX = re.compile(r"\$[^\s$][^$\n]*\$|\\\(|\\\[|\\[a-zA-Z]+\{")


def test_formulas_are_mathml_in_the_built_pages(site):
    """Every formula became MathML at build time; no page shows `$...$`, `\\(`, `\\[` or a TeX
    command as text (outside code)."""
    formulas, raw = 0, []
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        formulas += text.count("<math")
        parser = _VisibleText()
        parser.feed(text)
        raw += [f"{page.relative_to(site)}: {m.group(0)!r}" for m in RAW_TEX.finditer("\n".join(parser.text))]
    assert not raw, "TeX left as text:\n" + "\n".join(raw[:20])
    assert formulas >= 10, f"only {formulas} typeset formulas in the whole site"


# --------------------------------------------------------------------------- in a browser


def _chromium() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.skip("no chromium on this machine: apt-get install -y chromium (Debian)")
    return path


@pytest.fixture(scope="module")
def server(site):
    """The built site on a local port, for the length of the module."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as httpd:
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
        httpd.shutdown()
        thread.join(timeout=10)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass


@pytest.fixture(scope="module")
def browser(server, tmp_path_factory):
    """One Chromium page for the module, with a fresh profile; every request it makes is recorded."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason='the browser checks need Playwright: pip install -e ".[dev]" '
        "(it drives the system's chromium; `playwright install` is not needed)")
    executable = _chromium()
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=executable, headless=True,
            args=CHROMIUM_FLAGS, viewport={"width": 1280, "height": 900}, service_workers="block",
        )
        page = context.new_page()
        page.set_default_timeout(30_000)
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        yield page, requests
        context.close()
    offsite = [url for url in requests if not url.startswith((server, "data:", "blob:", "about:"))]
    assert not offsite, f"the browser asked the network for {offsite[:10]}"


def _open(page, server: str, path: str):
    response = page.goto(f"{server}/{path}", wait_until="load")
    assert response is not None and response.ok, f"{path}: HTTP {response and response.status}"
    return response


def _first_heading(markdown_file: Path) -> str:
    line = next(line for line in markdown_file.read_text().splitlines() if line.startswith("# "))
    return line[2:].strip()


def _heading(page) -> str:
    """The page's title as shown, without the permalink sign the build adds to headings."""
    return page.locator("article h1").first.inner_text().strip().rstrip("¶").strip()


def _scheme(page, scheme: str) -> None:
    """Material's light ("default") or dark ("slate") scheme, as its toggle sets it."""
    page.evaluate("scheme => document.body.setAttribute('data-md-color-scheme', scheme)", scheme)


def _shoot(page, name: str, locator=None) -> None:
    """A screenshot the checks leave in ARTIFACTS (the repository tracks the three of .gitignore)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (locator or page).screenshot(path=str(ARTIFACTS / name), animations="disabled")


def _url(path: str) -> str:
    from labkit.docs import book

    return book.site_url(path)


def test_home_page_renders_with_the_course_map(browser, server):
    """The README's title and lab map, and the course map: an SVG with one link per lab, in study
    order, each to a page that loads, its text legible at the size it is drawn."""
    page, _ = browser
    _open(page, server, "index.html")
    assert _heading(page) == _first_heading(ROOT / "README.md")
    targets = page.locator("article table a[href*='/labs/lab-']").evaluate_all("links => links.map(a => a.href)")
    assert targets, "the home page shows no lab map"
    course_map = page.locator("article svg.course-map >> visible=true")
    assert course_map.count() == 1, "the home page shows no course map, or two"
    links = course_map.locator("a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert links == [f"{lab.folder}/index.html" for lab in registry.LABS], "the course map is not the study order"
    for url in set(targets) | {f"{server}/{link}" for link in links}:
        assert page.request.get(url).ok, f"the home page links to {url}, which does not load"
    smallest = course_map.evaluate(
        "svg => Math.min(...[...svg.querySelectorAll('text')].map(t => t.getBoundingClientRect().height))")
    assert smallest >= MIN_TEXT_PX, f"the course map's smallest text is {smallest:.1f} px high"
    top = course_map.evaluate("svg => svg.getBoundingClientRect().top + window.scrollY")
    page.evaluate("y => window.scrollTo(0, y)", top - 72)  # the map's first phase clear of the fixed header
    _shoot(page, "docs-home.png")
    assert page.locator("header a.md-source").get_attribute("href") == REPO_URL, "no repository in the header"
    article = page.locator("article").inner_text()
    assert f"git clone {REPO_URL}" in article, "the Quickstart does not clone the repository"
    book = page.locator("article a[href='https://vllm-engineer.pages.dev']")
    assert book.count() >= 1 and "vLLM Mastery" in article, "the home page does not name the book"


@pytest.mark.parametrize("lab", registry.LABS, ids=lambda lab: lab.id)
def test_lab_page_renders_with_one_header(browser, server, lab):
    """The README's title, then the one header the build adds: where the lab runs (from the
    registry), the labs before and after it, its commands, links to its starter and tests; no second
    "Runs on / Study order" from the README; the next lab at the end of the page."""
    page, _ = browser
    _open(page, server, _page(lab))
    assert _heading(page) == _first_heading(lab.path / "README.md")
    header = page.locator("article .admonition").first
    text = header.inner_text()
    assert f"runs on: {lab.runs_on}" in text, text
    assert f"labs check {lab.id} --impl starter" in text, text
    said = page.locator("article").evaluate(
        "article => [...article.querySelectorAll('strong, b, .admonition-title')].map(e => e.textContent.trim())")
    again = re.compile(r"(runs on|study order|before this lab|after it|next):?", re.I)
    twice = [label for label in said if again.fullmatch(label)]
    assert len([label for label in said if label.lower().startswith("lab ") and "runs on:" in label]) == 1
    assert not twice, f"{lab.id}: the page says again what its header says: {twice}"
    for name in ("starter.py", "test_lab.py"):
        assert header.locator(f"a[href='{name}.html']").count() == 1, f"{lab.id}: the header has no link to {name}"
    code = page.request.get(f"{server}/{lab.folder}/test_lab.py.html")
    assert code.ok and f"Lab {lab.id}: test_lab.py" in code.text(), f"{lab.id}: its test page lacks its lab's name"
    ending = page.locator("article > p").last.inner_text()
    following = registry.LABS[registry.LABS.index(lab) + 1] if lab is not registry.LABS[-1] else None
    assert (f"Next lab: {following.id}" if following else "last lab") in page.locator("article").inner_text(), (
        f"{lab.id}'s page does not end with the next lab: {ending!r}")
    if lab is registry.LABS[0]:
        _shoot(page, "docs-lab-page.png")


# Each code block on the page that scrolls sideways, with its first line over the column's width.
_WIDE_CODE_JS = """() => [...document.querySelectorAll('article pre > code')].filter(c => c.offsetParent !== null)
    .filter(c => c.scrollWidth > c.clientWidth + 1)
    .map(c => c.innerText.split('\\n').sort((a, b) => b.length - a.length)[0].slice(0, 70))"""


def test_code_fits_at_1280_px(browser, server):
    """On a 1280-px screen no code block of the home page, Setup or a lab page scrolls sideways: the
    comment at the end of a line and the text under the copy button are in view."""
    page, _ = browser
    wide = []
    for path in ["index.html", "SETUP.html", *(_page(lab) for lab in registry.LABS)]:
        _open(page, server, path)
        wide += [f"{path}: {line}..." for line in page.evaluate(_WIDE_CODE_JS)]
    assert not wide, "code blocks that scroll at 1280 px:\n" + "\n".join(wide)


# Whatever scrolls sideways inside the page (a figure, a display formula, the course map), and whether
# it shows the reader that it does (scroll-sign.js's class, and the fade it gives).
_SCROLLERS_JS = """() => [...document.querySelectorAll(
        'article a.figure, article div.arithmatex, article .course-map-frame')]
    .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1)
    .map(e => ({what: e.className || e.tagName, sign: e.classList.contains('scrolls-right')
        && getComputedStyle(e).maskImage !== 'none'}))"""


def test_nothing_is_cut_off_on_a_phone(browser, server):
    """On a 390-px phone no page scrolls sideways as a whole, and a figure, formula or the course map
    wider than the screen fades out at its right edge: the reader sees that it goes on."""
    from labkit.docs import book

    page, _ = browser
    paths = ["index.html", "SETUP.html", *(_url(p) for p in book.reading_order() if p.split("/")[0] in registry.PHASES)]
    page.set_viewport_size({"width": 390, "height": 844})
    problems, signs = [], 0
    try:
        for path in paths:
            _open(page, server, path)
            overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            if overflow > 1:
                problems.append(f"{path}: the page scrolls sideways by {overflow} px")
            if path == "index.html":
                fits = page.locator("article .course-map-frame >> visible=true").evaluate(
                    "f => f.scrollWidth <= f.clientWidth + 1 && Math.min(...[...f.querySelectorAll('text')]"
                    ".map(t => t.getBoundingClientRect().height))")
                if not fits or fits < MIN_TEXT_PX:
                    problems.append(f"the phone's course map does not fit the screen at a legible size ({fits})")
            for scroller in page.evaluate(_SCROLLERS_JS):
                signs += 1
                if not scroller["sign"]:
                    problems.append(f"{path}: a {scroller['what']} scrolls with no sign that it does")
    finally:
        page.set_viewport_size({"width": 1280, "height": 900})
    assert signs, "nothing scrolled on a phone: the check saw nothing"
    assert not problems, "\n".join(problems)


_SIDEBAR_JS = """() => [...document.querySelectorAll('nav.md-nav--primary li.md-nav__item--nested')].map(li => ({
    title: li.querySelector('.md-ellipsis').textContent.trim(),
    links: [...li.querySelectorAll(':scope > nav a.md-nav__link[href]')].map(a => new URL(a.href).pathname)}))"""


def test_the_sidebar_puts_each_page_in_its_section(browser, server):
    """In the sidebar, a phase's cheatsheet and exercises are in that phase's section and no other,
    and a lab's going-further pages in the lab's section."""
    from labkit.docs import book

    page, _ = browser
    _open(page, server, "index.html")
    sections = {s["title"]: s["links"] for s in page.evaluate(_SIDEBAR_JS)}
    problems = []
    for phase, title in registry.PHASES.items():
        for name in book.PHASE_SUMMARIES:
            if (ROOT / phase / name).is_file():
                url = "/" + _url(f"{phase}/{name}")
                holders = [t for t, links in sections.items() if url in links and t in registry.PHASES.values()]
                if holders != [title]:
                    problems.append(f"{phase}/{name} is in the sections {holders}, not {title!r}")
    for lab in registry.LABS:
        for path in book.further_pages(lab):
            if "/" + _url(path) not in sections.get(book.lab_title(lab), []):
                problems.append(f"{path} is not in lab {lab.id}'s section of the sidebar")
    assert not problems, "\n".join(problems)


def test_each_cheatsheet_covers_the_labs_of_its_phase(browser, server):
    """A phase's cheatsheet names every lab of its phase: Next leads there from the phase's last lab."""
    page, _ = browser
    missing = []
    for phase in registry.PHASES:
        _open(page, server, _url(f"{phase}/CHEATSHEET.md"))
        text = page.locator("article").inner_text()
        missing += [f"{phase}/CHEATSHEET.md does not name lab {lab.id}" for lab in registry.LABS
                    if lab.phase == phase and lab.id not in text]
    assert not missing, "\n".join(missing)


def test_dark_mode_follows_the_system(browser, server):
    """A reader whose system is dark gets the dark scheme, one whose system is light the light one,
    until the toggle chooses."""
    page, _ = browser
    try:
        for system, scheme in (("dark", "slate"), ("light", "default")):
            page.emulate_media(color_scheme=system)
            _open(page, server, "index.html")
            page.evaluate("localStorage.clear()")
            page.reload(wait_until="load")
            shown = page.evaluate("document.body.getAttribute('data-md-color-scheme')")
            assert shown == scheme, f"a {system} system gets the {shown!r} scheme"
    finally:
        page.emulate_media(color_scheme="light")


def test_hints_are_folded(browser, server):
    """A hints page shows each hint's heading, its text folded until the reader opens it."""
    from labkit.course.hints import parse_hints

    page, _ = browser
    for lab in registry.LABS:
        count = len(parse_hints((lab.path / "hints.md").read_text(encoding="utf-8")))
        _open(page, server, f"{lab.folder}/hints.html")
        folded = page.locator("article details:not([open])")
        assert folded.count() == count > 0, f"{lab.id}: {folded.count()} folded hints of {count}"
        assert not page.locator("article details > p").first.is_visible(), f"{lab.id}: a hint shows unfolded"


_FOOTER_LINK = re.compile(r'<a href="([^"]*)" class="md-footer__link md-footer__link--(prev|next)"')


def _footer(server: str, page, url: str) -> dict[str, str]:
    """A page's footer links as the browser receives them: {"prev": site path, "next": site path}."""
    response = page.request.get(f"{server}/{url}")
    assert response.ok, f"{url}: HTTP {response.status}"
    return {kind: posixpath.normpath(posixpath.join(posixpath.dirname(url), href))
            for href, kind in _FOOTER_LINK.findall(response.text())}


def test_next_walks_the_course_in_study_order(browser, server):
    """From the home page, the footer's Next goes through every page of the reading order, labs in
    study order and never a lab's hints or results, to the end; each hints or results page goes
    back to its lab, and says whose it is. (The chain is read from each page's footer as served; the
    browser follows the first link, to check that it is a footer a reader can click.)"""
    from labkit.docs import book

    page, _ = browser
    expected = [_url(path) for path in book.reading_order()]
    walked, url = [], expected[0]
    while url and len(walked) <= len(expected):
        walked.append(url)
        url = _footer(server, page, url).get("next")
    assert walked == expected, f"Next walks {walked}, not the reading order {expected}"
    _open(page, server, expected[0])
    page.locator("a.md-footer__link--next").click()
    page.wait_for_load_state()
    assert page.url == f"{server}/{expected[1]}", f"the home page's Next opens {page.url}"
    for path, (previous, _) in book.reading_links().items():
        if path.endswith(("/hints.md", "/results.md")):
            back = _footer(server, page, _url(path)).get("prev")
            assert back == _url(previous), f"{path}: Previous goes to {back}, not to its lab"
            lab = registry.lab_for_path(ROOT / path)
            title = re.search(r"<title>(.*?)</title>", page.request.get(f"{server}/{_url(path)}").text()).group(1)
            assert lab.id in title, f"{path}: its title {title!r} does not say whose page it is"


def test_navigation_follows_the_registry_study_order(browser, server):
    """The sidebar lists the labs exactly in the registry's order."""
    page, _ = browser
    _open(page, server, "index.html")
    hrefs = page.locator("nav.md-nav--primary a.md-nav__link[href]").evaluate_all(
        "links => links.map(a => new URL(a.href).pathname)")
    folders = [lab.folder for lab in registry.LABS]
    in_nav = []
    for href in hrefs:
        found = next((f for f in folders if href.rstrip("/").endswith(f"{f}/index.html")), None)
        if found and found not in in_nav:
            in_nav.append(found)
    assert in_nav == folders, f"navigation order {in_nav} differs from the registry's {folders}"


def test_formulas_are_typeset(browser, server, site):
    """Every page with formulas, in the browser: the MathML has a size, the math font the site
    serves is the one in use, and no `$...$` or `\\(...\\)` is left as text; the labs that teach a
    formula (the slot, the online-softmax recurrence, the merge) show it on their own page."""
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                   if "<math" in p.read_text() and p.name != "print.html")
    assert pages, "no page of the site has a formula"
    for lab_id, formula in (("02-06", "slot"), ("04-01", "recurrence"), ("04-04", "merge")):
        assert _page(registry.get(lab_id)) in pages, f"lab {lab_id}'s page does not typeset its {formula}"
    page, _ = browser
    for path in pages:
        _open(page, server, path)
        page.evaluate("document.fonts.ready")
        box = page.locator("article math >> visible=true").first.bounding_box()  # answers are folded
        assert box and box["width"] > 0 and box["height"] > 0, f"{path}: a formula with no size"
        assert page.evaluate("document.fonts.check('16px \"STIX Two Math\"')"), f"{path}: no math font"
        text = page.locator("article").evaluate(
            "article => { const c = article.cloneNode(true);"
            " c.querySelectorAll('code, pre, math, script, style').forEach(e => e.remove());"
            " return c.textContent; }")
        assert not RAW_TEX.search(text), f"{path}: TeX left as text: {RAW_TEX.search(text).group(0)!r}"


# The smallest text a figure may show, in CSS px: three quarters of the site's 16-px body text.
MIN_TEXT_PX = 11.5
# For each visible figure of the article: its source, its rendered width, whether a click opens it.
_FIGURES_JS = """article => [...article.querySelectorAll('img')].filter(i => i.offsetParent !== null).map(i => ({
    src: i.getAttribute('src'), width: i.getBoundingClientRect().width, natural: i.naturalWidth,
    link: i.closest('a') ? new URL(i.closest('a').href).pathname : null}))"""


def _smallest_text_px(svg: str, rendered_width: float) -> float:
    from labkit import figures

    viewbox_width = float(re.search(r'viewBox="[-0-9.]+ [-0-9.]+ ([0-9.]+)', svg).group(1))
    return figures.smallest_font(svg) * rendered_width / viewbox_width


# The views a figure is checked in: a desktop, dark mode on it, a phone. Each page is loaded once and
# seen in each of them (a viewport or a colour scheme set on a loaded page lays it out again): loading
# every page with a figure once a view was a minute of CI.
FIGURE_VIEWS = {"desktop": ((1280, 900), "default"), "dark": ((1280, 900), "slate"), "mobile": ((390, 844), "default")}


@pytest.fixture(scope="module")
def figures_seen(browser, server, site) -> dict[str, tuple[int, list[str]]]:
    """Every figure of every page, in each of FIGURE_VIEWS: {view: (figures seen, problems)}."""
    page, _ = browser
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                   if "<img" in p.read_text() and p.name != "print.html")
    assert pages, "no page of the site shows a figure"
    seen = {view: [0, []] for view in FIGURE_VIEWS}
    shot = False
    try:
        for path in pages:
            _open(page, server, path)
            for view, (viewport, scheme) in FIGURE_VIEWS.items():
                page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
                _scheme(page, scheme)
                seen[view][0] += _check_figures(page, site, path, scheme, seen[view][1])
                if scheme == "slate" and "/tutorials/" in path and not shot:  # a chapter's figure, in dark mode
                    shot = _shoot(page, "docs-figure.png", page.locator("article a.figure--dark").first) or True
    finally:
        page.set_viewport_size({"width": 1280, "height": 900})
        _scheme(page, "default")
    return {view: (count, problems) for view, (count, problems) in seen.items()}


def _check_figures(page, site: Path, path: str, scheme: str, problems: list[str]) -> int:
    """The visible figures of the page as it is laid out now, checked; returns how many there were."""
    page.evaluate("() => Promise.all([...document.images].map(i => i.decode().catch(() => null)))")
    figures = page.locator("article").evaluate(_FIGURES_JS)
    for figure in figures:
        where = f"{path}: {figure['src']}"
        source = figure["src"].split("#")[0]
        if not source.endswith(".svg"):
            problems.append(f"{where}: not an SVG")
            continue
        folder = Path(path).parent
        svg = (site / folder / source).read_text(encoding="utf-8")
        px = _smallest_text_px(svg, figure["width"])
        if px < MIN_TEXT_PX:
            problems.append(f"{where}: smallest text {px:.1f} px at {figure['width']:.0f} px wide")
        if figure["link"] != "/" + posixpath.normpath((folder / source).as_posix()):
            problems.append(f"{where}: a click does not open it (link: {figure['link']})")
        if (scheme == "slate") != source.endswith(".dark.svg"):
            problems.append(f"{where}: the {'dark' if scheme == 'slate' else 'light'} page shows this twin")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    if overflow > 1:
        problems.append(f"{path}: the page scrolls sideways by {overflow} px")
    return len(figures)


@pytest.mark.parametrize("view", FIGURE_VIEWS)
def test_every_figure_reads_at_its_size(figures_seen, view):
    """Every figure of every page, on a desktop, on a phone and in dark mode: an SVG whose smallest text
    is at least MIN_TEXT_PX high as drawn (on a phone it scrolls sideways rather than shrink), a link
    that opens it full size, and in dark mode its dark twin, not a white box. The page never scrolls
    sideways as a whole."""
    seen, problems = figures_seen[view]
    assert seen, "no figure was seen"
    assert not problems, "\n".join(problems)


def _title_query(lab: registry.Lab) -> str:
    """What a reader types to find a lab by its title: its words, without punctuation."""
    return " ".join(re.findall(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*", lab.title))


def _search(page, server: str, query: str) -> list[str]:
    """The pages search lists for ``query``, best first (one entry per page), from a fresh home page
    (Material searches on the box's first input; a second one, after emptying it or in its place,
    renders no new results: each search pays for a page load and the index it builds)."""
    _open(page, server, "index.html")
    box = page.locator("input.md-search__input")
    box.click()
    box.fill(query)
    page.locator(".md-search-result__item").first.wait_for()
    hrefs = page.locator(".md-search-result__item > a:first-child").evaluate_all(
        "links => links.map(a => new URL(a.href).pathname)")
    return [href.lstrip("/") for href in hrefs]


@pytest.mark.parametrize("lab", registry.LABS, ids=lambda lab: lab.id)
def test_search_finds_each_lab_first_by_its_title(browser, server, lab):
    page, _ = browser
    results = _search(page, server, _title_query(lab))
    place = results.index(_page(lab)) + 1 if _page(lab) in results else "no place"
    assert results[0] == _page(lab), f"searching {_title_query(lab)!r} lists lab {lab.id} at {place}: {results[:5]}"


def test_search_finds_the_lab_that_teaches_the_block_table(browser, server):
    """"block table" lists lab 02-06, which teaches it, among its first results, and no code page first."""
    page, _ = browser
    results = _search(page, server, "block table")
    teacher = _page(registry.get("02-06"))
    assert teacher in results[:4], f"'block table' lists {results[:8]}"
    assert not results[0].endswith(".py.html"), f"a code page comes first: {results[:3]}"


@pytest.mark.parametrize("term,teachers", [("persistent batch", ["99-02"]), ("CUDA graph", ["99-02"]),
                                           ("prefix cache", ["02-05", "02-01"]), ("slot mapping", ["02-06"])])
def test_search_finds_the_lab_that_teaches_a_term(browser, server, term, teachers):
    """A term that many pages use lists first the labs that teach it (their search tags)."""
    page, _ = browser
    results = _search(page, server, term)
    assert set(results[: len(teachers)]) == {_page(registry.get(t)) for t in teachers}, f"{term!r} lists {results[:4]}"


def test_the_course_on_one_page(browser, server, site):
    """print.html holds every page of the course in reading order, each under its own anchor, and
    every link of it to a place on itself leads somewhere."""
    from labkit.docs import book

    page, _ = browser
    _open(page, server, "print.html")
    sections = page.locator("section.print-page").evaluate_all("s => s.map(e => e.id)")
    assert len(sections) == len(book.print_pages()) + len(book.hint_pages()), f"{len(sections)} pages on print.html"
    contents = page.locator("article nav.print-contents li a").evaluate_all("a => a.map(e => e.getAttribute('href'))")
    assert [c for c in contents if c.startswith("#page-")] == [f"#{s}" for s in sections], "contents != pages"
    first = page.locator("section.print-page").first
    assert first.locator("svg.course-map").count() == 0, "the book opens with the home page's course map"
    hints = page.locator("#part-hints ~ section.print-page details")
    assert hints.count() and hints.count() == page.locator("#part-hints ~ section.print-page details[open]").count(), (
        "the appendix's hints are folded: a printed hint cannot be opened")
    assert page.locator("#part-hints").count() == 1, "the hints are not gathered in an appendix"
    headings = page.locator("section.print-page h1").evaluate_all("h => h.map(e => e.textContent)")
    assert len(headings) >= len(sections), "a page of print.html has no title"
    dead = page.evaluate("""() => [...document.querySelectorAll('article a[href^="#"]')]
        .map(a => a.getAttribute('href').slice(1)).filter(id => id && !document.getElementById(id))""")
    assert not dead, f"print.html links to anchors it does not have: {sorted(set(dead))[:10]}"
    assert page.locator("section.print-page math").count() > 10, "print.html lost the formulas"
