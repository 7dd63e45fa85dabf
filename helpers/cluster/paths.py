"""Where the course keeps its files outside the checkout.

Built binaries are slow to make (the Kubernetes control plane takes a long
time to compile on two cores), so they live in a cache keyed by version that
survives a fresh clone. Cluster state (kwokctl's work directory, the
kubeconfig the notebooks use) lives beside it, one folder per cluster name.

Everything hangs off one root: ``$CFS_HOME`` if set, else
``~/.controllers-from-scratch``. Tests point ``CFS_HOME`` elsewhere to keep
their clusters apart from a learner's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CLUSTER_NAME = "controllers-from-scratch"


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
        return self.root / "clusters" / name

    def kubeconfig(self, name: str) -> Path:
        return self.cluster_dir(name) / "kubeconfig"

    def state_file(self, name: str) -> Path:
        return self.cluster_dir(name) / "state.json"


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to a file only its owner may read: kubeconfigs hold credentials."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        os.fchmod(out.fileno(), 0o600)  # a file that existed keeps its old mode through open()
        out.write(text)
