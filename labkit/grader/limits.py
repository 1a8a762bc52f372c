"""What one sandbox may use: ``setrlimit`` inside each process, and a cgroup around the whole sandbox
(memory with swap and tmpfs, processes, a CPU weight), v2 where delegated, else v1. README.md has the why."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

CONTROLLERS = ("memory", "pids", "cpu")
PIDS_OVERHEAD = 16  # bubblewrap's own processes, on top of the sandbox's process limit
# The first process of a sandbox: write its pid into each cgroup.procs, then become the command.
JOIN = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n - 1)); done; exec "$@"'


@dataclass(frozen=True)
class Resources:
    """Limits for one sandbox (0: none). Defaults fit every lab's tests: the checks of a cache past
    2**31 elements (02-04, 04-03, 04-06) reserve a 4.3 GB cache (on the CPU, barely touched)."""

    memory: int = 8 << 30  # bytes: the cgroup's RAM and swap, and each process's address space
    processes: int = max(128, 8 * (os.cpu_count() or 1))  # processes and threads
    tmp_size: int = 512 << 20  # bytes of /tmp (and of /dev/shm), and the largest file
    cpu_seconds: int = 1200  # CPU time per process: a backstop, the grader's time limits come first
    open_files: int = 1024

    def rlimits(self, *, gpu: bool, sandboxed: bool) -> dict:
        """The worker's ``setrlimit`` table. A CUDA context reserves address space the size of host and
        GPU memory (never touched): with a GPU the memory limit is on private writable memory instead."""
        return {"memory": self.memory, "memory_kind": "data" if gpu else "as", "processes": self.processes,
                "file_size": self.tmp_size, "cpu_seconds": self.cpu_seconds, "open_files": self.open_files,
                "sandboxed": sandboxed}


DEFAULTS = Resources()


@dataclass(frozen=True)
class Place:
    """Where cgroups are made: cgroup v2's one folder, or v1's folder in each controller's hierarchy."""

    version: int
    folders: tuple[str, ...]

    def child(self, name: str, leaf: bool = False) -> Place:
        """A new cgroup below this one (OSError if it cannot be made); on v2, one that is not a ``leaf``
        gives its controllers to the cgroups made below it."""
        made = []
        try:
            for folder in map(Path, self.folders):
                made.append(folder / name)
                made[-1].mkdir()
                if self.version == 2 and not leaf:
                    wanted = sorted(_words(made[-1] / "cgroup.controllers") & set(CONTROLLERS))
                    (made[-1] / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))
        except OSError:
            for path in made:
                _remove_tree(path)
            raise
        return Place(self.version, tuple(map(str, made)))

    def remove(self) -> bool:
        """Remove this cgroup and those below it, killing what is still inside; False if one stays."""
        return all([_remove_tree(Path(folder)) for folder in self.folders])


class Cgroup:
    """One sandbox's cgroup (or the trusted pytest process's: ``name``), below ``place``, with
    ``resources``' limits; its first process writes its pid into each of ``procs``."""

    def __init__(self, place: Place, resources: Resources, name: str = "sandbox"):
        self.place = place.child(f"{name}-{secrets.token_hex(4)}", leaf=True)
        self.procs = [str(Path(f) / "cgroup.procs") for f in self.place.folders]
        limits = {"memory.max": resources.memory, "memory.swap.max": 0,  # v2: swap on top of memory.max: none
                  "memory.oom.group": 1, "cpu.weight": 100,  # v2: the whole sandbox is killed together
                  "memory.limit_in_bytes": resources.memory, "memory.memsw.limit_in_bytes": resources.memory,
                  "cpu.shares": 1024, "pids.max": resources.processes + PIDS_OVERHEAD if resources.processes else "max"}
        try:
            for folder in map(Path, self.place.folders):
                for name, value in limits.items():  # in this order: v1's memsw may not go below the limit
                    if (folder / name).exists() and (value or not name.startswith("memory.")):
                        (folder / name).write_text(f"{value}\n")
        except OSError:
            self.place.remove()
            raise
        # The kernel's count of processes it killed here for memory (read after every reply: one file).
        self.oom = next((Path(f) / n for f in self.place.folders for n in ("memory.events", "memory.oom_control")
                         if (Path(f) / n).exists()), None)

    def memory_killed(self) -> bool:
        """Whether the kernel killed a process of this sandbox for going past its memory limit."""
        counts = _counts(self.oom) if self.oom is not None else {}
        return counts.get("oom_kill", 0) > 0 or counts.get("oom_group_kill", 0) > 0

    def remove(self) -> bool:
        return self.place.remove()


def find(resources: Resources = DEFAULTS) -> tuple[Place | None, str]:
    """Where this grader makes its cgroups (tried by making one there), and a line for the report's
    header: how each sandbox's memory is held, or why it is not."""
    place, why = _v2() or _v1()
    if place is not None:
        try:
            Cgroup(place, resources).remove()
        except OSError as err:
            place, why = None, f"no cgroup could be made in {place.folders[0]} ({err.strerror})"
    size = f"{resources.memory / 2**30:g} GiB" if resources.memory else "no limit"
    if place is None:
        return None, (f"NOT capped per sandbox: {why}; each process's address space is limited ({size}), but a "
                      "sandbox's memory summed over its processes, memfd and /tmp files is not")
    return place, (f"capped per sandbox: {size} of RAM and swap together, /tmp and /dev/shm included (cgroup "
                   f"v{place.version}: memory, processes, CPU weight)")


def _v2() -> tuple[Place | None, str] | None:
    mounts, own = _mounts(), _own_cgroups()
    if "" not in own or "cgroup2" not in mounts:
        return None
    top = Path(_located(mounts["cgroup2"], own[""]))
    for folder in (top, top.parent):  # the grader's cgroup, or the one above the leaf it runs in
        inside = folder == Path(mounts["cgroup2"][1]) or Path(mounts["cgroup2"][1]) in folder.parents
        if inside and {"memory", "pids"} <= _words(folder / "cgroup.subtree_control"):
            return Place(2, (str(folder),)), ""
    if {"memory", "pids"} <= _words(Path(mounts["cgroup2"][1]) / "cgroup.controllers"):
        return None, (f"the grader's cgroup {own['']} does not give the memory and pids controllers to cgroups "
                      "below it (SETUP.md: delegate one to the grader)")
    return None  # v2 holds no memory controller here: the v1 hierarchies may


def _v1() -> tuple[Place | None, str]:
    mounts, own = _mounts(), _own_cgroups()
    folders = []
    for controller in CONTROLLERS:
        if controller not in mounts or controller not in own:
            if controller == "cpu":
                continue  # a CPU weight is a nicety; memory and processes are the limits
            return None, f"no cgroup {controller} controller is mounted"
        folder = _located(mounts[controller], own[controller])
        folders += [] if folder in folders else [folder]
    return Place(1, tuple(folders)), ""


def _mounts() -> dict[str, tuple[str, str]]:
    """controller (v1) or "cgroup2" -> (the mount's root in the hierarchy, its mount point)."""
    found = {}
    for line in _lines("/proc/self/mountinfo"):
        fields, _, after = line.partition(" - ")
        fields, after = fields.split(), after.split()
        if len(after) >= 3 and after[0] in ("cgroup", "cgroup2"):
            for name in ["cgroup2"] if after[0] == "cgroup2" else after[2].split(","):
                found.setdefault(name, (fields[3], fields[4].replace("\\040", " ")))
    return found


def _own_cgroups() -> dict[str, str]:
    """controller (v1), or "" (v2) -> the grader's cgroup, as /proc/self/cgroup names it."""
    own = {}
    for _, controllers, path in (line.split(":", 2) for line in _lines("/proc/self/cgroup") if line.count(":") >= 2):
        own.update({c: path for c in (controllers.split(",") if controllers else [""])})
    return own


def _located(mount: tuple[str, str], cgroup: str) -> str:
    """The folder of ``cgroup`` under the mount (whose root may be a cgroup below the hierarchy's top)."""
    root, point = mount
    rel = os.path.relpath(cgroup, root) if cgroup.startswith(root) else cgroup.lstrip("/")
    return os.path.normpath(os.path.join(point, "" if rel == "." else rel))


def _lines(path) -> list[str]:
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []


def _words(path: Path) -> set[str]:
    return {word for line in _lines(path) for word in line.split()}


def _counts(path: Path) -> dict[str, int]:
    return {k: int(v) for k, v in (line.split()[:2] for line in _lines(path) if len(line.split()) == 2) if v.isdigit()}


def _remove_tree(folder: Path, wait: float = 10.0) -> bool:
    """rmdir ``folder`` and every cgroup below it, deepest first, once their processes are gone (what is
    still inside after half a second, the sandbox's own processes, is killed)."""
    if not folder.is_dir():
        return True
    for child in (p for p in folder.iterdir() if p.is_dir()):
        _remove_tree(child, wait)
    start = time.monotonic()
    while pids := [int(p) for p in _words(folder / "cgroup.procs") if p.isdigit()]:
        if time.monotonic() - start > wait:
            return False
        if time.monotonic() - start > 0.5:
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    try:
        folder.rmdir()
    except OSError:
        return False
    return True
