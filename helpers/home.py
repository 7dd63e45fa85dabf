"""Where the course keeps its files outside the checkout: the course's home.

A leaf that both sides read: :mod:`helpers.kube` finds the course's kubeconfig
here, and :mod:`helpers.cluster` (which makes and deletes clusters) keeps its
binaries and state here. It imports neither.

Built binaries are slow to make (the Kubernetes control plane takes a long
time to compile on two cores), so they live in a cache keyed by version that
survives a fresh clone. Cluster state (kwokctl's work directory, the
kubeconfig the notebooks use) lives beside it, one folder per cluster name.

Everything hangs off one root: ``$CFS_HOME`` if set, else
``~/.controllers-from-scratch``. Tests point ``CFS_HOME`` elsewhere to keep
their clusters apart from a learner's.

The root holds admin credentials (kubeconfigs, the cluster's CA and admin
keys), so it is made 0700 before anything is written in it
(:meth:`CourseHome.make_root`), whatever the umask; and every ``up`` tightens
what an older version, or a tool that chose its own modes, left wider
(:meth:`CourseHome.tighten`).

A cluster's name becomes a folder name, so it must be a DNS label
(:func:`check_cluster_name`): a name like ``/home/me`` or ``..`` would
otherwise replace the course's folder with another one, and ``down`` would
delete it. And ``down`` deletes only a folder that holds the course's own
state file (:func:`remove_cluster_dir`).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from .errors import CourseError
from .private_files import make_private_dirs

DEFAULT_CLUSTER_NAME = "controllers-from-scratch"
STATE_FILE = "state.json"
PRIVATE_FILES = ("*.key", "kubeconfig", "kubeconfig.yaml", "*.kubeconfig")
"""Names of the files under the course's folder that hold credentials: made 0600."""
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
"""What Kubernetes calls a DNS label (RFC 1123): at most 63 of these characters."""


def check_cluster_name(name: str) -> str:
    """``name`` if it is a DNS label; else a CourseError, before anything touches the disk."""
    if len(name) > 63 or not DNS_LABEL.match(name):
        raise CourseError(
            f"'{name}' cannot be a cluster's name: a name is lower-case letters, digits and '-', "
            "at most 63 characters, and starts and ends with a letter or digit.",
            f"pick a name like '{DEFAULT_CLUSTER_NAME}' or 'lab-2' (or leave out --name).",
        )
    return name


@dataclass(frozen=True)
class CourseHome:
    """The course's folder layout, rooted at ``root``."""

    root: Path

    @classmethod
    def from_environment(cls) -> CourseHome:
        configured = os.environ.get("CFS_HOME")
        root = Path(configured) if configured else Path.home() / ".controllers-from-scratch"
        return cls(root.expanduser().resolve())

    @property
    def bin_cache(self) -> Path:
        """Built binaries, one sub-folder per (component, version, inputs) key."""
        return self.root / "bin"

    @property
    def kwok_workdir(self) -> Path:
        """kwokctl's own state (pid files, certificates, logs), via KWOK_WORKDIR."""
        return self.root / "kwok"

    def cluster_dir(self, name: str) -> Path:
        """Our record of one cluster: its kubeconfig and which backend made it."""
        return self.root / "clusters" / check_cluster_name(name)

    def kubeconfig(self, name: str) -> Path:
        return self.cluster_dir(name) / "kubeconfig"

    def state_file(self, name: str) -> Path:
        return self.cluster_dir(name) / STATE_FILE

    def make_root(self) -> Path:
        """Create the course's folder readable by its owner only (0700), before anything is
        written in it; one that exists with a wider mode (an older version made it 0755) is
        made 0700 too, if it is ours."""
        make_private_dirs(self.root)
        info = self.root.stat()
        if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) & 0o077:
            self.root.chmod(0o700)
        return self.root

    def tighten(self) -> list[Path]:
        """Make the root 0700 and every credential under it 0600 (:data:`PRIVATE_FILES`: the
        CA and admin keys kwokctl wrote 0644 before the course ran it with umask 077, the
        kubeconfigs); returns what was changed. Links are not followed."""
        changed = []
        if self.root.is_dir() and stat.S_IMODE(self.root.stat().st_mode) & 0o077:
            self.make_root()
            changed.append(self.root)
        if not self.root.is_dir():
            return changed
        for folder, folders, files in os.walk(self.root):  # links are not followed either
            if Path(folder) == self.root and self.bin_cache.name in folders:
                folders.remove(self.bin_cache.name)  # built binaries: nothing secret, many files
            for name in files:
                path = Path(folder) / name
                if not any(path.match(pattern) for pattern in PRIVATE_FILES):
                    continue
                info = path.lstat()
                ours = stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid()
                if ours and stat.S_IMODE(info.st_mode) & 0o177:
                    path.chmod(0o600)
                    changed.append(path)
        return changed

    def make_cluster_dir(self, name: str) -> Path:
        """Create the cluster's folder (and the home) readable by its owner only: it will hold
        admin credentials, some written by kind or kwokctl with modes we do not choose."""
        folder = self.cluster_dir(name)
        self.make_root()
        for path in (self.root / "clusters", folder):
            path.mkdir(mode=0o700, exist_ok=True)
        folder.chmod(0o700)  # a folder made by an older version kept its old mode
        return folder


def remove_cluster_dir(home: CourseHome, name: str) -> None:
    """Delete cluster ``name``'s folder, which must hold the course's state file.

    A folder without one (or a link to somewhere else) was not made by the
    course: it is refused with a sentence and left exactly as it is.
    """
    folder = home.cluster_dir(name)
    if not folder.exists() and not folder.is_symlink():
        return
    if folder.is_symlink() or not (folder / STATE_FILE).is_file():
        raise CourseError(
            f"{folder} holds no {STATE_FILE} of the course's, so the course did not make it "
            "and leaves it alone.",
            "look at what is in it; if it is yours, keep it (or pick another --name); if it is "
            "a leftover you do not need, remove it yourself.",
        )
    shutil.rmtree(folder)
