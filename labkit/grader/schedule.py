"""When and where each student's lab is graded: in waves, so that no sandbox holding lab X's reference
runs beside a lab X submission; one grader per machine; ``--shard K/N``. README.md has the why."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from labkit.course.registry import Lab
from labkit.grader import references


def waves(labs: list[Lab]) -> list[list[Lab]]:
    """``labs`` in waves: a lab comes after every graded lab whose reference its sandbox holds (the
    longest chain of such labs below it), and keeps its place in ``labs`` within its wave."""
    graded = {lab.id for lab in labs}
    below = {lab.id: set(references.needed(lab.path)) & graded for lab in labs}
    depth: dict[str, int] = {}

    def level(lab_id: str) -> int:
        if lab_id not in depth:
            depth[lab_id] = 0  # a cycle (none exists: a lab loads earlier labs only) cannot recurse forever
            depth[lab_id] = 1 + max((level(x) for x in below[lab_id]), default=-1)
        return depth[lab_id]

    out: list[list[Lab]] = [[] for _ in range(1 + max((level(lab.id) for lab in labs), default=-1))]
    for lab in labs:
        out[level(lab.id)].append(lab)
    return out


def in_shard(student: str, shard: tuple[int, int] | None) -> bool:
    """Whether the student of folder ``student`` is graded by shard ``(K, N)`` (1 <= K <= N); every
    student when None."""
    if shard is None:
        return True
    k, n = shard
    # The name's bytes as the file system has them: a name that is not UTF-8 hashes as well.
    return int.from_bytes(hashlib.sha256(os.fsencode(student)).digest()[:8], "big") % n == k - 1


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> (K, N); ValueError unless 1 <= K <= N."""
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard {text!r}: write K/N, e.g. 1/4") from None
    if not 1 <= k <= n:
        raise ValueError(f"--shard {text!r}: K must be between 1 and N")
    return k, n


LOCK = Path(tempfile.gettempdir()) / "labs-grade.lock"


@contextlib.contextmanager
def machine_lock(on_wait: Callable[[], None] = lambda: None) -> Iterator[None]:
    """Held while a grader grades: a second ``labs grade`` on this machine waits for the first (its
    waves and the other's would overlap). ``on_wait`` is called once if it has to wait."""
    fd = os.open(LOCK, os.O_RDONLY | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
