"""The ``labs`` command (``labs list | check | hint | bugs | grade``); see :mod:`labkit.cli.commands`."""

from labkit.cli.commands import build_parser, main

__all__ = ["build_parser", "main"]
