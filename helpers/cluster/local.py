"""The Docker-less backend: a real control plane from local binaries, run by kwokctl.

``kwokctl create cluster --runtime binary`` starts etcd, kube-apiserver,
kube-controller-manager, kube-scheduler and the kwok controller as ordinary
processes on this machine. kwok plays kubelet for the Node objects we create,
so Deployments get ReplicaSets and Pods get scheduled and become Ready, exactly
as on a real cluster, without containers.

Everything binds to 127.0.0.1, and kwokctl's state lives under the course's
home folder (``KWOK_WORKDIR``), never in ``~/.kwok`` or ``~/.kube/config``.
kwokctl writes the cluster's CA and admin keys with mode 0644 and its folders
0750, under the umask it inherits; so it and the components run with umask
077 (:data:`PRIVATE_UMASK`): what they write is their owner's alone.

Loopback is not private: every account on the machine can connect to
127.0.0.1. So nothing the cluster listens on answers without a credential that
only the user who started it can read (:data:`SECURED_ARGS`): etcd speaks HTTPS
and demands a client certificate signed by the cluster's CA (the API server's,
and the chapters' that compact etcd: both read the key from the course's 0700
folder); kube-controller-manager and kube-scheduler serve no port at all, nor
does kwok; the API server demands a token or a certificate for anything beyond
its health and version. :meth:`LocalCluster.sharing_problem` checks a running
cluster against that, port by port, before a workshop hands its address to
other accounts of this machine.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil
import yaml

from .. import kube
from ..errors import CourseError
from ..home import CourseHome, remove_cluster_dir
from . import bootstrap, processes
from .build import KUBERNETES, ensure_all_built
from .identity import record_state
from .processes import Identity
from .progress import step

if TYPE_CHECKING:
    from ..etcd import EtcdTLS

START_TIMEOUT_SECONDS = 300
# After a laptop sleep the components that died are started again; give the
# API server this long to become ready before we call the cluster broken.
REVIVE_TIMEOUT_SECONDS = 60
# /readyz checks etcd with its own timeout (4 s when etcd does not answer).
READYZ_TIMEOUT_SECONDS = 10

# The API server's watch cache answers watches and lists from memory, so
# compacting etcd never shows through it. For PodTemplates (a kind nothing in
# the course relies on) we turn the cache off, so chapter 01 and the tests can
# make a resourceVersion expire for real and meet 410 Gone straight from etcd.
# kind-config.yaml passes the same flag.
API_SERVER_ARGS = (("watch-cache-sizes", "podtemplates#0"),)

# kube-controller-manager gives each of its controllers a client of its own,
# paced at 20 requests a second (burst 30) unless told otherwise. Two hundred
# Deployments then wait on the deployment and ReplicaSet controllers' buckets
# for most of a minute, whatever the controller that made them does, so a
# controller run at QPS 50 would measure kube-controller-manager's pacing, not
# its own (benchmarks/controller_bench.py). Kubernetes' own scalability jobs
# raise it to 100 (burst 100), so that their load is not held back by it
# either; kind-config.yaml passes the same flags.
CONTROLLER_MANAGER_ARGS = (("kube-api-qps", "100"), ("kube-api-burst", "100"))

SECURED_ARGS = {
    "etcd": (
        ("client-cert-auth", "true"), ("trusted-ca-file", "{ca}"),
        ("cert-file", "{cert}"), ("key-file", "{key}"),
        ("peer-client-cert-auth", "true"), ("peer-trusted-ca-file", "{ca}"),
        ("peer-cert-file", "{cert}"), ("peer-key-file", "{key}"),
    ),
    "kube-apiserver": (
        ("etcd-cafile", "{ca}"), ("etcd-certfile", "{cert}"), ("etcd-keyfile", "{key}"),
    ),
}  # fmt: skip
"""Flags added so that each component's port demands a credential (``{ca}``, ``{cert}`` and
``{key}``: the CA, and the certificate and key kwokctl made for the cluster's admin, which
serve etcd as they serve the API server). etcd accepts only clients, and peers, with a
certificate that CA signed; the API server shows one."""
SECURED_OVERRIDES = {
    "etcd": (
        ("listen-client-urls", "https://127.0.0.1:{etcd}"),
        ("advertise-client-urls", "https://127.0.0.1:{etcd}"),
        ("listen-peer-urls", "https://127.0.0.1:{peer}"),
        ("initial-advertise-peer-urls", "https://127.0.0.1:{peer}"),
        ("initial-cluster", "node0=https://127.0.0.1:{peer}"),
    ),
    "kube-apiserver": (("etcd-servers", "https://127.0.0.1:{etcd}"),),
    "kube-controller-manager": (("secure-port", "0"),),
    "kube-scheduler": (("secure-port", "0"),),
    "kwok-controller": (("server-address", ""), ("node-port", "0")),
}
"""Flags kwokctl sets that are replaced: etcd on HTTPS (kwokctl gives it plain HTTP);
kube-controller-manager and kube-scheduler without their HTTPS port (kwokctl lets anyone
read its /metrics and /healthz there; nothing of the course reads them); kwok without its
server (kwokctl starts it on plain HTTP, unauthenticated, with kubelet-like exec, logs and
port-forward handlers; no chapter reads a Pod's log or execs into one, and kwok's Pods run
nothing). Leader election, not these ports, tells the course the controllers are up."""
NODES_READY_TIMEOUT_SECONDS = 120
PRIVATE_UMASK = 0o077
"""kwokctl and the components it starts write keys, kubeconfigs and etcd's data: 0600/0700."""

CREATE_LOCK = Path(tempfile.gettempdir()) / "controllers-from-scratch-create.lock"
"""One lock per machine, held while kwokctl picks ports and starts a cluster (see below)."""


@contextlib.contextmanager
def port_picking_lock(path: Path = CREATE_LOCK) -> Iterator[None]:
    """Hold the machine-wide lock while kwokctl picks its ports and starts the processes.

    kwokctl gives etcd, kube-controller-manager and kwok ports that are free at
    that moment. Two clusters created at once (two course folders, a workshop
    machine, a test's second cluster) can pick the same ones: one etcd then fails
    to bind and its API server quietly uses the other cluster's etcd. ``create``
    binds every port before it returns, so a create that waits for this lock sees
    them taken and picks others.
    """
    with os.fdopen(_open_lock_file(path)) as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            with step("waiting for another cluster to finish starting (they pick ports in turn)"):
                fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _open_lock_file(path: Path) -> int:
    """A descriptor to lock: the file is created 0644, never world-writable, and a link put in
    its place is not followed. flock needs no write access, so another user of the machine
    opens the same file read-only and takes part in the turns."""
    try:
        try:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            with contextlib.suppress(PermissionError):  # ours: an older version made it 0666
                os.fchmod(descriptor, 0o644)
            return descriptor
        except PermissionError:
            return os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise CourseError(
            f"{path} is a symbolic link, and the course does not follow one there (it could "
            "point anywhere).",
            f"remove it (`rm {path}`); the course makes a plain file in its place.",
        ) from exc


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
        """Where etcd listens (HTTPS on loopback; plain HTTP for a cluster an older version
        started), from kwokctl's saved configuration. An HTTPS URL's client certificate is
        remembered for :class:`helpers.etcd.EtcdClient` (:attr:`etcd_tls`)."""
        advertised = self._arg("etcd", "advertise-client-urls")
        url: str | None
        if advertised:
            url = advertised.split(",")[0].rstrip("/")
        else:
            port = (self._saved_configuration().get("options") or {}).get("etcdPort")
            url = f"http://127.0.0.1:{port}" if port else None
        tls = self.etcd_tls
        if url and url.startswith("https:") and tls is not None:
            from ..etcd import remember_tls

            remember_tls(url, tls)
        return url

    @property
    def etcd_tls(self) -> EtcdTLS | None:
        """The CA, certificate and key the API server shows etcd (None: plain HTTP)."""
        files = [self._arg("kube-apiserver", f"etcd-{name}") for name in ("cafile", "certfile",
                                                                           "keyfile")]  # fmt: skip
        if not all(files):
            return None
        from ..etcd import EtcdTLS

        return EtcdTLS(*(Path(str(path)) for path in files))

    def _arg(self, component: str, flag: str) -> str | None:
        """The value kwokctl's saved configuration gives ``--flag`` of ``component`` (the last
        one, as the component's flag parser keeps it), or None."""
        found = None
        for arg in self._component_definition(component, missing_ok=True).get("args") or []:
            if isinstance(arg, str) and arg.startswith(f"--{flag}="):
                found = arg.split("=", 1)[1]
        return found

    def _saved_configuration(self) -> dict[str, Any]:
        """The KwokctlConfiguration kwokctl saved in kwok.yaml ({} if there is none to read)."""
        try:
            documents = list(yaml.safe_load_all((self.kwok_dir / "kwok.yaml").read_text()))
        except (OSError, yaml.YAMLError):
            return {}
        for document in documents:
            if isinstance(document, dict) and document.get("kind") == "KwokctlConfiguration":
                return document
        return {}

    @property
    def identities_file(self) -> Path:
        """What each component's process was when we started it (see :mod:`.processes`)."""
        return self.home.cluster_dir(self.name) / "processes.json"

    # -- lifecycle ----------------------------------------------------------

    def up(self) -> None:
        """Start the cluster, or leave a healthy one as it is; replace a broken one.

        A cluster whose components died (a laptop that slept, a reboot) gets
        them started again first: replacing it would lose what the learner
        created in it, so that happens only when reviving did not help.
        """
        self.home.make_root()  # 0700 before anything is written in it
        if self.kwok_dir.exists() or self.kubeconfig.exists():
            problem = self._health_after_revival()
            if problem is None:
                print(f"==> cluster '{self.name}' is already running; nothing to start.")
                self._tighten()
                self._write_state()
                self.record_identities()
                self._finish_setup()
                return
            print(
                f"==> cluster '{self.name}' is broken ({problem}) and restarting its components "
                "did not help; deleting it and starting a new one (what was created in it is lost)."
            )
            self.down(quiet=True)
        if self.port:
            ensure_port_free(self.port)  # before a build that may take minutes
        binaries = ensure_all_built(self.home)
        self._write_state()  # first, so that `down` finds a cluster whose start failed half way
        with port_picking_lock(), step(f"starting the control plane '{self.name}' (etcd, "
                  "kube-apiserver, kube-controller-manager, kube-scheduler, kwok)"):  # fmt: skip
            # etcd's ports go into the flags that make it HTTPS, so they are chosen here, in
            # turn with other clusters starting, as kwokctl would choose them.
            config = self._write_kwokctl_config(binaries, etcd_ports=free_ports(2))
            try:
                self._kwokctl(
                    "create", "cluster", "--name", self.name, "--runtime", "binary",
                    "--config", str(config), "--kubeconfig", str(self.kubeconfig),
                    "--wait", f"{START_TIMEOUT_SECONDS}s", "--timeout", f"{START_TIMEOUT_SECONDS}s",
                    binaries=binaries,
                )  # fmt: skip
            finally:
                self.record_identities()  # also what a failed create left running
        self.kubeconfig.chmod(0o600)  # it holds the cluster's admin credentials
        self._tighten()
        self._write_state()  # now with the identity the tests check (see identity.py)
        self._finish_setup()

    def down(self, *, quiet: bool = False) -> None:
        """Stop every process this cluster started, and only those; then remove its state.

        Neither Go nor the built binaries are needed. kwokctl's own ``delete
        cluster`` would SIGKILL whatever process now has a recorded number, and
        for the binary runtime all it does is kill the processes and delete its
        folder, so we do both ourselves, with each process verified first.
        (SIGKILL, as kwokctl does: the API server's graceful shutdown takes
        longer than a minute, and the cluster's data is deleted next anyway.)
        """
        ours = self._running()
        strangers = {
            component: pid
            for component, pid in self.processes().items()
            if component not in ours and processes.exists(pid)
        }
        stopped = processes.stop(list(ours.values()), grace=0)
        if self.kwok_dir.is_dir() and not self.kwok_dir.is_symlink():
            shutil.rmtree(self.kwok_dir)  # kwokctl's folder, inside the course's own home
        remove_cluster_dir(self.home, self.name)
        if not quiet:
            for component, pid in sorted(strangers.items()):
                print(
                    f"    pid {pid} (from {component}.pid) is not {component} any more: "
                    "another program has that number now; left it alone."
                )
            print(f"==> cluster '{self.name}' is gone ({stopped} processes stopped).")

    def log_file(self, component: str) -> Path:
        """Where ``component`` writes its log (kwokctl's layout, kept when we restart it)."""
        return self.kwok_dir / "logs" / f"{component}.log"

    def logs(self, component: str | None, lines: int) -> None:
        """Print the last ``lines`` lines of each component's log, and where the logs are."""
        folder = self.kwok_dir / "logs"
        names = [name for name in self._component_names() if self.log_file(name).exists()]
        if component is not None and component not in names:
            raise CourseError(
                f"Cluster '{self.name}' has no log for a component named '{component}'.",
                f"use one of: {', '.join(names) or '(none yet)'}.",
            )
        print(f"==> the logs of cluster '{self.name}' are in {folder}")
        print(f"    kwokctl's own log: {self.home.root / f'kwokctl-{self.name}.log'}")
        for name in [component] if component else names:
            print(f"\n--- {name}: the last {lines} lines of {self.log_file(name)}")
            for line in tail(self.log_file(name), lines):
                print(line)

    # -- which processes are ours ---------------------------------------------

    def processes(self) -> dict[str, int]:
        """``{component: pid}`` as kwokctl's pid files say: maybe stale, see :meth:`running`."""
        found: dict[str, int] = {}
        pid_dir = self.kwok_dir / "pids"
        if pid_dir.is_dir():
            for pid_file in pid_dir.glob("*.pid"):
                text = pid_file.read_text().strip()
                if text.isdigit():
                    found[pid_file.stem] = int(text)
        return found

    def running(self) -> dict[str, int]:
        """``{component: pid}`` of the components whose recorded process is verifiably ours."""
        return {component: identity.pid for component, identity in self._running().items()}

    def record_identities(self) -> None:
        """Remember which process each component is, so a reused pid is never mistaken for it."""
        running = self._running()
        document = {component: identity.to_json() for component, identity in running.items()}
        self.identities_file.parent.mkdir(parents=True, exist_ok=True)
        self.identities_file.write_text(json.dumps(document, indent=2) + "\n")

    def _running(self) -> dict[str, Identity]:
        recorded = self._recorded_identities()
        found: dict[str, Identity] = {}
        for component, pid in self.processes().items():
            now = processes.identify(pid)
            if now is not None and self._is_ours(component, now, recorded.get(component)):
                found[component] = now
        return found

    def _is_ours(self, component: str, now: Identity, recorded: Identity | None) -> bool:
        """Is the process ``now`` running as ``component``'s pid the one this cluster started?"""
        if recorded is not None and recorded.pid == now.pid:
            if recorded.same_process(now):
                return True
            if recorded.since_boot is not None:
                return False  # a start in ticks since boot cannot drift: another process
            # An older record holds only the wall-clock start, which drifts with the
            # boot time (see processes.py): let kwokctl's files decide, as below.
        # No record of this pid (a cluster started before we kept one, or a
        # process kwokctl started during a failed `up`): kwokctl's files decide.
        # Its component runs the binary kwok.yaml names, from this cluster's
        # folder, and was started before its pid file was written.
        binary = self._component_definition(component, missing_ok=True).get("binary")
        if not binary:
            return False
        try:
            written = (self.kwok_dir / "pids" / f"{component}.pid").stat().st_mtime
        except OSError:
            return False
        return (
            now.exe == os.path.realpath(binary)
            and processes.command_line(now.pid)[:1] == [binary]
            and now.started <= written + 2.0  # wall-clock start: see processes.py
        )

    def _recorded_identities(self) -> dict[str, Identity]:
        try:
            document = json.loads(self.identities_file.read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(document, dict):
            return {}
        found = {component: Identity.from_json(data) for component, data in document.items()}
        return {component: identity for component, identity in found.items() if identity}

    # -- health -------------------------------------------------------------

    def health_problem(self) -> str | None:
        """None when every component runs and the API server is ready; else what is wrong.

        Ready means ``/readyz``, which checks etcd among other things; ``/version``
        answers from the API server alone, even while etcd is frozen.
        """
        if not self._component_names():
            return "no processes recorded"
        dead = self.dead_components()
        if dead:
            return f"{', '.join(sorted(dead))} not running"
        try:
            api = kube.connect(self.kubeconfig, self.context, probe_timeout=3)
        except CourseError as exc:
            return exc.problem
        return kube.readiness_problem(api, timeout=READYZ_TIMEOUT_SECONDS)

    def _health_after_revival(self) -> str | None:
        """The cluster's problem after starting its dead components again (None: healthy)."""
        problem = self.health_problem()
        if problem is None or not self._component_names():
            return problem  # healthy, or nothing kwokctl defined that could be started again
        try:
            revived = self.revive()
        except (OSError, CourseError) as exc:
            return f"{problem}; starting it again failed: {str(exc).splitlines()[0]}"
        if revived:
            print(f"==> cluster '{self.name}': {problem}; started {', '.join(revived)} again.")
        deadline = time.monotonic() + REVIVE_TIMEOUT_SECONDS
        while (problem := self.health_problem()) is not None and time.monotonic() < deadline:
            time.sleep(1)  # a starting process announces nothing we could wait on
        return problem

    # -- may other accounts of this machine have its address? -------------------

    def sharing_problem(self) -> str | None:
        """None when this running cluster may be handed to other accounts of this machine (a
        workshop hub's attendees): every port its processes listen on demands a credential
        that only this user can read, and the course's folder is closed to others. Else what
        is not so, in one sentence. Checked on the processes as they run, not on flags alone:
        each listening port must be the API server's or etcd's, and etcd's must refuse a
        client without a certificate."""
        running = self._running()
        if not running:
            return f"cluster '{self.name}' is not running"
        root = self.home.root.stat()
        if root.st_mode & 0o077 or root.st_uid != os.getuid():
            return f"{self.home.root} is open to other users (`make up` makes it 0700)"
        options = self._saved_configuration().get("options") or {}
        etcd = (self.etcd_url or "").removeprefix("https://127.0.0.1:")
        secured = (
            etcd.isdigit()
            and self._arg("etcd", "client-cert-auth") == "true"
            and self._arg("etcd", "peer-client-cert-auth") == "true"
            and (self._arg("etcd", "listen-peer-urls") or "").startswith("https://")
        )
        if not secured:
            return (
                "its etcd answers without a client certificate (it was started by a version of "
                "the course that did not secure it: `make down && make up` starts it secured)"
            )
        allowed = {int(etcd), options.get("etcdPeerPort"), options.get("kubeApiserverPort")}
        for component, port in listening_ports(running):
            if port not in allowed:
                return (
                    f"{component} listens on port {port}, which the course does not secure (a "
                    "cluster started by another version: `make down && make up`)"
                )
        for port in sorted(int(p) for p in allowed - {options.get("kubeApiserverPort")} if p):
            if answers_without_certificate(port):
                return f"etcd's port {port} answers a client that shows no certificate"
        return None

    # -- one component at a time (failure drills, and reviving) -----------------

    def stop_component(self, component: str, *, grace: float = 10.0) -> None:
        """Stop one component (say ``kube-apiserver``) and leave the rest running.

        SIGTERM, then SIGKILL after ``grace`` seconds (``grace=0``: SIGKILL at
        once); returns when the process has exited. A component that is not
        running, or whose pid now belongs to another program, is left as it is.
        """
        if component not in self._component_names():
            raise CourseError(
                f"The cluster has no component named '{component}'.",
                f"use one of: {', '.join(sorted(self._component_names()))}.",
            )
        identity = self._running().get(component)
        if identity is not None:
            processes.stop([identity], grace=grace)

    def start_component(self, component: str) -> int:
        """Start a stopped component again with the command line kwokctl gave it; return its pid.

        kwokctl can stop and start a whole cluster but offers no command for one
        component, so we replay the component's saved definition from kwok.yaml.
        """
        definition = self._component_definition(component)
        with self.log_file(component).open("a") as out:
            process = subprocess.Popen(
                [definition["binary"], *definition.get("args", [])],
                cwd=definition.get("workDir", str(self.kwok_dir)),
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,  # like kwokctl: not tied to our terminal or process
                umask=PRIVATE_UMASK,
            )  # fmt: skip
        (self.kwok_dir / "pids" / f"{component}.pid").write_text(str(process.pid))
        self.record_identities()
        return process.pid

    def revive(self) -> list[str]:
        """Start every component whose process has died; return their names.

        On a real node the kubelet restarts control-plane static pods that exit.
        kube-controller-manager and kube-scheduler exit on purpose when they
        cannot renew their leader lease for 10 s (an API server down that long,
        or a laptop asleep), so this plays the kubelet's part. Components start
        in kwokctl's order: etcd before the API server before the rest.
        """
        dead = self.dead_components()
        for name in dead:
            self.start_component(name)
        return dead

    def dead_components(self) -> list[str]:
        """The components kwokctl defined whose process is not running, in start order."""
        running = self._running()
        return [name for name in self._component_names() if name not in running]

    def _component_names(self) -> list[str]:
        """The components kwokctl defined for this cluster, in its start order."""
        names = [d["name"] for d in self._saved_configuration().get("components") or []]
        return names or sorted(self.processes())

    def _component_definition(self, component: str, *, missing_ok: bool = False) -> dict[str, Any]:
        for definition in self._saved_configuration().get("components") or []:
            if definition.get("name") == component:
                return definition
        if missing_ok:
            return {}
        raise CourseError(
            f"kwokctl's configuration has no component '{component}'.",
            "recreate the cluster with `python -m helpers.cluster down` and `up`.",
        )

    # -- helpers ----------------------------------------------------------------

    def _write_state(self) -> None:
        record_state(self.home, self.name, "local", self.context)

    def _tighten(self) -> None:
        """Make the home 0700 and the keys and kubeconfigs 0600, saying so if any were wider
        (kwokctl run by an older version wrote them 0644)."""
        changed = self.home.tighten()
        if changed:
            print(
                f"==> made {len(changed)} file(s) or folder(s) under {self.home.root} private "
                "(0600 or 0700): they held keys or credentials readable by other users."
            )

    def _finish_setup(self) -> None:
        api = kube.connect(self.kubeconfig, self.context)
        with step("creating nodes and installing the Foo CRD"):
            bootstrap.create_nodes(api, self.name, NODES_READY_TIMEOUT_SECONDS)
            bootstrap.install_foo_crd(api, NODES_READY_TIMEOUT_SECONDS)
        with step("waiting for the controller manager and the scheduler"):
            bootstrap.wait_for_controllers(api, NODES_READY_TIMEOUT_SECONDS)

    def _write_kwokctl_config(
        self, binaries: dict[str, Path], etcd_ports: tuple[int, ...] = ()
    ) -> Path:
        options: dict[str, Any] = {
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
        extra: dict[str, list[dict[str, Any]]] = {
            "kube-apiserver": [{"key": key, "value": value} for key, value in API_SERVER_ARGS],
            "kube-controller-manager": [
                {"key": key, "value": value} for key, value in CONTROLLER_MANAGER_ARGS
            ],
        }
        if etcd_ports:
            etcd, peer = etcd_ports
            options.update(etcdPort=etcd, etcdPeerPort=peer)
            pki = self.kwok_dir / "pki"  # kwokctl writes them there before it starts anything
            files = {"ca": pki / "ca.crt", "cert": pki / "admin.crt", "key": pki / "admin.key"}
            for component, flags in SECURED_OVERRIDES.items():
                extra.setdefault(component, []).extend(
                    {"key": key, "value": value.format(etcd=etcd, peer=peer), "override": True}
                    for key, value in flags
                )
            for component, flags in SECURED_ARGS.items():
                extra.setdefault(component, []).extend(
                    {"key": key, "value": value.format(**files)} for key, value in flags
                )
        document = {
            "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "kind": "KwokctlConfiguration",
            "options": options,
            "componentsPatches": [
                {"name": name, "extraArgs": args} for name, args in extra.items()
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
                [str(binaries["kwokctl"]), *args], env=environment, umask=PRIVATE_UMASK,
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, check=False,
            )  # fmt: skip
        if result.returncode != 0:
            tail = "\n".join(log.read_text().splitlines()[-12:])
            raise CourseError(
                f"`kwokctl {' '.join(args[:2])}` failed (exit {result.returncode}):\n{tail}",
                f"read the full log at {log}, then run `python -m helpers.cluster down` "
                "and `up` again.",
            )


def listening_ports(running: dict[str, Identity]) -> list[tuple[str, int]]:
    """``(component, port)`` for every TCP port the components listen on and every UDP port
    they hold, on any address, sorted by port."""
    found = set()
    for component, identity in running.items():
        try:
            sockets = psutil.Process(identity.pid).net_connections(kind="inet")
        except psutil.Error:
            continue
        for each in sockets:
            udp = each.type == socket.SOCK_DGRAM and not each.raddr
            if each.status == psutil.CONN_LISTEN or udp:
                found.add((component, each.laddr.port))
    return sorted(found, key=lambda pair: (pair[1], pair[0]))


def answers_without_certificate(port: int) -> bool:
    """Does HTTPS on 127.0.0.1:``port`` answer a request from a client with no certificate?"""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the question is what it gives, not who it is
    try:
        with urllib.request.urlopen(
            f"https://127.0.0.1:{port}/version", timeout=5, context=context
        ) as answer:
            answer.read()
    except urllib.error.HTTPError:
        return True  # an HTTP answer came back: the request got through
    except (OSError, ssl.SSLError):
        return False
    return True


def free_ports(count: int) -> tuple[int, ...]:
    """``count`` different ports free on 127.0.0.1 at this moment (held open together while
    they are chosen, so they differ)."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for each in sockets:
            each.bind(("127.0.0.1", 0))
        return tuple(each.getsockname()[1] for each in sockets)
    finally:
        for each in sockets:
            each.close()


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


def tail(path: Path, lines: int) -> list[str]:
    """The last ``lines`` lines of a file, read from its end (an API server log grows large)."""
    if lines <= 0:
        return []
    with path.open("rb") as log:
        end = log.seek(0, os.SEEK_END)
        block, data = 64 * 1024, b""
        while end > 0 and data.count(b"\n") <= lines:
            start = max(0, end - block)
            log.seek(start)
            data = log.read(end - start) + data
            end = start
    return data.decode(errors="replace").splitlines()[-lines:]
