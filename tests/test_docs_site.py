"""The course's site (``python -m labkit.docs build``), built strictly and read in a real browser.

Maintainer checks (``pytest -m maintainer``; .ci/run runs them). The build needs the ``docs``
extra; the browser checks drive the system's Chromium (Debian: ``apt-get install -y chromium``)
with Playwright from PyPI (the ``dev`` extra), never a browser Playwright downloads. Each part
skips, saying what to install, when its tools are missing.

The browser loads the site from a local HTTP server and fails on any request that leaves it; it
checks that the home page and every lab page render, that formulas are typeset, that figures load,
that search finds each lab by a word of its README, and that the navigation is the registry's
study order. A screenshot of a lab page is left in ``.ci/artifacts/`` (or ``$DOCS_ARTIFACTS``).
"""

from __future__ import annotations

import functools
import html.parser
import http.server
import os
import re
import shutil
import threading
from collections import Counter
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


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    _require_docs_tools()
    from labkit.docs import build

    return build.build(tmp_path_factory.mktemp("docs"))


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


def test_formulas_are_mathml_in_the_built_pages(site):
    """Every page's TeX became MathML at build time: none left for a script to typeset."""
    leftover = [p.relative_to(site) for p in site.rglob("*.html") if re.search(r'arithmatex">\\[(\[]', p.read_text())]
    assert not leftover, f"pages with TeX left in them: {leftover}"
    for phase in registry.PHASES:
        for name in ("CHEATSHEET.html", "EXERCISES.html"):
            assert (site / phase / name).read_text().count("<math") >= 3, f"{phase}/{name} has no typeset formulas"


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


def test_home_page_renders(browser, server):
    page, _ = browser
    _open(page, server, "index.html")
    assert _heading(page) == _first_heading(ROOT / "README.md")
    # The README's lab map, in the registry's order, with working links to the lab pages.
    map_links = page.locator("article table a[href*='/labs/lab-']")
    assert map_links.count() >= len(registry.LABS)


@pytest.mark.parametrize("lab", registry.LABS, ids=lambda lab: lab.id)
def test_lab_page_renders_with_its_header(browser, server, lab):
    """The README's title, then the header the build adds: where the lab runs (from the registry),
    its commands, and links to its starter and tests that open their code pages."""
    page, _ = browser
    _open(page, server, _page(lab))
    assert _heading(page) == _first_heading(lab.path / "README.md")
    header = page.locator("article .admonition").first
    text = header.inner_text()
    assert f"runs on: {lab.runs_on}" in text, text
    assert f"labs check {lab.id} --impl starter" in text, text
    for name in ("starter.py", "test_lab.py"):
        link = header.locator(f"a[href='{name}.html']")
        assert link.count() == 1, f"{lab.id}: the header has no link to {name}"
        code = _open(page, server, f"{lab.folder}/{name}.html")
        assert code.ok
        assert page.locator("article pre code").count() >= 1, f"{lab.id}: {name}'s page shows no code"
        page.go_back(wait_until="load")
    if lab is registry.LABS[0]:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "docs-lab-page.png"
        page.screenshot(path=str(shot))
        print(f"screenshot of lab {lab.id}'s page: {shot}")


def _raw_tex_outside_code(page) -> list[str]:
    """Text of the article, outside code and MathML, that still looks like TeX."""
    return page.evaluate(r"""() => {
        const found = [];
        const walker = document.createTreeWalker(document.querySelector("article"), NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            if (node.parentElement.closest("code, pre, math, script, style")) continue;
            const text = node.textContent;
            if (/\$[^\s$][^$]*\$|\\\(|\\\)|\\\[|\\\]|\\[a-zA-Z]+\{/.test(text)) found.push(text.trim().slice(0, 80));
        }
        return found;
    }""")


@pytest.mark.parametrize("phase", registry.PHASES, ids=lambda phase: phase.split("-")[1])
def test_formulas_are_typeset(browser, server, phase):
    """The cheatsheet's formulas are laid out by the browser as MathML, with the math font the site
    serves; no `$...$` or `\\(...\\)` is left as text."""
    page, _ = browser
    for name in ("CHEATSHEET.html", "EXERCISES.html"):
        _open(page, server, f"{phase}/{name}")
        page.evaluate("document.fonts.ready")
        formulas = page.locator("article math")
        assert formulas.count() >= 3, f"{phase}/{name}: no typeset formulas"
        box = page.locator("article math >> visible=true").first.bounding_box()  # answers are folded
        assert box and box["width"] > 0 and box["height"] > 0, f"{phase}/{name}: a formula with no size"
        assert _raw_tex_outside_code(page) == [], f"{phase}/{name}: raw TeX left"
        assert page.evaluate("document.fonts.check('16px \"STIX Two Math\"')"), "the math font did not load"


def test_figures_load(browser, server):
    """Every image on the lab pages loads (naturalWidth > 0); there is at least one."""
    page, _ = browser
    seen = 0
    for lab in registry.LABS:
        _open(page, server, _page(lab))
        for image in page.locator("article img").all():
            image.scroll_into_view_if_needed()
            width = image.evaluate("img => img.complete ? img.naturalWidth : new Promise(done => "
                                   "{ img.onload = () => done(img.naturalWidth); img.onerror = () => done(0); })")
            assert width > 0, f"lab {lab.id}: {image.get_attribute('src')} did not load"
            seen += 1
    assert seen > 0, "no figure on any lab page"


def _distinctive_word(lab: registry.Lab, site_source: Path) -> str:
    """A word of the lab's README whose first six letters start no word of any other page (search
    stems words and matches prefixes), the most frequent such word."""
    words = lambda text: re.findall(r"[a-z]{6,}", text.lower())  # noqa: E731
    elsewhere = set()
    for page in site_source.rglob("*.md"):
        if page != site_source / lab.folder / "README.md":
            elsewhere.update(word[:6] for word in words(page.read_text()))
    own = Counter(w for w in words((lab.path / "README.md").read_text()) if w[:6] not in elsewhere)
    assert own, f"lab {lab.id}'s README has no word of its own"
    return own.most_common(1)[0][0]


@pytest.mark.parametrize("lab", registry.LABS, ids=lambda lab: lab.id)
def test_search_finds_the_lab_by_a_word_of_its_readme(browser, server, site, lab):
    page, _ = browser
    word = _distinctive_word(lab, site.parent / "src")
    _open(page, server, "index.html")
    page.locator("input.md-search__input").click()
    page.locator("input.md-search__input").fill(word)
    results = page.locator(".md-search-result__item a")
    results.first.wait_for()
    targets = [a.get_attribute("href") or "" for a in results.all()]
    assert any(f"{lab.folder}/index.html" in href for href in targets), (
        f"searching {word!r} does not find lab {lab.id}; results: {targets[:8]}")


def test_navigation_follows_the_registry_study_order(browser, server):
    """The site's navigation lists the labs exactly in the registry's order."""
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
