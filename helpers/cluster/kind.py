"""The learner's default backend when Docker is available: a kind cluster.

kind runs each Kubernetes node as a Docker container, from the image pinned in
``kind-config.yaml``. This module only drives the ``kind`` command; it is not
run on the project's machines (they have no Docker engine), so the config file
itself is checked against kind's schema by ``tests/test_kind_config.py``.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .. import kube
from ..errors import CourseError
from ..home import CourseHome, remove_cluster_dir
from . import bootstrap
from .identity import record_state
from .progress import step

KIND_CONFIG = Path(__file__).resolve().parents[2] / "kind-config.yaml"
SETUP_TIMEOUT_SECONDS = 300
COURSE_IMAGES = (
    "nginx:latest",  # the Foo controller's Deployments (chapters 05-08)
    "nginx:1.27",  # chapter 06's exercise
    "busybox:latest",  # Pod templates in chapters 01-05 and their exercises
    "registry.k8s.io/pause:3.9",  # chapter 07's Deployments, before the rollout
    "registry.k8s.io/pause:3.10",  # and after it
)
"""Every image a Pod of the course runs (tests/test_kind_preload.py finds them in the chapters).

On kind a real kubelet pulls them; ``up`` loads them into the nodes beforehand, so that no
chapter waits on a registry (or fails without one) during a workshop."""
IMAGES_ARCHIVE = "course-images.tar"
"""For an offline day: ``docker save`` writes it before, ``docker load`` reads it on the day."""


def preload_commands(cluster: str, images: tuple[str, ...], present: set[str]) -> list[list[str]]:
    """The commands that put ``images`` into kind cluster ``cluster``'s nodes.

    Images not yet in the local Docker engine (``present``) are pulled first;
    then one ``kind load docker-image`` copies them all into every node.
    """
    pulls = [["docker", "pull", image] for image in images if image not in present]
    return [*pulls, ["kind", "load", "docker-image", "--name", cluster, *images]]


def offline_commands(images: tuple[str, ...] = COURSE_IMAGES) -> dict[str, list[list[str]]]:
    """What a facilitator runs for a day without a registry: before (online), and on the day."""
    return {
        "before": [*(["docker", "pull", image] for image in images),
                   ["docker", "save", "-o", IMAGES_ARCHIVE, *images]],
        "on the day": [["docker", "load", "-i", IMAGES_ARCHIVE]],
    }  # fmt: skip


def images_present(images: tuple[str, ...]) -> set[str]:
    """Those of ``images`` the local Docker engine already has."""
    present = set()
    for image in images:
        found = subprocess.run(["docker", "image", "inspect", image], capture_output=True,
                               check=False, timeout=30)  # fmt: skip
        if found.returncode == 0:
            present.add(image)
    return present


def docker_available() -> bool:
    """True when a Docker engine answers (the client alone is not enough)."""
    if shutil.which("docker") is None:
        return False
    result = subprocess.run(
        ["docker", "info", "--format", "{{.ServerVersion}}"],
        capture_output=True, text=True, check=False, timeout=20,
    )  # fmt: skip
    return result.returncode == 0 and bool(result.stdout.strip())


def kind_available() -> bool:
    return shutil.which("kind") is not None


def kind_clusters() -> list[str]:
    """The clusters kind knows ([] when kind or Docker does not answer)."""
    try:
        result = subprocess.run(
            ["kind", "get", "clusters"], capture_output=True, text=True, check=False, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return result.stdout.split()


@dataclass
class KindCluster:
    """One kind cluster named ``name``; its kubeconfig is kept under ``home``."""

    home: CourseHome
    name: str

    @property
    def kubeconfig(self) -> Path:
        return self.home.kubeconfig(self.name)

    @property
    def context(self) -> str:
        return f"kind-{self.name}"

    def up(self) -> None:
        if not docker_available():
            raise CourseError(
                "Docker is not running, so kind cannot start a cluster.",
                "start Docker, or use the Docker-less cluster: "
                "`python -m helpers.cluster up --backend local` (needs Go).",
            )
        if not kind_available():
            raise CourseError(
                "Docker is running but the `kind` command is not installed.",
                "install kind (https://kind.sigs.k8s.io/docs/user/quick-start/#installation), "
                "or use `python -m helpers.cluster up --backend local` (needs Go).",
            )
        running = self.name in kind_clusters()
        if running and not self.home.state_file(self.name).exists():
            raise CourseError(
                f"A kind cluster named '{self.name}' exists, and the course did not create it "
                "(it has no record of it), so it leaves that cluster alone.",
                "start the course's own with another name "
                "(`python -m helpers.cluster up --name controllers-from-scratch-2`), or use yours "
                "as it is with "
                f"`python -m helpers.cluster up --backend existing --context kind-{self.name}`.",
            )
        self._write_state()  # first, so that `down` finds a cluster whose start failed half way
        if running:
            problem = self._health_problem()  # also refreshes our copy of its kubeconfig
            if problem is None:
                print(f"==> kind cluster '{self.name}' is already running; nothing to start.")
            else:
                print(f"==> kind cluster '{self.name}' is broken ({problem}); recreating it.")
                self._kind("delete", "cluster", "--name", self.name)
                running = False
        if not running:
            with step(f"creating kind cluster '{self.name}' (the first time pulls the node image)"):
                self._kind(
                    "create", "cluster", "--name", self.name, "--config", str(KIND_CONFIG),
                    "--kubeconfig", str(self.kubeconfig), "--wait", f"{SETUP_TIMEOUT_SECONDS}s",
                )  # fmt: skip
        self.kubeconfig.chmod(0o600)  # it holds the cluster's admin credentials
        with step(f"loading the {len(COURSE_IMAGES)} images the chapters' Pods run into the nodes"):
            for command in preload_commands(
                self.name, COURSE_IMAGES, images_present(COURSE_IMAGES)
            ):
                self._run(command)
        api = kube.connect(self.kubeconfig, self.context)
        with step("installing the Foo CRD"):
            bootstrap.install_foo_crd(api, SETUP_TIMEOUT_SECONDS)
        self._write_state()  # now with the identity the tests check (see identity.py)

    def _write_state(self) -> None:
        record_state(self.home, self.name, "kind", self.context)

    def down(self, *, quiet: bool = False) -> None:
        """Delete the kind cluster the course created, and our record of it; never another."""
        if not self.home.state_file(self.name).exists():
            raise CourseError(
                f"The course has no record of creating a kind cluster named '{self.name}', so it "
                "does not delete one.",
                f"if it is yours to delete, `kind delete cluster --name {self.name}` does it.",
            )
        if kind_available() and self.name in kind_clusters():
            self._kind("delete", "cluster", "--name", self.name)
        remove_cluster_dir(self.home, self.name)
        if not quiet:
            print(f"==> kind cluster '{self.name}' is gone.")

    def logs(self, component: str | None, lines: int) -> None:
        """Export every node's logs with ``kind export logs`` and say where they went."""
        folder = self.home.root / "logs" / f"{self.name}-{time.strftime('%Y%m%d-%H%M%S')}"
        self._kind("export", "logs", str(folder), "--name", self.name)
        node = f"{self.name}-control-plane"
        print(f"==> kind exported the logs of cluster '{self.name}' to {folder}")
        print(f"    control-plane components: {folder / node / 'containers'}")
        print(f"    the kubelet: {folder / node / 'kubelet.log'}")

    def _health_problem(self) -> str | None:
        self._export_kubeconfig()  # its address may have changed since we last wrote it
        try:
            api = kube.connect(self.kubeconfig, self.context, probe_timeout=5)
        except CourseError as exc:
            return exc.problem
        return kube.readiness_problem(api, timeout=10)

    def _export_kubeconfig(self) -> None:
        self._kind(
            "export", "kubeconfig", "--name", self.name, "--kubeconfig", str(self.kubeconfig)
        )
        self.kubeconfig.chmod(0o600)

    def _kind(self, *args: str) -> None:
        self._run(["kind", *args])

    def _run(self, command: list[str]) -> None:
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            tail = "\n".join(result.stderr.strip().splitlines()[-10:])
            if command[0] == "docker":
                raise CourseError(
                    f"`{' '.join(command)}` failed:\n{tail}",
                    "check the network, or load the images offline: docs/facilitator.md says how.",
                )
            raise CourseError(
                f"`{' '.join(command[:3])}` failed:\n{tail}",
                "check that Docker has at least 4 GB of memory, then run the command again.",
            )
