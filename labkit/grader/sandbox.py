"""The operating-system sandbox around every process that runs a student's code (Linux, bubblewrap).

Inside, a process sees:

- read-only: the system's programs and libraries (``/usr``, ``/lib``...), the Python installation
  and its site-packages (found from the running interpreter), ``/etc/ld.so.cache``;
- read-only at ``/grader``: a *staged copy* of the few labkit files the worker needs (below),
  not the repository; at ``/submission``: that student's own files, nothing else;
- its own size-limited ``/tmp`` (the working directory) and ``/dev/shm``, a minimal ``/dev``, a
  ``/proc`` of its own PID namespace;
- no network (a network namespace with only loopback), no other process, no IPC, its own
  hostname, an unprivileged uid, an environment of our choosing; it cannot create user
  namespaces (``--disable-userns``), and dies with the grader (``--die-with-parent``).

Anything sensitive that a read-only bind happens to contain (the repository, the submissions,
the grader's temporary folders, the home folder) is hidden under an empty read-only tmpfs.
The worker sets the resource limits (:func:`labkit.grader.worker.apply_limits`) before the
student's file is imported.

Run as root, bubblewrap would map the sandbox's user to root outside, for which the kernel does
not enforce the process limit; so a first bubblewrap (root, mounts only) builds the view, and a
second one, started as ``nobody``, makes the user namespace: processes inside run as nobody.
With a CUDA GPU the NVIDIA device nodes, ``/sys`` and the driver's libraries are added.
"""

from __future__ import annotations

import glob
import json
import os
import select
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

LABKIT = Path(__file__).resolve().parents[1]
NOBODY = 65534  # who the sandbox runs as when the grader runs as root
# The interpreter, by a path that needs no folder outside the sandbox ("venv/../venv/bin/python" would);
# symbolic links are kept, so that a virtual environment still finds its pyvenv.cfg.
PYTHON = os.path.abspath(sys.executable)
INSIDE_UID = 1000
SCRATCH = (Path("/tmp"), Path("/dev/shm"))  # private and writable in the sandbox, hiding the host's
INSTALL = ("labs grade runs each student's code in a bubblewrap sandbox, and `bwrap` is not installed: "
           "sudo apt-get install bubblewrap (Debian, Ubuntu), sudo dnf install bubblewrap (Fedora), "
           "sudo pacman -S bubblewrap (Arch). No bubblewrap on macOS or Windows: grade in a Linux VM or "
           "container (SETUP.md), or pass --no-sandbox to grade without one, trusting every submission.")
# The staged labkit: path under /grader -> the checkout's file, or the text to write.
_INIT = ('"""labkit as the grading sandbox holds it: the worker\'s files, the Triton switch and the earlier '
         'labs\' references."""\n'
         "from labkit.grader.references import load_reference  # noqa: F401  (labs that build on earlier ones)\n"
         "from labkit.testing import triton_env  # noqa: F401  (starters do `from labkit import triton_env`)\n")
STAGED = {
    "labkit/__init__.py": _INIT,
    "labkit/grader/__init__.py": "",
    "labkit/grader/wire.py": LABKIT / "grader" / "wire.py",
    "labkit/grader/values.py": LABKIT / "grader" / "values.py",
    "labkit/grader/objects.py": LABKIT / "grader" / "objects.py",
    "labkit/grader/worker.py": LABKIT / "grader" / "worker.py",
    "labkit/grader/references.py": LABKIT / "grader" / "references.py",
    "labkit/testing/__init__.py": "",
    "labkit/testing/triton_env.py": LABKIT / "testing" / "triton_env.py",
    "labkit/testing/child.py": LABKIT / "testing" / "child.py",
}


class SandboxError(Exception):
    """The sandbox cannot be built or started on this machine."""


@dataclass(frozen=True)
class Resources:
    """Limits for every process in one sandbox (0: none). Defaults fit every lab's tests: the checks
    of a cache past 2**31 elements (02-04, 04-03, 04-06) reserve a 4.3 GB cache (on the CPU, barely
    touched); torch and OpenBLAS start a thread per core."""

    memory: int = 8 << 30  # bytes of address space (of private writable memory with a GPU)
    processes: int = max(128, 8 * (os.cpu_count() or 1))  # processes and threads
    tmp_size: int = 512 << 20  # bytes of /tmp (and of /dev/shm), and the largest file
    cpu_seconds: int = 1200  # CPU time per process: a backstop, the grader's time limits come first
    open_files: int = 1024

    def limits(self, *, gpu: bool, sandboxed: bool) -> dict:
        # A CUDA context reserves address space the size of host and GPU memory together (tens to
        # hundreds of GB, never touched), so RLIMIT_AS would stop CUDA from starting: with a GPU the
        # memory limit applies to private writable memory instead (RLIMIT_DATA).
        return {"memory": self.memory, "memory_kind": "data" if gpu else "as", "processes": self.processes,
                "file_size": self.tmp_size, "cpu_seconds": self.cpu_seconds, "open_files": self.open_files,
                "sandboxed": sandboxed}


def bwrap() -> str | None:
    return shutil.which("bwrap")


def check(resources: Resources = Resources()) -> None:
    """SandboxError unless a sandbox starts here (bwrap installed, user namespaces allowed)."""
    if bwrap() is None:
        raise SandboxError(INSTALL)
    with Sandbox(None, resources) as box:
        proc = box.popen(["script", "/grader/labkit/grader/__init__.py"], stderr=subprocess.PIPE)
        _, err = proc.communicate(timeout=120)
    if proc.returncode != 0:
        raise SandboxError(f"bwrap could not start a sandbox: {err.decode(errors='replace').strip()[-500:]}\n"
                           "User namespaces may be disabled: sysctl kernel.unprivileged_userns_clone=1 (Debian), "
                           "or on Ubuntu 24.04 and later allow bwrap in AppArmor (SETUP.md).")


class Sandbox:
    """One student's sandbox: the staged labkit, their files, and how to start processes in it.

    ``student_dir``: the folder of the student's files (read-only at /submission). ``hide``:
    host folders that must stay invisible inside (the repository, home and temporary folder
    always). ``references``: earlier labs' reference solutions the lab loads (lab id -> file,
    :func:`labkit.grader.references.needed`). ``enabled=False`` (``labs grade --no-sandbox``)
    starts the same processes without bubblewrap: limits and a scratch folder, no isolation."""

    def __init__(self, student_dir: Path | None, resources: Resources = Resources(), *, gpu: bool = False,
                 enabled: bool = True, hide: tuple = (), references: dict | None = None):
        self.student_dir = Path(student_dir) if student_dir else None
        self.resources, self.gpu, self.enabled = resources, gpu, enabled
        from labkit.course.registry import ROOT

        self.hide = [Path(p).resolve() for p in (ROOT, Path.home(), tempfile.gettempdir(), *hide)]
        self.staging = Path(tempfile.mkdtemp(prefix="labs-sandbox-"))
        self._scratch: list[Path] = []
        staged = {**STAGED, "scripts/.keep": "", "references/.keep": ""}
        for lab_id, file in (references or {}).items():  # a solution, and the given modules next to it
            staged[f"references/{lab_id}/solution.py"] = Path(file)
            staged.update({f"references/{lab_id}/{given.name}": given for given in Path(file).parent.glob("_*.py")})
        for rel, source in staged.items():
            path = self.staging / "grader" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(source.read_bytes() if isinstance(source, Path) else source.encode())
        _open_up(self.staging / "grader")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        for path in [self.staging, *self._scratch]:
            shutil.rmtree(path, ignore_errors=True)

    # -- paths as the sandboxed process sees them
    @property
    def grader_dir(self) -> str:
        return "/grader" if self.enabled else str(self.staging / "grader")

    def inside(self, student_file: Path) -> str:
        """The path of one of the student's files, as a process in the sandbox sees it."""
        rel = Path(student_file).resolve().relative_to(self.student_dir.resolve())
        return str(Path("/submission" if self.enabled else self.student_dir) / rel)

    def add_script(self, script: Path) -> str:
        """Stage a lab's helper script (a trusted file of the lab folder); its path inside."""
        dest = self.staging / "grader" / "scripts" / Path(script).name
        shutil.copyfile(script, dest)
        dest.chmod(0o644)
        return f"{self.grader_dir}/scripts/{dest.name}"

    # -- starting a process
    def popen(self, args: list[str], *, pass_fds: tuple = (), stdout=subprocess.DEVNULL,
              stderr=subprocess.DEVNULL, env: dict | None = None) -> subprocess.Popen:
        """``python -m labkit.grader.worker <args>`` in the sandbox (the worker's first argument is
        its mode; the limits are inserted after it)."""
        limits = self.resources.limits(gpu=self.gpu, sandboxed=self.enabled)
        command = [PYTHON, "-m", "labkit.grader.worker", args[0], json.dumps(limits), *args[1:]]
        if self.enabled:
            tmp = "/tmp"
        else:
            tmp = tempfile.mkdtemp(prefix="labs-scratch-")
            self._scratch.append(Path(tmp))
        inner_env = self._environment(tmp, env or {})
        if not self.enabled:
            return subprocess.Popen(command, cwd=tmp, env=inner_env, stdin=subprocess.DEVNULL, stdout=stdout,
                                    stderr=stderr, pass_fds=pass_fds, start_new_session=True)
        # bwrap reads its options from a pipe (--args), and gets a bare environment: the sandbox's
        # /proc/1/cmdline and /proc/1/environ show neither the host's paths nor the grader's variables.
        options, rest = self._wrap(command, inner_env)
        read_fd, write_fd = os.pipe()
        try:
            data = b"".join(arg.encode() + b"\0" for arg in options)
            if len(data) >= 60_000:  # more than a pipe holds before bwrap reads it
                raise SandboxError(f"bwrap's options take {len(data)} bytes")
            os.write(write_fd, data)
            os.close(write_fd)
            return subprocess.Popen([bwrap(), "--args", str(read_fd), *rest], cwd="/", env={"PATH": "/usr/bin:/bin"},
                                    stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                    pass_fds=(*pass_fds, read_fd), start_new_session=True)
        finally:
            os.close(read_fd)

    def run(self, args: list[str], *, timeout: float, env: dict | None = None, cap: int = 64 << 20):
        """Run ``args`` (as :meth:`popen`) to the end or to ``timeout`` seconds: ``(returncode, or None
        when it timed out; stdout; stderr)``, each output cut at ``cap`` bytes."""
        proc = self.popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        out, err = bytearray(), bytearray()
        outputs = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
        deadline = time.monotonic() + timeout
        code = None
        try:
            while outputs and time.monotonic() < deadline:
                ready, _, _ = select.select(list(outputs), [], [], max(0.0, deadline - time.monotonic()))
                for fd in ready:
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        del outputs[fd]
                    else:  # keep reading past the cap, so that the child never blocks on a full pipe
                        outputs[fd] += chunk[: max(0, cap - len(outputs[fd]))]
            if not outputs:
                code = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        finally:
            stop(proc)
            proc.stdout.close()
            proc.stderr.close()
        return code, bytes(out), bytes(err)

    def _environment(self, tmp: str, extra: dict) -> dict:
        path = [os.path.dirname(PYTHON), "/usr/local/bin", "/usr/bin", "/bin"]  # the venv's tools (ninja) first
        if self.gpu and os.environ.get("CUDA_HOME"):
            path.append(os.path.join(os.environ["CUDA_HOME"], "bin"))  # nvcc, for lab 04-05's CUDA exercise
        env = {"PATH": os.pathsep.join(path), "HOME": tmp, "TMPDIR": tmp, "USER": "student",
               "LOGNAME": "student", "LANG": "C.UTF-8", "PYTHONPATH": self.grader_dir, "PYTHONDONTWRITEBYTECODE": "1",
               "XDG_CACHE_HOME": f"{tmp}/.cache", "TRITON_CACHE_DIR": f"{tmp}/.triton",
               "TORCH_EXTENSIONS_DIR": f"{tmp}/torch_extensions", "MPLCONFIGDIR": f"{tmp}/.matplotlib",
               # One compute thread (torch's and BLAS's): students are graded in parallel (--jobs), and on a
               # shared core a second thread of a small model only spins (99-01: 10x the CPU time).
               "OMP_NUM_THREADS": "1"}
        if self.student_dir is not None:
            env["LABS_IMPL_FILE"] = self.inside(self.student_dir / "starter.py")
        if self.gpu:
            env.update({k: os.environ[k] for k in ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "CUDA_HOME",
                                                   "TRITON_LIBCUDA_PATH") if k in os.environ})
            env.setdefault("TRITON_LIBCUDA_PATH", _libcuda_dir() or "")
        env.update(extra)
        return {k: v for k, v in env.items() if v}

    def _wrap(self, command: list[str], env: dict) -> tuple[list[str], list[str]]:
        """The bubblewrap command line around ``command``: (bwrap's options, the rest from "--" on)."""
        jail = ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
                "--uid", str(INSIDE_UID), "--gid", str(INSIDE_UID), "--hostname", "sandbox"]
        # The private /tmp and /dev/shm come before the view: a Python installation that lies in them (a
        # virtual environment made in /tmp) is bound, and masked where it must be, on top of them.
        scratch = ["--proc", "/proc", "--dev", "/dev", *self._gpu_devices(),
                   "--perms", "1777", "--size", str(self.resources.tmp_size), "--tmpfs", "/tmp",
                   "--perms", "1777", "--size", str(self.resources.tmp_size), "--tmpfs", "/dev/shm"]
        # bwrap's root and /dev are tmpfs of the sandbox's user with no size limit: no writes there
        tail = ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp", "--clearenv"]
        for key, value in env.items():
            tail += ["--setenv", key, value]
        if os.geteuid() != 0:
            return [*jail, *scratch, *self._view(), *tail], ["--", *command]
        # As root: the first bwrap builds the view with root's access to the files; the second,
        # started as nobody, makes the user namespace (see the module's docstring). Its own /tmp would
        # hide an installation in the first one's: bound again from there, masks included.
        outer = ["--die-with-parent", "--unshare-pid", "--cap-add", "CAP_SYS_ADMIN", "--cap-add",
                 "CAP_SETUID", "--cap-add", "CAP_SETGID", "--dev", "/dev", *self._gpu_devices(),
                 "--dir", "/proc", "--tmpfs", "/tmp", *self._view()]
        inner = ["--ro-bind", "/", "/", *jail, *scratch, *_python_under_scratch(), *tail]
        return outer, ["--", PYTHON, "-S", "-c", _DROP, str(NOBODY), bwrap(), *inner, "--", *command]

    def _view(self) -> list[str]:
        """Mount operations that make the sandbox's file system: binds, then masks, parents opened."""
        binds = python_dirs() + (gpu_dirs() if self.gpu else [])
        clash = [b for b in binds if b in self.hide]
        if clash:
            raise SandboxError(f"{clash[0]} is needed inside the sandbox (the Python installation) but must be "
                               "hidden from it (the repository, the home or the temporary folder)")
        hidden = [h for h in self.hide if h.exists() and any(_within(h, b) for b in binds)]  # nothing to mask else
        ops = [(Path(d), ["--ro-bind", d, d]) for d in map(str, binds)]
        ops += [(h, ["--size", "4096", "--tmpfs", str(h), "--remount-ro", str(h)]) for h in hidden]
        ops.sort(key=lambda op: len(op[0].parts))  # a mask after the bind it sits in, before binds inside it
        args = []
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.islink(top):
                args += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                args += ["--ro-bind", top, top]
        for _, op in ops:
            args += op
        if os.path.isfile("/etc/ld.so.cache"):
            args += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
        args += ["--ro-bind", str(self.staging / "grader"), "/grader"]
        if self.student_dir is not None:
            args += ["--ro-bind", str(self.student_dir), "/submission"]
        if self.gpu and os.path.isdir("/sys"):
            args += ["--ro-bind", "/sys", "/sys"]
        # bwrap creates the parents of mount points with mode 0700; make them traversable by the
        # sandbox's user (not /tmp and /dev/shm themselves: they keep their 1777).
        parents = {p for dest, _ in ops for p in dest.parents
                   if p not in (Path("/"), *SCRATCH) and not any(_within(p, b) for b in binds)}
        for parent in sorted(parents, key=lambda p: len(p.parts)):
            args += ["--chmod", "0755", str(parent)]
        return args

    def _gpu_devices(self) -> list[str]:
        if not self.gpu:
            return []
        return [arg for dev in sorted(glob.glob("/dev/nvidia*")) for arg in ("--dev-bind", dev, dev)]


# Run by the first (root) bubblewrap: a /proc of its own PID namespace with nothing mounted over it
# (the kernel lets an unprivileged user namespace mount /proc only then), then drop to nobody.
_DROP = """
import ctypes, os, sys
if ctypes.CDLL(None, use_errno=True).mount(b"proc", b"/proc", b"proc", 14, None) != 0:
    raise OSError(ctypes.get_errno(), "mounting /proc")
uid = int(sys.argv[1]); os.setgroups([]); os.setgid(uid); os.setuid(uid)
os.execv(sys.argv[2], sys.argv[2:])
"""


def stop(proc: subprocess.Popen) -> None:
    """Kill ``proc`` and its process group; bubblewrap takes everything in the sandbox with it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def python_dirs() -> list[Path]:
    """Folders the interpreter needs, from the running one: /usr, its prefixes, its site-packages."""
    dirs = [Path("/usr"), Path(sys.executable).resolve().parent]
    dirs += [Path(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}]
    dirs += [Path(p) for p in site.getsitepackages()]
    if site.ENABLE_USER_SITE and site.getusersitepackages() in sys.path:
        dirs.append(Path(site.getusersitepackages()))
    found = []
    for d in dirs:
        d = d.resolve()
        if d.is_dir() and d not in found and d != Path("/"):
            found.append(d)
    return sorted(found)


def _python_under_scratch() -> list[str]:
    """Binds of the interpreter's folders that lie in /tmp or /dev/shm (a virtual environment made
    there), made again after the sandbox's private /tmp and /dev/shm would hide them."""
    args = []
    for d in python_dirs():
        if any(_within(d, s) and d != s for s in SCRATCH):
            args += ["--ro-bind", str(d), str(d)]
    return args


def gpu_dirs() -> list[Path]:
    """Driver and CUDA folders outside /usr: LD_LIBRARY_PATH, libcuda's folder, CUDA_HOME."""
    dirs = os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep)
    dirs += [_libcuda_dir() or "", os.environ.get("CUDA_HOME", "")]
    return sorted({Path(d).resolve() for d in dirs if d and os.path.isdir(d) and Path(d).resolve() != Path("/")})


def _libcuda_dir() -> str | None:
    try:
        out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    paths = [line.split("=>")[-1].strip() for line in out.splitlines() if "libcuda.so.1" in line]
    return os.path.dirname(paths[0]) if paths else None


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _open_up(folder: Path) -> None:
    """Make the staged tree readable by the sandbox's user (nobody, when the grader is root)."""
    folder.chmod(0o755)
    for path in folder.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
