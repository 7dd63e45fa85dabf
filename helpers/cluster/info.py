"""Which cluster is this? What a chapter prints in its first cell."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import kube
from ..home import CourseHome
from .local import LocalCluster

BACKENDS = ("local", "kind", "existing")


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


def describe(kubeconfig: kube.KubeconfigArg = None, context: str | None = None) -> ClusterInfo:
    """Describe the cluster ``kubeconfig`` (default: as :func:`kube.connect` finds it) points at.

    The backend comes from what ``up`` recorded beside the kubeconfig it wrote
    (``<home>/clusters/<name>/state.json``); a context's name says nothing
    reliable (anyone may call a context ``kwok-...``). Only a kubeconfig the
    course did not write is judged by its context's name.
    """
    config = kube.Kubeconfig(kubeconfig)
    entry = config.context(context)
    name = str(entry.value["name"])
    record = _course_record(entry.source, name)
    if record is not None:
        backend, home, cluster_name = record
    else:
        backend, home, cluster_name = _guess_from_name(name)
    return ClusterInfo(
        backend, name, config.server(entry), entry.source, etcd_url_for(backend, home, cluster_name)
    )


WITHOUT_ETCD = "CFS_WITHOUT_ETCD"
"""Set to 1, the course acts as on kind or a cluster of your own: no direct etcd access, even on
the local control plane. That is how ``make test`` proves every chapter runs on such clusters."""


def etcd_url_for(backend: str, home: CourseHome, cluster_name: str) -> str | None:
    """Where etcd answers directly, or None: only the local control plane exposes it (and not
    when :data:`WITHOUT_ETCD` withholds it)."""
    if backend != "local" or os.environ.get(WITHOUT_ETCD, "") not in ("", "0"):
        return None
    return LocalCluster(home, cluster_name).etcd_url


def _course_record(kubeconfig: Path, context: str) -> tuple[str, CourseHome, str] | None:
    """``(backend, home, cluster name)`` if ``up`` wrote this kubeconfig for ``context``."""
    path = kubeconfig.resolve()
    if path.name != "kubeconfig" or path.parent.parent.name != "clusters":
        return None
    try:
        state: Any = json.loads((path.parent / "state.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or state.get("backend") not in BACKENDS:
        return None
    if state.get("context") not in (None, context):
        return None  # the record is about another context of this file
    return state["backend"], CourseHome(path.parent.parent.parent), path.parent.name


def _guess_from_name(context: str) -> tuple[str, CourseHome, str]:
    """No record: kwokctl and kind name their contexts ``kwok-<name>`` and ``kind-<name>``."""
    home = CourseHome.from_environment()
    for prefix, backend in (("kwok-", "local"), ("kind-", "kind")):
        if context.startswith(prefix):
            return backend, home, context.removeprefix(prefix)
    return "existing", home, context
