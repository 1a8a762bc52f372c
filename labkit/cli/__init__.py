"""The ``labs`` command (``labs list | check | hint | bugs | mutate | grade``).

:mod:`labkit.cli.commands` holds the parser, ``list`` and ``hint``; ``check``, ``bugs``, ``mutate``
and ``grade`` have a module each; :mod:`labkit.cli.common` what they share (the consoles, finding a lab).
"""

from labkit.cli.commands import build_parser, main

__all__ = ["build_parser", "main"]
