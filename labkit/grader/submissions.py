"""A class's folders as the grader reads them: the students, each under a name unique once escaped,
and one student's lab folder copied into its run folder through file descriptors, no component
followed if it is a link, within caps checked before a byte is read. README.md: "Submissions as
files"."""

from __future__ import annotations

import errno
import os
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path

MAX_FILE_BYTES = 2_000_000  # a larger file in a submission is left out: neither copied nor counted
MAX_ENTRIES = 1_000  # files and folders in one student's lab folder (the largest lab folder has 55)
MAX_BYTES = 16 << 20  # bytes of the files copied from one student's lab folder (the largest lab folder: 1.5 MB)
MAX_DEPTH = 16  # folders below the lab folder
LEFT_OUT = "__pycache__"  # never copied, never looked into: the sandbox's Python writes its own

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC  # a FIFO must not block the open
_CHUNK = 1 << 16


class Refused(Exception):
    """A submission the grader will not read; the message says why, for the student's verdict."""


class Missing(Exception):
    """No such folder or file."""


def escape(text) -> str:
    """``text`` as printable data, never refused: each character that is not printable (control and
    format characters, bidirectional overrides, line separators, lone surrogates) written as an
    escape; tab and newline kept. A byte of a name that is not UTF-8 (a surrogate from ``os.fsdecode``)
    reads as ``\\xff``."""
    text = str(text)
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable() or ch in "\t\n":
            out.append(ch)
        elif 0xDC80 <= ord(ch) <= 0xDCFF:
            out.append(f"\\x{ord(ch) - 0xDC00:02x}")
        else:
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}" if ord(ch) < 0x10000
                       else f"\\U{ord(ch):08x}")
    return "".join(out)


def identity(name: str) -> str:
    """What two folder names must not share: the name without what does not print, compatibility-
    normalised (NFKC) and case-folded, so that "alice", "Alice", "alice\\x07", "ａｌｉｃｅ" and "alice"
    with a byte that is not UTF-8 all read as one student."""
    visible = "".join(ch for ch in name if ch.isprintable() and not ch.isspace())
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", visible).casefold())


@dataclass(frozen=True, order=True)
class Student:
    name: str  # as the report shows it (escaped), unique in the class
    folder: str  # the folder's name as the file system has it (bytes that are not UTF-8 as surrogates)


def copy_lab_folder(root: Path, student: Student, lab_folder: str, dest: Path) -> list[str]:
    """Copy ``root/<student's folder>/<lab_folder>`` into the new folder ``dest``; the relative paths
    of the files copied. Every component below ``root`` is opened relative to its parent's file
    descriptor without following a link, so a link that appears after the scan is refused too.

    Missing when a folder of the path does not exist. Refused for a link anywhere below ``root``, a
    file that is not a regular file or has more than one name (a hard link), folders deeper than
    MAX_DEPTH, more than MAX_ENTRIES entries or MAX_BYTES bytes (counted by ``stat`` before anything
    is read), or a folder that changed between the count and the copy."""
    parts = [student.folder, *lab_folder.split("/")]
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the instructor's path: trusted
    try:
        for i, part in enumerate(parts):
            parent, fd = fd, _open_dir(fd, part, "/".join(parts[: i + 1]))
            os.close(parent)
        shown = "/".join(parts)
        listed = _scan(fd, shown)
        dest.mkdir(mode=0o755)
        out = os.open(dest, _DIR)
        try:
            copied: list[str] = []
            _copy(fd, out, (), listed, copied, [0], shown)
            return copied
        finally:
            os.close(out)
    finally:
        os.close(fd)


def _open_dir(parent: int, name: str, shown: str) -> int:
    try:
        fd = os.open(name, _DIR, dir_fd=parent)
    except FileNotFoundError:
        raise Missing(shown) from None
    except OSError as err:
        if err.errno in (errno.ENOTDIR, errno.ELOOP):
            try:
                link = stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
            except OSError:
                link = False
            raise Refused(f"{escape(shown)} is {'a symbolic link: the grader follows none' if link else 'not a folder'}"
                          ) from None
        raise Refused(f"{escape(shown)} cannot be read ({err.strerror})") from None
    return fd


def _scan(fd: int, shown: str) -> dict[tuple[str, ...], int]:
    """Pass one, ``stat`` only: path below the lab folder -> size (-1 for a folder) of what will be
    copied; Refused at the first entry or cap that is refused. Stops counting at the first cap passed."""
    listed: dict[tuple[str, ...], int] = {}
    total, seen = [0], [0]

    def walk(dir_fd: int, rel: tuple[str, ...]) -> None:
        with os.scandir(dir_fd) as entries:
            for entry in entries:
                if entry.name == LEFT_OUT:
                    continue
                path = (*rel, entry.name)
                where = escape("/".join((shown, *path)))
                seen[0] += 1
                if seen[0] > MAX_ENTRIES:
                    raise Refused(f"{escape(shown)} holds more than {MAX_ENTRIES:,} files and folders (the grader "
                                  "counts them before reading any): hand in the lab's files only")
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    raise Refused(f"{where} is a symbolic link: the grader follows none")
                if stat.S_ISDIR(st.st_mode):
                    if len(path) > MAX_DEPTH:
                        raise Refused(f"{where}: folders nest more than {MAX_DEPTH} deep")
                    listed[path] = -1
                    sub = _open_dir(dir_fd, entry.name, "/".join((shown, *path)))
                    try:
                        walk(sub, path)
                    finally:
                        os.close(sub)
                elif not stat.S_ISREG(st.st_mode):
                    raise Refused(f"{where} is not a regular file (a FIFO, socket or device)")
                elif st.st_nlink > 1:
                    raise Refused(f"{where} has {st.st_nlink} names (a hard link): hand in a plain copy")
                elif st.st_size <= MAX_FILE_BYTES:
                    listed[path] = st.st_size
                    total[0] += st.st_size
                    if total[0] > MAX_BYTES:
                        raise Refused(f"{escape(shown)} holds more than {MAX_BYTES >> 20} MiB in files (the grader "
                                      "counts them before reading any): hand in the lab's files only")

    walk(fd, ())
    return listed


def _copy(src: int, dest: int, rel: tuple[str, ...], listed: dict, copied: list[str], total: list[int],
          shown: str) -> None:
    """Pass two: what pass one listed below ``rel``, copied from ``src`` into ``dest`` (folder descriptors),
    each entry opened without following a link and checked again on its descriptor; at most MAX_BYTES
    in all, whatever the files have grown to since."""
    names = sorted({path[len(rel)] for path in listed if len(path) > len(rel) and path[: len(rel)] == rel})
    for name in names:
        path = (*rel, name)
        where = escape("/".join((shown, *path)))
        if listed.get(path) == -1:
            try:
                sub = _open_dir(src, name, "/".join((shown, *path)))
            except Missing:
                continue  # deleted since the scan: not handed in
            try:
                os.mkdir(name, 0o755, dir_fd=dest)
                out = os.open(name, _DIR, dir_fd=dest)
                try:
                    _copy(sub, out, path, listed, copied, total, shown)
                finally:
                    os.close(out)
            finally:
                os.close(sub)
            continue
        try:
            fd = os.open(name, _FILE, dir_fd=src)
        except FileNotFoundError:
            continue  # deleted since the scan: not handed in
        except OSError as err:
            raise Refused(f"{where} changed while it was read ({err.strerror})") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
                raise Refused(f"{where} changed while it was read (no longer one regular file)")
            out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                          dir_fd=dest)
            try:
                size = 0
                while chunk := os.read(fd, _CHUNK):
                    size, total[0] = size + len(chunk), total[0] + len(chunk)
                    if size > MAX_FILE_BYTES or total[0] > MAX_BYTES:
                        raise Refused(f"{where} grew while it was read")
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(out, view):]
            finally:
                os.close(out)
        finally:
            os.close(fd)
        copied.append("/".join(path))
