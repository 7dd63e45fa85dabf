"""Choosing a backend, and finding the one that made an existing cluster."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Protocol

from ..errors import CourseError
from .existing import ExistingCluster
from .kind import KindCluster, docker_available, kind_available
from .local import LocalCluster
from .paths import CourseHome


class Backend(Protocol):
    """What every backend offers the command line."""

    name: str

    @property
    def kubeconfig(self) -> Path: ...

    def up(self) -> None: ...

    def down(self, *, quiet: bool = False) -> None: ...


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


def recorded_backend(home: CourseHome, name: str) -> str | None:
    """The backend that created cluster ``name``, from its state file or kwokctl's folder."""
    state = home.state_file(name)
    if state.exists():
        try:
            return json.loads(state.read_text()).get("backend")
        except ValueError:
            pass
    if (home.kwok_workdir / "clusters" / name).exists():
        return "local"
    return None


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
        from ..kube import default_kubeconfig

        source = kubeconfig or default_kubeconfig(home)
        return ExistingCluster(home, name, source, context)
    raise CourseError(f"Unknown backend '{backend}'.", "use one of: local, kind, existing.")
