"""Which cluster is this? What a chapter prints in its first cell."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import kube
from .local import LocalCluster
from .paths import CourseHome


@dataclass(frozen=True)
class ClusterInfo:
    backend: str  # "local" (kwokctl), "kind", or "existing"
    context: str
    server: str
    kubeconfig: Path
    etcd_url: str | None  # only the local control plane exposes etcd

    def __str__(self) -> str:
        label = {
            "local": "the local control plane (kwokctl, no Docker)",
            "kind": "kind (Kubernetes in Docker)",
            "existing": "a cluster the course did not create",
        }[self.backend]
        return f"backend: {label}\ncontext: {self.context}\nserver:  {self.server}"


def describe(kubeconfig: str | Path | None = None, context: str | None = None) -> ClusterInfo:
    """Describe the cluster ``kubeconfig`` (default: as :func:`kube.connect` finds it) points at."""
    path = Path(kubeconfig) if kubeconfig else kube.default_kubeconfig()
    name, server = kube.describe_context(path, context)
    etcd_url = None
    if name.startswith("kwok-"):
        backend = "local"
        etcd_url = LocalCluster(CourseHome.from_environment(), name.removeprefix("kwok-")).etcd_url
    elif name.startswith("kind-"):
        backend = "kind"
    else:
        backend = "existing"
    return ClusterInfo(backend, name, server, path, etcd_url)
