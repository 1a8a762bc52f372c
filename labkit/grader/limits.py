"""What one sandbox may use, and how the kernel holds it to that.

Two layers. Inside, the worker calls ``setrlimit`` for itself and every process it starts, before
the student's file is imported (:func:`labkit.grader.worker.apply_limits`): address space (private
writable memory with a GPU), processes and threads (counted per user namespace), the largest file,
CPU seconds, open files. Those bound one process at a time: a submission held 2.7 GiB in
``memfd_create`` files, another 2.3 GiB across five processes, under a 1 GiB limit.

Around, each sandbox runs in a cgroup of its own (:class:`Cgroup`): its memory (RAM and swap, summed
over its processes; the sandbox's ``/tmp`` and ``/dev/shm`` are included, since a tmpfs page is
charged to the cgroup of the process that writes it, and only the sandbox's processes write there),
its processes and threads (``pids.max``), and a CPU weight equal for every sandbox (so that fairness
between students does not rest on the kernel's autogroup setting). The first process of a sandbox
joins its cgroup before it starts bubblewrap (:data:`JOIN`): everything the sandbox starts is inside.
A sandbox the kernel kills for memory is reported ``crashed`` with the reason "memory limit".

Where the cgroups go (:func:`find`): cgroup v2 where it is mounted with the memory and pids
controllers and the grader's cgroup (or, when the grader runs in a leaf, the cgroup above it) gives
them to its children (``cgroup.subtree_control``: a v2 cgroup that holds processes cannot, so a
v2 machine needs that cgroup delegated to the grader, as SETUP.md shows); else v1's memory, pids and
cpu hierarchies, under the grader's own cgroup in each. The grader makes its cgroups as children of
those, removes them when done, and writes to no cgroup it did not make. Where none can be made
(no permission, a container without them), the report's header says so, and only the ``setrlimit``
layer holds: a sandbox's memory summed over its processes, memfd and tmpfs files is then unlimited.
"""

from __future__ import annotations

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
    2**31 elements (02-04, 04-03, 04-06) reserve a 4.3 GB cache (on the CPU, barely touched); torch
    and OpenBLAS start a thread per core."""

    memory: int = 8 << 30  # bytes: the cgroup's RAM and swap, and each process's address space
    processes: int = max(128, 8 * (os.cpu_count() or 1))  # processes and threads
    tmp_size: int = 512 << 20  # bytes of /tmp (and of /dev/shm), and the largest file
    cpu_seconds: int = 1200  # CPU time per process: a backstop, the grader's time limits come first
    open_files: int = 1024

    def rlimits(self, *, gpu: bool, sandboxed: bool) -> dict:
        """The worker's ``setrlimit`` table. A CUDA context reserves address space the size of host and
        GPU memory together (never touched), so with a GPU the memory limit applies to private writable
        memory instead (RLIMIT_DATA)."""
        return {"memory": self.memory, "memory_kind": "data" if gpu else "as", "processes": self.processes,
                "file_size": self.tmp_size, "cpu_seconds": self.cpu_seconds, "open_files": self.open_files,
                "sandboxed": sandboxed}


DEFAULTS = Resources()


@dataclass(frozen=True)
class Place:
    """Where cgroups are made: cgroup v2's one folder, or v1's folder in each controller's hierarchy."""

    version: int
    folders: tuple[str, ...]  # v2: one folder; v1: one per hierarchy (cpu may share one with cpuacct)

    def child(self, name: str, leaf: bool = False) -> Place:
        """A new cgroup below this one (made now: OSError if it cannot be). On v2, one that is not a
        ``leaf`` gives the controllers it has to the cgroups made below it."""
        made = []
        try:
            for folder in self.folders:
                path = Path(folder) / name
                path.mkdir()
                made.append(path)
                if self.version == 2 and not leaf:
                    wanted = _words(path / "cgroup.controllers") & set(CONTROLLERS)
                    (path / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in sorted(wanted)))
        except OSError:
            for path in made:
                _remove_tree(path)
            raise
        return Place(self.version, tuple(map(str, made)))

    def remove(self) -> bool:
        """Remove this cgroup and every cgroup below it, killing what is still inside; False if one stays."""
        return all([_remove_tree(Path(folder)) for folder in self.folders])


class Cgroup:
    """One sandbox's cgroup: made below ``place`` with ``resources``' limits, joined by the sandbox's
    first process (``procs``: the files it writes its pid into), removed by :meth:`remove`."""

    def __init__(self, place: Place, resources: Resources):
        self.place = place.child(f"sandbox-{secrets.token_hex(4)}", leaf=True)
        self.procs = [str(Path(f) / "cgroup.procs") for f in self.place.folders]
        memory = resources.memory
        try:
            for folder in map(Path, self.place.folders):
                if self.place.version == 2:
                    _write_if(folder / "memory.max", memory)
                    _write_if(folder / "memory.swap.max", 0)  # RAM and swap together within memory.max
                    _write_if(folder / "memory.oom.group", 1)  # the whole sandbox is killed together
                    _write_if(folder / "pids.max", resources.processes + PIDS_OVERHEAD)
                    _write_if(folder / "cpu.weight", 100)
                else:
                    _write_if(folder / "memory.limit_in_bytes", memory)
                    _write_if(folder / "memory.memsw.limit_in_bytes", memory)  # RAM and swap together
                    _write_if(folder / "pids.max", resources.processes + PIDS_OVERHEAD)
                    _write_if(folder / "cpu.shares", 1024)
        except OSError:
            self.place.remove()
            raise

    def memory_killed(self) -> bool:
        """Whether the kernel killed a process of this sandbox for going past its memory limit."""
        for folder in map(Path, self.place.folders):
            for name in ("memory.events", "memory.oom_control"):
                counts = _counts(folder / name)
                if counts.get("oom_kill", 0) > 0 or counts.get("oom_group_kill", 0) > 0:
                    return True
        return False

    def remove(self) -> bool:
        return self.place.remove()


def find(resources: Resources = DEFAULTS) -> tuple[Place | None, str]:
    """Where this grader makes its cgroups, tried by making one there with ``resources``' limits;
    and a line for the report's header: how each sandbox's memory is held, or why it is not."""
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
    for folder in (top, top.parent):  # the grader's cgroup, or the one above its leaf
        if _within_mount(folder, mounts["cgroup2"]) and {"memory", "pids"} <= _words(folder / "cgroup.subtree_control"):
            return Place(2, (str(folder),)), ""
    if {"memory", "pids"} <= _words(Path(mounts["cgroup2"][1]) / "cgroup.controllers"):
        return None, (f"the grader's cgroup {own['']} does not give the memory and pids controllers to cgroups "
                      "below it (delegate one to the grader: SETUP.md)")
    return None  # v2 holds no memory controller here: the v1 hierarchies may


def _v1() -> tuple[Place | None, str]:
    mounts, own = _mounts(), _own_cgroups()
    folders = []
    for controller in CONTROLLERS:
        mount = mounts.get(controller)
        if mount is None or controller not in own:
            if controller == "cpu":
                continue  # a CPU weight is a nicety; memory and processes are the limits
            return None, f"no cgroup {controller} controller is mounted"
        folder = _located(mount, own[controller])
        if folder not in folders:
            folders.append(folder)
    return Place(1, tuple(folders)), ""


def _mounts() -> dict[str, tuple[str, str]]:
    """controller (v1) or "cgroup2" -> (the mount's root in the hierarchy, its mount point)."""
    found = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        fields = line.split()
        if " - " not in line:
            continue
        after = line.split(" - ", 1)[1].split()
        if len(after) < 3:
            continue
        root, point = fields[3], fields[4].replace("\\040", " ")
        if after[0] == "cgroup2":
            found.setdefault("cgroup2", (root, point))
        elif after[0] == "cgroup":
            for option in after[2].split(","):
                if option in CONTROLLERS:
                    found.setdefault(option, (root, point))
    return found


def _own_cgroups() -> dict[str, str]:
    """controller (v1), or "" (v2) -> the grader's cgroup, as /proc/self/cgroup names it."""
    own = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return own
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(",") if parts[1] else [""]:
                own[controller] = parts[2]
    return own


def _located(mount: tuple[str, str], cgroup: str) -> str:
    """The folder of ``cgroup`` under the mount (whose root may be a cgroup below the hierarchy's top)."""
    root, point = mount
    rel = os.path.relpath(cgroup, root) if cgroup.startswith(root) else cgroup.lstrip("/")
    return os.path.normpath(os.path.join(point, "" if rel == "." else rel))


def _within_mount(folder: Path, mount: tuple[str, str]) -> bool:
    return folder == Path(mount[1]) or Path(mount[1]) in folder.parents


def _words(path: Path) -> set[str]:
    try:
        return set(path.read_text().split())
    except OSError:
        return set()


def _counts(path: Path) -> dict[str, int]:
    try:
        return {k: int(v) for k, v in (line.split() for line in path.read_text().splitlines()) if v.isdigit()}
    except (OSError, ValueError):
        return {}


def _write_if(path: Path, value: int) -> None:
    """Write a limit, where this kernel has the file (swap accounting, a CPU controller may be off)."""
    if path.exists() and value is not None:
        path.write_text(f"{value}\n")


def _remove_tree(folder: Path, wait: float = 10.0) -> bool:
    """rmdir ``folder`` and every cgroup below it, deepest first, once their processes are gone (what is
    still inside after half a second, the sandbox's own processes, is killed)."""
    if not folder.is_dir():
        return True
    for child in sorted((p for p in folder.iterdir() if p.is_dir()), reverse=True):
        _remove_tree(child, wait)
    start = time.monotonic()
    while pids := [int(p) for p in _words(folder / "cgroup.procs") if p.isdigit()]:
        if time.monotonic() - start > 0.5:
            if (folder / "cgroup.kill").exists():
                _write_if(folder / "cgroup.kill", 1)
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        if time.monotonic() - start > wait:
            return False
        time.sleep(0.05)
    try:
        folder.rmdir()
    except OSError:
        return False
    return True
