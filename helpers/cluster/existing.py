"""Use a cluster the course did not create: any kubeconfig context.

We copy that one context, with its credentials made self-contained, into the
course's kubeconfig, so every notebook finds it the same way as a cluster we
started. ``down`` only forgets it: the course never deletes a cluster it did
not create.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .. import kube
from ..errors import CourseError
from . import bootstrap
from .paths import CourseHome

PATH_FIELDS = ("certificate-authority", "client-certificate", "client-key", "tokenFile")


@dataclass
class ExistingCluster:
    home: CourseHome
    name: str
    source_kubeconfig: Path
    source_context: str | None

    @property
    def kubeconfig(self) -> Path:
        return self.home.kubeconfig(self.name)

    def up(self) -> None:
        context, _server = kube.describe_context(self.source_kubeconfig, self.source_context)
        kube.connect(self.source_kubeconfig, context)  # says clearly if it does not answer
        self.home.cluster_dir(self.name).mkdir(parents=True, exist_ok=True)
        self.kubeconfig.write_text(
            yaml.safe_dump(single_context(self.source_kubeconfig, context), sort_keys=False)
        )
        api = kube.connect(self.kubeconfig, context)
        bootstrap.install_foo_crd(api, timeout=120)
        self.home.state_file(self.name).write_text(
            json.dumps({"backend": "existing", "context": context}, indent=2) + "\n"
        )
        print(f"==> the course now uses context '{context}' from {self.source_kubeconfig}.")

    def down(self, *, quiet: bool = False) -> None:
        shutil.rmtree(self.home.cluster_dir(self.name), ignore_errors=True)
        if not quiet:
            print(
                "==> forgot the existing cluster (it was not created by the course, so it runs on)."
            )


def single_context(path: Path, context: str) -> dict[str, Any]:
    """A kubeconfig holding only ``context``, its cluster and user, with absolute file paths."""
    document = yaml.safe_load(path.read_text()) or {}
    entry = _named(document.get("contexts"), context, path)
    cluster = _named(document.get("clusters"), entry["context"]["cluster"], path)
    user = _named(document.get("users"), entry["context"].get("user"), path, optional=True)
    for section in (cluster.get("cluster") or {}, (user or {}).get("user") or {}):
        for field in PATH_FIELDS:
            if section.get(field):
                section[field] = str((path.parent / section[field]).expanduser().resolve())
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": context,
        "contexts": [entry],
        "clusters": [cluster],
        "users": [user] if user else [],
    }


def _named(
    items: list[dict[str, Any]] | None, name: str | None, path: Path, *, optional: bool = False
) -> dict[str, Any]:
    for item in items or []:
        if item.get("name") == name:
            return item
    if optional:
        return {}
    raise CourseError(
        f"The kubeconfig at {path} refers to '{name}', which it does not define.",
        "fix the file, or pick another context with --context.",
    )
