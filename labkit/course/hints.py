"""A lab's hints (``hints.md``: ``## Hint 1``, ``## Hint 2``...) and which of them a learner has read.

``labs hint LAB`` shows the next unread one; what was read is remembered in
``~/.cache/paged-attention-labs/hints-seen.json`` (under ``$XDG_CACHE_HOME`` when that is set).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path


def parse_hints(text: str) -> list[tuple[str, str]]:
    """``(title, body)`` for each ``## Hint N`` section, in order."""
    parts = re.split(r"^##\s+(Hint\s+\d+\b.*)$", text, flags=re.M)
    return [(title.strip(), body.strip()) for title, body in zip(parts[1::2], parts[2::2], strict=True)]


def _state_file() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "paged-attention-labs" / "hints-seen.json"


def seen() -> dict[str, int]:
    """lab id -> the highest hint number read."""
    try:
        data = json.loads(_state_file().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save(state: dict) -> None:
    try:
        _state_file().parent.mkdir(parents=True, exist_ok=True)
        _state_file().write_text(json.dumps(state))
    except OSError:
        pass  # remembering is a convenience only


def remember(lab_id: str, n: int) -> None:
    state = seen()
    state[lab_id] = max(n, int(state.get(lab_id, 0)))
    _save(state)


def forget(lab_id: str) -> None:
    state = seen()
    state.pop(lab_id, None)
    _save(state)


def next_unread(lab_id: str, count: int) -> int:
    """The number of the first hint not read yet (the last one once all are read)."""
    return min(int(seen().get(lab_id, 0)) + 1, count)
