"""Use a cluster the course did not create: any kubeconfig context.

We copy that one context, with its credentials made self-contained, into the
course's kubeconfig, so every notebook finds it the same way as a cluster we
started. ``down`` only forgets it: the course never deletes a cluster it did
not create.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .. import kube
from ..errors import CourseError
from ..home import CourseHome, remove_cluster_dir
from ..private_files import write_private
from . import bootstrap
from .identity import record_state


@dataclass
class ExistingCluster:
    home: CourseHome
    name: str
    source_kubeconfig: Path | None  # None: the files kubectl reads ($KUBECONFIG, ~/.kube/config)
    source_context: str | None

    @property
    def kubeconfig(self) -> Path:
        return self.home.kubeconfig(self.name)

    def up(self) -> None:
        source = kube.Kubeconfig(self.source_kubeconfig)
        context = str(source.context(self.source_context).value["name"])
        kube.connect(source.paths, context)  # says clearly if it does not answer
        copied = single_context(source.paths, context)
        self.home.make_cluster_dir(self.name)
        write_private(self.kubeconfig, yaml.safe_dump(copied, sort_keys=False))
        api = kube.connect(self.kubeconfig, context)
        bootstrap.install_foo_crd(api, timeout=120)
        record_state(self.home, self.name, "existing", context)
        print(f"==> the course now uses context '{context}' from {source.label}.")

    def down(self, *, quiet: bool = False) -> None:
        remove_cluster_dir(self.home, self.name)
        if not quiet:
            print(
                "==> forgot the existing cluster (it was not created by the course, so it runs on)."
            )

    def logs(self, component: str | None, lines: int) -> None:
        raise CourseError(
            f"The course did not create cluster '{self.name}', so its components' logs are not "
            "on this machine.",
            f"`kubectl --kubeconfig {self.kubeconfig} get events -A` shows what happened lately; "
            "the control plane's logs are wherever that cluster's provider keeps them.",
        )


def single_context(kubeconfig: kube.KubeconfigArg, context: str) -> dict[str, Any]:
    """A kubeconfig holding only ``context``, its cluster and user, with absolute file paths."""
    return kube.Kubeconfig(kubeconfig).standalone(context)
