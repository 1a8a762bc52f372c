"""The bubblewrap sandbox around every process that runs a student's code (Linux): what it sees,
how it starts (twice nested when the grader is root), how it is stopped. README.md has the design."""

from __future__ import annotations

import contextlib
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
from pathlib import Path

from labkit.course import declaration
from labkit.grader import limits
from labkit.grader.limits import DEFAULTS, Resources

AUTO = "auto"  # the cgroups of a Sandbox: found here (labkit.grader.limits.find)
LABKIT = Path(__file__).resolve().parents[1]
NOBODY = 65534  # who the sandbox runs as when the grader runs as root
# The interpreter, by a path that needs no folder outside the sandbox ("venv/../venv/bin/python" would);
# symbolic links are kept, so that a virtual environment still finds its pyvenv.cfg.
PYTHON = os.path.abspath(sys.executable)
INSIDE_UID = 1000
INSTALL = ("labs grade runs each student's code in a bubblewrap sandbox, and `bwrap` is not installed: "
           "sudo apt-get install bubblewrap (Debian, Ubuntu), sudo dnf install bubblewrap (Fedora), "
           "sudo pacman -S bubblewrap (Arch). No bubblewrap on macOS or Windows: grade in a Linux VM or "
           "container (SETUP.md), or pass --no-sandbox to grade without one, trusting every submission.")
# The staged labkit: the worker's own modules, and every module that gives a name a lab's files may import
# (declaration.SANDBOX_LABKIT; each lab's lab.toml says which it imports), each staged whole.
WORKER = ("grader/wire", "grader/values", "grader/containers", "grader/handles", "grader/snapshots", "grader/lending",
          "grader/worker", "testing/loader", "testing/triton_env")


def _init() -> str:
    """The staged ``labkit/__init__.py``: the names a lab's file takes with ``from labkit import NAME``."""
    lines = ['"""labkit as the grading sandbox holds it: the worker\'s files and what the labs\' files import."""']
    for name, module in declaration.SANDBOX_LABKIT.items():
        if "." not in name:
            parent, _, last = module.rpartition("/")  # a module ("testing/triton_env"), or the one holding the name
            source = (parent if last == name else module).replace("/", ".")
            lines.append(f"from labkit.{source} import {name}  # noqa: F401")
    return "\n".join(lines) + "\n"


_SEAM = ('"""labkit.testing.seam as the grading sandbox has it: the implementation under test is the student\'s '
         'file."""\nimport os\nfrom pathlib import Path\n\n\nclass _StudentFile:\n'
         '    def lab_module(self, lab_dir):\n        from labkit.grader.worker import import_file\n\n'
         '        return import_file(Path(os.environ["LABS_IMPL_FILE"]))\n\n\ngrader = _StudentFile()\n')
# path under /grader -> the checkout's file, or the text to write
STAGED = {"labkit/__init__.py": _init(), "labkit/grader/__init__.py": "", "labkit/testing/__init__.py": "",
          "labkit/testing/seam.py": _SEAM,
          **{f"labkit/{module}.py": LABKIT / f"{module}.py"
             for module in sorted({*WORKER, *declaration.SANDBOX_LABKIT.values()})}}


class SandboxError(Exception):
    """The sandbox cannot be built or started on this machine."""


def bwrap() -> str | None:
    return shutil.which("bwrap")


def check(resources: Resources = DEFAULTS, cgroups=AUTO) -> None:
    """SandboxError unless a sandbox starts here (bwrap installed, user namespaces allowed, its cgroup joined)."""
    if bwrap() is None:
        raise SandboxError(INSTALL)
    if os.geteuid() == 0:  # the sandbox drops to nobody, who must enter the interpreter's folders
        binds = python_dirs()  # each shown at its own path; the folders above it are made open in the sandbox
        for folder in binds:
            closed = next((p for p in (folder, *folder.parents) if any(_within(p, b) for b in binds)
                           and not os.stat(p).st_mode & 0o001), None)
            if closed is not None:
                raise SandboxError(f"the sandbox runs as nobody, who cannot enter {closed} (mode "
                                   f"{os.stat(closed).st_mode & 0o777:o}), a folder of the Python environment: "
                                   f"chmod o+x {closed} (a virtual environment in a folder made by mktemp is "
                                   "0700), or make the environment elsewhere")
    with Sandbox(None, resources, cgroups=cgroups) as box:
        proc = box.popen(["script", "/grader/labkit/grader/__init__.py"], stderr=subprocess.PIPE)
        _, err = proc.communicate(timeout=120)
    if proc.returncode != 0:
        raise SandboxError(f"bwrap could not start a sandbox: {err.decode(errors='replace').strip()[-500:]}\n"
                           "User namespaces may be disabled: sysctl kernel.unprivileged_userns_clone=1 (Debian), "
                           "or on Ubuntu 24.04 and later allow bwrap in AppArmor (SETUP.md).")


class Sandbox:
    """One student's sandbox: ``student_dir`` at /submission, the staged labkit, ``references`` (lab id ->
    file); ``hide``: host folders kept invisible (the repository, home, temporary folder always).
    ``enabled=False`` (``--no-sandbox``): the same processes without bubblewrap, no isolation."""

    def __init__(self, student_dir: Path | None, resources: Resources = DEFAULTS, *, gpu: bool = False,
                 enabled: bool = True, hide: tuple = (), references: dict | None = None, given: tuple = (),
                 cgroups=AUTO):
        self.student_dir = Path(student_dir) if student_dir else None
        self.resources, self.gpu, self.enabled = resources, gpu, enabled
        # Where each process's cgroup is made (labkit.grader.limits.Place), or None: no cgroups.
        self.cgroups = limits.find(resources)[0] if cgroups == AUTO else cgroups
        from labkit.course.registry import ROOT

        self.hide = [Path(p).resolve() for p in (ROOT, Path.home(), tempfile.gettempdir(), *hide)]
        self.staging = Path(tempfile.mkdtemp(prefix="labs-sandbox-"))
        self._scratch: list[Path] = []
        staged = {**STAGED, "scripts/.keep": "", "references/.keep": "", "given/.keep": ""}
        # The graded lab's given modules, from the course: the worker imports them before any file of
        # the student's folder of the same name (a student hands in starter.py, not the course's code).
        staged.update({f"given/{Path(file).name}": Path(file) for file in given})
        for lab_id, file in (references or {}).items():  # a solution, and the given modules next to it
            staged[f"references/{lab_id}/solution.py"] = Path(file)
            staged.update({f"references/{lab_id}/{given.name}": given
                           for given in declaration.read(Path(file).parent).given_files})
        for rel, source in staged.items():
            path = self.staging / "grader" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(source.read_bytes() if isinstance(source, Path) else source.encode())
        open_up(self.staging / "grader")

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
        rlimits = self.resources.rlimits(gpu=self.gpu, sandboxed=self.enabled)
        command = [PYTHON, "-m", "labkit.grader.worker", args[0], json.dumps(rlimits), *args[1:]]
        cgroup = limits.Cgroup(self.cgroups, self.resources) if self.cgroups is not None else None
        join = ["/bin/sh", "-c", limits.JOIN, "sh", str(len(cgroup.procs)), *cgroup.procs] if cgroup else []
        try:
            proc = self._start(command, join, pass_fds, stdout, stderr, env)
        except BaseException:
            if cgroup is not None:
                cgroup.remove()
            raise
        proc.cgroup = cgroup
        return proc

    def _start(self, command, join, pass_fds, stdout, stderr, env) -> subprocess.Popen:
        if self.enabled:
            tmp = "/tmp"
        else:
            tmp = tempfile.mkdtemp(prefix="labs-scratch-")
            self._scratch.append(Path(tmp))
        inner_env = self._environment(tmp, env or {})
        if not self.enabled:
            return subprocess.Popen([*join, *command], cwd=tmp, env=inner_env, stdin=subprocess.DEVNULL, stdout=stdout,
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
            return subprocess.Popen([*join, bwrap(), "--args", str(read_fd), *rest], cwd="/",
                                    env={"PATH": "/usr/bin:/bin"},
                                    stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                    pass_fds=(*pass_fds, read_fd), start_new_session=True)
        finally:
            os.close(read_fd)

    def run(self, args: list[str], *, timeout: float, env: dict | None = None, cap: int = 64 << 20):
        """Run ``args`` (as :meth:`popen`) to the end or to ``timeout`` seconds: ``(returncode, or None
        when it timed out; stdout; stderr; whether the kernel killed a process of it for memory)``, each
        output cut at ``cap`` bytes. The last is the grader's to know, from the cgroup: the reason it adds
        to stderr for whoever reads that, a process in the sandbox can write too."""
        proc = self.popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        out, err = bytearray(), bytearray()
        outputs = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
        deadline = time.monotonic() + timeout
        code = None
        try:
            while outputs and time.monotonic() < deadline and not memory_killed(proc):
                ready, _, _ = select.select(list(outputs), [], [], min(0.5, max(0.0, deadline - time.monotonic())))
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
            killed = memory_killed(proc)
            stop(proc)
            proc.stdout.close()
            proc.stderr.close()
        if killed:  # a process of it was: the sandbox as a whole failed, whatever its first process said
            code = -signal.SIGKILL if code in (0, None) else code
            err += f"\n{memory_limit(self.resources)}".encode()
        return code, bytes(out), bytes(err), killed

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
                "--uid", str(INSIDE_UID), "--gid", str(INSIDE_UID), "--hostname", "sandbox",
                "--proc", "/proc", "--dev", "/dev", *self._gpu_devices(),
                "--perms", "1777", "--size", str(self.resources.tmp_size), "--tmpfs", "/tmp",
                "--perms", "1777", "--size", str(self.resources.tmp_size), "--tmpfs", "/dev/shm",
                *self._under_scratch(),
                # bwrap's root and /dev are tmpfs of the sandbox's user with no size limit: no writes there
                "--remount-ro", "/dev", "--remount-ro", "/",
                "--chdir", "/tmp", "--clearenv"]
        for key, value in env.items():
            jail += ["--setenv", key, value]
        if os.geteuid() != 0:
            return [*self._view(), *jail], ["--", *command]
        # As root: the first bwrap builds the view with root's access to the files; the second,
        # started as nobody, makes the user namespace (see the module's docstring).
        outer = ["--die-with-parent", "--unshare-pid", "--cap-add", "CAP_SYS_ADMIN", "--cap-add",
                 "CAP_SETUID", "--cap-add", "CAP_SETGID", *self._view(), "--dev", "/dev", *self._gpu_devices(),
                 "--dir", "/proc", "--dir", "/tmp"]  # mount points of the second bwrap
        return outer, ["--", PYTHON, "-S", "-c", _DROP, str(NOBODY), bwrap(), "--ro-bind", "/", "/", *jail, "--",
                       *command]

    def _view(self) -> list[str]:
        """Mount operations that make the sandbox's file system: binds, then masks, parents opened."""
        binds = python_dirs() + (gpu_dirs() if self.gpu else [])
        clash = [b for b in binds if b in self.hide]
        if clash:
            raise SandboxError(f"{clash[0]} is needed inside the sandbox (the Python installation) but must be "
                               "hidden from it (the repository, the home or the temporary folder)")
        ops = [(Path(d), ["--ro-bind", d, d]) for d in map(str, binds)] + _masks(self.hide, binds)
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
        return args + _opened({p for dest, _ in ops for p in dest.parents
                               if p != Path("/") and not any(_within(p, b) for b in binds)})

    def _under_scratch(self) -> list[str]:
        """The interpreter's folders that lie in /tmp or /dev/shm (a virtual environment made there, as
        in a clone in /tmp), bound again over the sandbox's private /tmp and /dev/shm, which hide them;
        the masks inside them again; and the folders bwrap creates above them (mode 0700) opened up,
        or the sandbox's user (nobody, or the second bwrap when the grader is root) could not reach them."""
        scratch = (Path("/tmp"), Path("/dev/shm"))
        binds = [d for d in python_dirs() if any(_within(d, s) and d != s for s in scratch)]
        args = [arg for d in binds for arg in ("--ro-bind", str(d), str(d))]
        args += [arg for _, mask in _masks(self.hide, binds) for arg in mask]
        return args + _opened({p for d in binds for p in d.parents if p not in scratch
                               and any(_within(p, s) for s in scratch) and not any(_within(p, b) for b in binds)})

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


# The keyctl system call's number, by machine (glibc wraps it in no function of its own).
KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "i686": 288, "i386": 288, "armv7l": 311, "ppc64le": 271,
          "s390x": 280}


def leave_session_keyring() -> None:
    """Make this process, and every process it starts from now on, a member of a new, empty session keyring.

    A keyring is inherited by every child, bubblewrap's sandbox included (it makes none of its own), and
    the keys in it (a login's Kerberos tickets, ecryptfs or fscrypt keys, tokens kept with keyctl) can be
    read by whoever possesses the keyring, whatever their user: a student's code read the grader's. The
    new keyring dies with the last process that has it. SandboxError where a keyring could not be left;
    nothing to do where the kernel has none or a seccomp filter refuses keyctl (it does so for every
    process started from here on, too)."""
    import ctypes
    import errno

    number = KEYCTL.get(os.uname().machine)
    if number is None:
        raise SandboxError(f"labs grade does not know the keyctl system call of {os.uname().machine}: a sandbox "
                           "would possess this process's session keyring (add the number to sandbox.KEYCTL)")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(ctypes.c_long(number), ctypes.c_long(1), None) < 0:  # KEYCTL_JOIN_SESSION_KEYRING, no name
        code = ctypes.get_errno()
        if code not in (errno.ENOSYS, errno.EPERM, errno.EACCES):
            raise SandboxError(f"could not leave the session keyring ({os.strerror(code)}): a sandbox would "
                               "possess it, and read its keys")


def stop(proc: subprocess.Popen) -> None:
    """Kill ``proc`` and its process group (bubblewrap takes everything in the sandbox with it), then
    remove its cgroup."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    cgroup = getattr(proc, "cgroup", None)
    if cgroup is not None:
        cgroup.remove()
        proc.cgroup = None


def memory_killed(proc: subprocess.Popen) -> bool:
    """Whether the kernel killed a process of ``proc``'s sandbox for memory (ask before :func:`stop`)."""
    cgroup = getattr(proc, "cgroup", None)
    return cgroup is not None and cgroup.memory_killed()


def memory_limit(resources: Resources) -> str:
    """The reason given when the kernel killed a process of a sandbox for memory (which kills the sandbox)."""
    return (f"memory limit: the sandbox's processes (their /tmp and memfd files included) went past "
            f"{resources.memory / 2**30:g} GiB together (--memory-limit), and the kernel killed it")


def python_dirs() -> list[Path]:
    """Folders the interpreter needs, from the running one: /usr, its prefixes, its site-packages."""
    dirs = [Path("/usr"), Path(sys.executable).resolve().parent]
    dirs += [Path(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}]
    dirs += [Path(p) for p in site.getsitepackages()]
    if site.ENABLE_USER_SITE and site.getusersitepackages() in sys.path:
        dirs.append(Path(site.getusersitepackages()))
    return _folders(dirs)


def gpu_dirs() -> list[Path]:
    """Driver and CUDA folders outside /usr: LD_LIBRARY_PATH, libcuda's folder, CUDA_HOME."""
    dirs = os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep)
    return _folders([*dirs, _libcuda_dir() or "", os.environ.get("CUDA_HOME", "")])


def _folders(paths) -> list[Path]:
    """The folders among ``paths`` (empty ones skipped), resolved, sorted, each once, never "/"."""
    found = {Path(p).resolve() for p in paths if p}
    return sorted(d for d in found if d.is_dir() and d != Path("/"))


def _libcuda_dir() -> str | None:
    try:
        out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    paths = [line.split("=>")[-1].strip() for line in out.splitlines() if "libcuda.so.1" in line]
    return os.path.dirname(paths[0]) if paths else None


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _masks(hide: list[Path], binds: list[Path]) -> list[tuple[Path, list[str]]]:
    """An empty read-only tmpfs over each folder of ``hide`` that a bind would show (nothing to mask else)."""
    return [(h, ["--size", "4096", "--tmpfs", str(h), "--remount-ro", str(h)]) for h in hide
            if h.exists() and any(_within(h, b) for b in binds)]


def _opened(parents: set[Path]) -> list[str]:
    """bwrap creates the parents of mount points (mode 0700): make them traversable by the sandbox's user."""
    return [arg for p in sorted(parents, key=lambda p: len(p.parts)) for arg in ("--chmod", "0755", str(p))]


def open_up(folder: Path) -> None:
    """Make the staged tree readable by the sandbox's user (nobody, when the grader is root)."""
    folder.chmod(0o755)
    for path in folder.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
