"""The course as a book: a static, searchable site built from the repository's own Markdown.

    python -m labkit.docs build        # build/docs/site/index.html
    python -m labkit.docs serve        # the same, served on http://127.0.0.1:8000

- ``labkit.docs.book``: what the site holds and in which order, read from the course registry.
- ``labkit.docs.build``: copies the pages into a build folder (links rewritten where the site
  needs it, a header on every lab page, a code page for every source file a page links to), runs
  MkDocs with Material in strict mode, then typesets the formulas as MathML.

docs/README.md explains the choices (generator, math, offline); docs/mkdocs.yml holds the settings.
"""
