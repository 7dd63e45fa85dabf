"""Choosing a backend, and finding the one that made an existing cluster."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Protocol

from ..errors import CourseError
from ..home import CourseHome
from .existing import ExistingCluster
from .kind import KindCluster, docker_available, kind_available, kind_clusters
from .local import LocalCluster


class Backend(Protocol):
    """What every backend offers the command line."""

    name: str

    @property
    def kubeconfig(self) -> Path: ...

    def up(self) -> None: ...

    def down(self, *, quiet: bool = False) -> None: ...

    def logs(self, component: str | None, lines: int) -> None: ...


def choose_backend() -> str:
    """``kind`` when Docker answers and kind is installed, else ``local`` (which needs Go)."""
    if docker_available():
        if kind_available():
            return "kind"
        print(
            "==> Docker is running but kind is not installed; using the local control plane "
            "instead (install kind from https://kind.sigs.k8s.io to use Docker)."
        )
    if shutil.which("go") is None:
        raise CourseError(
            "Neither Docker with kind nor Go was found, and the course needs one of them to "
            "start a cluster.",
            "install Docker and kind (https://kind.sigs.k8s.io), or Go 1.26 or newer "
            "(https://go.dev/dl); or point the course at a cluster you have with "
            "`python -m helpers.cluster up --backend existing --context NAME`.",
        )
    return "local"


BACKENDS = ("local", "kind", "existing")


def recorded_backend(home: CourseHome, name: str) -> str | None:
    """The backend that created cluster ``name``, or None when there is no such cluster.

    Our state file says, unless it is damaged (an editor, a full disk, a
    killed write); then kwokctl's folder in the course's home, or kind's list of
    clusters, tells the truth, so ``down`` never reports "nothing to stop" while
    a cluster runs. A kind cluster of that name counts only when our (damaged)
    state file is there: without it the course did not create that cluster.
    """
    state_file = home.state_file(name)
    try:
        backend = json.loads(state_file.read_text()).get("backend")
    except (OSError, ValueError, AttributeError):
        backend = None
    if backend in BACKENDS:
        return backend
    if (home.kwok_workdir / "clusters" / name).exists():
        return "local"
    if state_file.exists() and kind_available() and name in kind_clusters():
        return "kind"
    return None


def local_cluster(home: CourseHome, name: str) -> LocalCluster | None:
    """Cluster ``name`` if it is the local control plane (whose processes and logs are ours)."""
    if recorded_backend(home, name) != "local":
        return None
    return LocalCluster(home, name)


def cluster_for(
    backend: str,
    home: CourseHome,
    name: str,
    *,
    port: int = 0,
    kubeconfig: Path | None = None,
    context: str | None = None,
) -> Backend:
    if backend == "local":
        return LocalCluster(home, name, port=port)
    if backend == "kind":
        return KindCluster(home, name)
    if backend == "existing":
        return ExistingCluster(home, name, kubeconfig, context)
    raise CourseError(f"Unknown backend '{backend}'.", "use one of: local, kind, existing.")
