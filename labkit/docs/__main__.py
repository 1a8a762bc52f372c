"""``python -m labkit.docs build|serve``: the course as a static site (see docs/README.md)."""

from __future__ import annotations

import argparse
import functools
import http.server
import sys
import time
from pathlib import Path

from labkit.docs import build

INSTALL = 'pip install -e ".[docs]"'


def _missing_dependency() -> str | None:
    for module in ("mkdocs", "material", "pymdownx", "latex2mathml", "ziamath", "yaml"):
        try:
            __import__(module)
        except ImportError:
            return f"the site needs {module!r}, which is not installed: {INSTALL}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labkit.docs", description=__doc__)
    parser.add_argument("command", choices=("build", "serve"),
                        help="build: write the site; serve: build it, then serve it on this machine")
    parser.add_argument("--out", type=Path, default=build.DEFAULT_OUT,
                        help="build folder; the site lands in OUT/site (default: build/docs)")
    parser.add_argument("--repo-url", help="the repository's address, shown in the site's header and its Quickstart "
                        "(default: repo_url in docs/mkdocs.yml, unset)")
    parser.add_argument("--port", type=int, default=8000, help="serve: the port on 127.0.0.1 (default 8000)")
    args = parser.parse_args(argv)

    problem = _missing_dependency()
    if problem:
        print(problem, file=sys.stderr)
        return 2
    start = time.perf_counter()
    try:
        site = build.build(args.out, args.repo_url)
    except build.BuildError as err:
        print(f"the site was not built: {err}", file=sys.stderr)
        return 1
    print(f"built {site} in {time.perf_counter() - start:.1f} s; open {site / 'index.html'}")
    if args.command == "serve":
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
        with http.server.ThreadingHTTPServer(("127.0.0.1", args.port), handler) as server:
            print(f"serving on http://127.0.0.1:{args.port}/ (Ctrl-C stops)")
            try:
                server.serve_forever()
            except KeyboardInterrupt:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
