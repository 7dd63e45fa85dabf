"""The Docker-less backend: a real control plane from local binaries, run by kwokctl.

``kwokctl create cluster --runtime binary`` starts etcd, kube-apiserver,
kube-controller-manager, kube-scheduler and the kwok controller as ordinary
processes on this machine. kwok plays kubelet for the Node objects we create,
so Deployments get ReplicaSets and Pods get scheduled and become Ready, exactly
as on a real cluster, without containers.

Everything binds to 127.0.0.1, and kwokctl's state lives under the course's
home folder (``KWOK_WORKDIR``), never in ``~/.kwok`` or ``~/.kube/config``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .. import kube
from ..errors import CourseError
from . import bootstrap
from .build import KUBERNETES, ensure_all_built
from .paths import CourseHome
from .progress import step

START_TIMEOUT_SECONDS = 300

# The API server's watch cache answers watches and lists from memory, so
# compacting etcd never shows through it. For PodTemplates (a kind nothing in
# the course relies on) we turn the cache off, so chapter 01 and the tests can
# make a resourceVersion expire for real and meet 410 Gone straight from etcd.
# kind-config.yaml passes the same flag.
API_SERVER_ARGS = (("watch-cache-sizes", "podtemplates#0"),)
NODES_READY_TIMEOUT_SECONDS = 120


@dataclass
class LocalCluster:
    """One kwokctl cluster named ``name`` under ``home``."""

    home: CourseHome
    name: str
    port: int = 0

    # -- where things are -------------------------------------------------

    @property
    def kwok_dir(self) -> Path:
        """kwokctl's folder for this cluster (pids, logs, certificates)."""
        return self.home.kwok_workdir / "clusters" / self.name

    @property
    def kubeconfig(self) -> Path:
        return self.home.kubeconfig(self.name)

    @property
    def context(self) -> str:
        return f"kwok-{self.name}"

    @property
    def etcd_url(self) -> str | None:
        """Where etcd listens (plain HTTP on loopback), from kwokctl's saved configuration."""
        port = (self._saved_configuration().get("options") or {}).get("etcdPort")
        return f"http://127.0.0.1:{port}" if port else None

    def _saved_configuration(self) -> dict[str, Any]:
        """The KwokctlConfiguration kwokctl saved in kwok.yaml ({} before the cluster exists)."""
        saved = self.kwok_dir / "kwok.yaml"
        if saved.exists():
            for document in yaml.safe_load_all(saved.read_text()):
                if document and document.get("kind") == "KwokctlConfiguration":
                    return document
        return {}

    # -- lifecycle ----------------------------------------------------------

    def up(self) -> None:
        """Start the cluster, or leave a healthy one as it is; replace a broken one."""
        binaries = ensure_all_built(self.home)
        if self.kwok_dir.exists() or self.kubeconfig.exists():
            problem = self.health_problem()
            if problem is None:
                print(f"==> cluster '{self.name}' is already running; nothing to start.")
                self._finish_setup()
                return
            print(
                f"==> found a broken cluster '{self.name}' ({problem}); "
                "deleting it and starting a new one."
            )
            self.down(quiet=True)
        if self.port:
            ensure_port_free(self.port)
        self.home.cluster_dir(self.name).mkdir(parents=True, exist_ok=True)
        config = self._write_kwokctl_config(binaries)
        with step(f"starting the control plane '{self.name}' (etcd, kube-apiserver, "
                  "kube-controller-manager, kube-scheduler, kwok)"):  # fmt: skip
            self._kwokctl(
                "create", "cluster", "--name", self.name, "--runtime", "binary",
                "--config", str(config), "--kubeconfig", str(self.kubeconfig),
                "--wait", f"{START_TIMEOUT_SECONDS}s", "--timeout", f"{START_TIMEOUT_SECONDS}s",
                binaries=binaries,
            )  # fmt: skip
        self._finish_setup()
        self.home.state_file(self.name).write_text(
            json.dumps({"backend": "local", "context": self.context}, indent=2) + "\n"
        )

    def down(self, *, quiet: bool = False) -> None:
        """Stop every process this cluster started and remove its state."""
        pids = self.processes()
        if self.kwok_dir.exists():
            binaries = ensure_all_built(self.home)
            try:
                self._kwokctl(
                    "delete", "cluster", "--name", self.name,
                    "--kubeconfig", str(self.kubeconfig), binaries=binaries,
                )  # fmt: skip
            except CourseError as exc:
                if not quiet:
                    print(f"    kwokctl could not delete the cluster cleanly: {exc.problem}")
        survivors = [pid for pid in pids.values() if process_alive(pid)]
        for pid in survivors:
            terminate(pid)
        for path in (self.kwok_dir, self.home.cluster_dir(self.name)):
            _remove_tree(path)
        if not quiet:
            print(f"==> cluster '{self.name}' is gone ({len(pids)} processes stopped).")

    # -- health -------------------------------------------------------------

    def processes(self) -> dict[str, int]:
        """``{component: pid}`` from kwokctl's pid files."""
        found: dict[str, int] = {}
        pid_dir = self.kwok_dir / "pids"
        if pid_dir.is_dir():
            for pid_file in pid_dir.glob("*.pid"):
                text = pid_file.read_text().strip()
                if text.isdigit():
                    found[pid_file.stem] = int(text)
        return found

    def health_problem(self) -> str | None:
        """None when every component runs and the API answers; else what is wrong."""
        pids = self.processes()
        if not pids:
            return "no processes recorded"
        dead = sorted(name for name, pid in pids.items() if not process_alive(pid))
        if dead:
            return f"{', '.join(dead)} not running"
        try:
            kube.connect(self.kubeconfig, self.context, probe_timeout=3)
        except CourseError as exc:
            return exc.problem
        return None

    # -- one component at a time (for failure drills) ---------------------------

    def stop_component(self, component: str) -> None:
        """Stop one component (say ``kube-apiserver``) and leave the rest running."""
        pid = self.processes().get(component)
        if pid is None:
            raise CourseError(
                f"The cluster has no component named '{component}'.",
                f"use one of: {', '.join(sorted(self.processes()))}.",
            )
        terminate(pid)

    def start_component(self, component: str) -> int:
        """Start a stopped component again with the command line kwokctl gave it; return its pid.

        kwokctl can stop and start a whole cluster but offers no command for one
        component, so we replay the component's saved definition from kwok.yaml.
        """
        definition = self._component_definition(component)
        log = self.kwok_dir / "logs" / f"{component}.log"
        with log.open("a") as out:
            process = subprocess.Popen(
                [definition["binary"], *definition.get("args", [])],
                cwd=definition.get("workDir", str(self.kwok_dir)),
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,  # like kwokctl: not tied to our terminal or process
            )  # fmt: skip
        (self.kwok_dir / "pids" / f"{component}.pid").write_text(str(process.pid))
        return process.pid

    def revive(self) -> list[str]:
        """Start every component whose process has died; return their names.

        On a real node the kubelet restarts control-plane static pods that exit.
        kube-controller-manager and kube-scheduler exit on purpose when they
        cannot renew their leader lease for 10 s (an API server down that long),
        so after a failure drill this plays the kubelet's part.
        """
        dead = [name for name, pid in self.processes().items() if not process_alive(pid)]
        for name in dead:
            self.start_component(name)
        return dead

    def _component_definition(self, component: str) -> dict[str, Any]:
        for definition in self._saved_configuration().get("components") or []:
            if definition.get("name") == component:
                return definition
        raise CourseError(
            f"kwokctl's configuration has no component '{component}'.",
            "recreate the cluster with `python -m helpers.cluster down` and `up`.",
        )

    # -- helpers ----------------------------------------------------------------

    def _finish_setup(self) -> None:
        api = kube.connect(self.kubeconfig, self.context)
        with step("creating nodes and installing the Foo CRD"):
            bootstrap.create_nodes(api, self.name, NODES_READY_TIMEOUT_SECONDS)
            bootstrap.install_foo_crd(api, NODES_READY_TIMEOUT_SECONDS)

    def _write_kwokctl_config(self, binaries: dict[str, Path]) -> Path:
        options = {
            "kubeVersion": KUBERNETES.version(),
            "bindAddress": "127.0.0.1",
            "kubeAuthorization": True,
            "kubeApiserverBinary": str(binaries["kube-apiserver"]),
            "kubeControllerManagerBinary": str(binaries["kube-controller-manager"]),
            "kubeSchedulerBinary": str(binaries["kube-scheduler"]),
            "kubectlBinary": str(binaries["kubectl"]),
            "etcdBinary": str(binaries["etcd"]),
            "kwokControllerBinary": str(binaries["kwok"]),
        }
        if self.port:
            options["kubeApiserverPort"] = self.port
        document = {
            "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "kind": "KwokctlConfiguration",
            "options": options,
            "componentsPatches": [
                {
                    "name": "kube-apiserver",
                    "extraArgs": [{"key": key, "value": value} for key, value in API_SERVER_ARGS],
                }
            ],
        }
        path = self.home.cluster_dir(self.name) / "kwokctl.yaml"
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        return path

    def _kwokctl(self, *args: str, binaries: dict[str, Path]) -> None:
        log = self.home.root / f"kwokctl-{self.name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        environment = {
            **os.environ,
            "KWOK_WORKDIR": str(self.home.kwok_workdir),
            # kwokctl looks for kubectl on PATH; ours comes first.
            "PATH": f"{binaries['kubectl'].parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        with log.open("a") as out:
            out.write(f"\n$ kwokctl {' '.join(args)}\n")
            out.flush()
            result = subprocess.run(
                [str(binaries["kwokctl"]), *args], env=environment,
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, check=False,
            )  # fmt: skip
        if result.returncode != 0:
            tail = "\n".join(log.read_text().splitlines()[-12:])
            raise CourseError(
                f"`kwokctl {' '.join(args[:2])}` failed (exit {result.returncode}):\n{tail}",
                f"read the full log at {log}, then run `python -m helpers.cluster down` "
                "and `up` again.",
            )


def ensure_port_free(port: int) -> None:
    """Fail with a clear sentence when something already listens on 127.0.0.1:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            raise CourseError(
                f"Port {port} on 127.0.0.1 is already in use, so the API server cannot listen "
                "there.",
                f"stop the program using it (`ss -ltnp 'sport = :{port}'` shows which) or choose "
                "another port with --port.",
            ) from exc


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); it is not running anything.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        return True


def terminate(pid: int, grace: float = 10.0) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)  # no event tells us another process ended; poll briefly
    if process_alive(pid):
        os.kill(pid, signal.SIGKILL)


def _remove_tree(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path, ignore_errors=True)
