"""``python -m labkit.cli``: the ``labs`` command without installing the repository."""

import sys

from labkit.cli.commands import main

sys.exit(main())
