"""MkDocs hooks of the course's site (``hooks:`` in the configuration the build writes).

MkDocs links every page of the navigation to the one before and after it, sub-pages included, so
a lab page's Next would open its hints. ``on_nav`` relinks them in reading order instead
(``labkit.docs.book.reading_links``), which the build writes beside the configuration as
``reading-order.json``: this file is loaded by MkDocs on its own and imports nothing of labkit.
"""

from __future__ import annotations

import json
from pathlib import Path

READING_ORDER = "reading-order.json"


def on_nav(nav, config, files):
    links = json.loads((Path(config.config_file_path).parent / READING_ORDER).read_text(encoding="utf-8"))
    pages = {page.file.src_uri: page for page in nav.pages}
    for path, (previous, following) in links.items():
        page = pages.get(path)
        if page is None:  # a navigation entry whose file is missing: MkDocs names it, strict fails
            continue
        page.previous_page = pages.get(previous) if previous else None
        page.next_page = pages.get(following) if following else None
    return nav
