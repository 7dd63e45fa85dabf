"""What a hub runs, built once per machine outside the checkout: Python and the proxy.

The attendees' accounts must run JupyterLab, their kernels and the chapters'
packages, and must not be able to read the facilitator's checkout or course
folder (often in a home that is 0700). So the hub gets a Python environment of
its own, with requirements.txt exactly as ``make setup`` installs it (JupyterHub
and its idle culler are pinned there too), and configurable-http-proxy from npm
at the versions hub/package-lock.json pins (``npm ci``), under
``$CFS_HUB_DIR/runtime`` (default ``/opt/controllers-from-scratch-hub``).

Everything there is root's and read-only for the others: root runs the hub
from it and the attendees run their servers from it, so an attendee who could
write one file there could run code as root. :func:`check_owned_by_root`
refuses a folder (or any folder above it) another user could change.

Each build is keyed by what it was built from (requirements.txt and the Python
version; package.json and its lock), so a change builds a new one next to the
old, and a build interrupted half way (no marker file) is built again. A lock
keeps two hubs (a facilitator's and a test's) from building the same one at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ...errors import CourseError
from ..progress import step

ROOT = Path(__file__).resolve().parents[3]
HUB_DIR_ENV = "CFS_HUB_DIR"
DEFAULT_HUB_DIR = Path("/opt/controllers-from-scratch-hub")
PROXY_PACKAGE = ROOT / "hub"
"""package.json and package-lock.json: configurable-http-proxy, pinned with its dependencies."""
BUILT = ".built"
"""Written last into a finished build: a folder without it is a build that stopped half way."""


def hub_dir() -> Path:
    """Where hubs keep what attendees may read: ``$CFS_HUB_DIR``, else the default."""
    return Path(os.environ.get(HUB_DIR_ENV) or DEFAULT_HUB_DIR).resolve()


@dataclass(frozen=True)
class Runtime:
    """The programs a hub runs."""

    venv: Path
    proxy_dir: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def jupyterhub(self) -> Path:
        return self.venv / "bin" / "jupyterhub"

    @property
    def singleuser(self) -> Path:
        return self.venv / "bin" / "jupyterhub-singleuser"

    @property
    def proxy(self) -> Path:
        return self.proxy_dir / "node_modules" / ".bin" / "configurable-http-proxy"


def _key(*files: Path, extra: str = "") -> str:
    digest = hashlib.sha256(extra.encode())
    for path in files:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def check_owned_by_root(path: Path) -> None:
    """A CourseError unless ``path`` and every folder above it are root's and writable by
    root alone (a sticky folder such as /tmp excepted: others cannot replace what is in it)."""
    for folder in (path, *path.parents):
        if not folder.exists():
            continue
        info = folder.lstat()
        sticky = info.st_mode & stat.S_ISVTX
        if info.st_uid != 0 or (info.st_mode & 0o022 and not sticky):
            raise CourseError(
                f"{folder} can be changed by a user other than root, so what the hub runs there "
                "(as root, and as every attendee) could be replaced by them.",
                f"pick a folder only root can write (set {HUB_DIR_ENV}), e.g. the default "
                f"{DEFAULT_HUB_DIR}.",
            )


def make_public_dirs(path: Path) -> Path:
    """Make ``path`` (and folders above it) root's, 0755: readable by attendees, theirs to
    change never."""
    for folder in reversed([path, *path.parents]):
        if not folder.exists():
            folder.mkdir(mode=0o755)
            folder.chmod(0o755)
    check_owned_by_root(path)
    return path


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    descriptor = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            with step("waiting for another hub to finish building its runtime"):
                fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


NOBODY = 65534
"""The uid :func:`base_python` tries a Python as: an account with no rights of its own."""
PYTHON_CHECK = "import sys, ssl, sqlite3, venv; print('.'.join(map(str, sys.version_info[:3])))"


def base_python() -> tuple[str, str]:
    """``(path, version)`` of a Python 3.11+ that every account can run, to base the hub's
    environment on. A virtual environment runs its base interpreter and standard library
    from where they are installed: one under root's home (pyenv's, often) is out of the
    attendees' reach, so each candidate is tried as an account without rights."""
    candidates = [getattr(sys, "_base_executable", sys.executable), sys.executable,
                  shutil.which("python3.11"), shutil.which("python3"), "/usr/bin/python3",
                  "/usr/local/bin/python3"]  # fmt: skip
    tried = []
    for candidate in dict.fromkeys(str(Path(c).resolve()) for c in candidates if c):
        try:
            done = subprocess.run([candidate, "-c", PYTHON_CHECK], capture_output=True,
                                  text=True, check=False, user=NOBODY, group=NOBODY,
                                  extra_groups=[], cwd="/")  # fmt: skip
        except OSError:  # not even its executable is within reach
            done = None
        version = done.stdout.strip() if done else ""
        if done and done.returncode == 0 and tuple(map(int, version.split(".")[:2])) >= (3, 11):
            return candidate, version
        tried.append(candidate)
    raise CourseError(
        "The hub needs a Python 3.11 or newer that every account may run (with venv, ssl and "
        f"sqlite3), and none was found: {', '.join(tried)} cannot be run by other users (a "
        "Python under root's home, such as pyenv's, is out of their reach).",
        "install the system's Python (Debian/Ubuntu: `apt-get install python3 python3-venv`).",
    )


NODE_MAJOR = 20
"""The oldest Node.js the pinned configurable-http-proxy declares (its ``engines``)."""


def _node_version() -> str:
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        return ""
    done = subprocess.run([node, "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip()


def check_node(version: str) -> None:
    """A CourseError unless ``version`` (``node --version``: ``v20.20.2``) is new enough for
    the proxy: npm only warns about an engine it does not meet, and the proxy would then fail
    at the hub's start, with a stack trace in its log instead of a sentence here."""
    try:
        major = int(version.lstrip("v").split(".")[0])
    except ValueError:
        major = 0
    if major < NODE_MAJOR:
        found = f"Node.js {version}" if version else "no Node.js"
        raise CourseError(
            f"The hub's proxy (configurable-http-proxy, the version Zero to JupyterHub's chart "
            f"runs) needs Node.js {NODE_MAJOR} or newer, and {found} was found.",
            f"install Node.js {NODE_MAJOR} or newer with npm (Debian 13's `nodejs`; Debian 12 "
            "and Ubuntu 24.04 have 18: NodeSource's packages), then run this again.",
        )


def ensure_runtime(root: Path | None = None) -> Runtime:
    """The hub's Python environment and proxy, built now if this machine has none of this
    version yet (a few minutes the first time; seconds afterwards)."""
    root = make_public_dirs((root or hub_dir()) / "runtime")
    python, python_version = base_python()
    requirements = ROOT / "requirements.txt"
    venv = root / f"venv-{_key(requirements, extra=python_version)}"
    package = [PROXY_PACKAGE / "package.json", PROXY_PACKAGE / "package-lock.json"]
    proxy = root / f"proxy-{_key(*package)}"
    with _locked(root):
        if not (venv / BUILT).exists():
            shutil.rmtree(venv, ignore_errors=True)
            with step(f"building the hub's Python environment in {venv} (requirements.txt)"):
                _run([python, "-m", "venv", str(venv)])
                _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                      "--disable-pip-version-check", "-r", str(requirements)])  # fmt: skip
            (venv / BUILT).touch()
        if not (proxy / BUILT).exists():
            shutil.rmtree(proxy, ignore_errors=True)
            npm = shutil.which("npm")
            if npm is None:
                raise CourseError(
                    "The hub needs Node.js and npm for its proxy (configurable-http-proxy), "
                    "and npm was not found.",
                    f"install Node.js {NODE_MAJOR} or newer with npm, then run this again.",
                )
            check_node(_node_version())
            proxy.mkdir(mode=0o755)
            for path in package:
                shutil.copy(path, proxy / path.name)
            with step(f"installing configurable-http-proxy in {proxy} (npm ci)"):
                _run([npm, "ci", "--omit=dev", "--no-audit", "--no-fund", "--prefix", str(proxy)])
            (proxy / BUILT).touch()
    runtime = Runtime(venv, proxy)
    for program in (runtime.jupyterhub, runtime.singleuser, runtime.proxy):
        if not os.access(program, os.X_OK):
            raise CourseError(
                f"{program} is missing from the hub's runtime.",
                f"remove {program.parent.parent} (sudo rm -r) and run this again to rebuild it.",
            )
    return runtime


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False, umask=0o022)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise CourseError(
            f"`{' '.join(command[:4])} ...` failed (exit {done.returncode}):\n{tail}",
            "check the network (pip and npm registries) and free disk, then run this again.",
        )
