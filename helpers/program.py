"""The Foo controller as a program: flags, connection, leader election, signals, exit codes.

Counterpart: sample-controller's ``main.go`` (``--kubeconfig``, ``--master``,
``BuildConfigFromFlags``, a signal handler, ``controller.Run``), with what
kubebuilder's ``cmd/main.go`` adds for production: ``--leader-elect``,
``--metrics-bind-address``, ``--health-probe-bind-address``.

Run it as ``python -m helpers.program`` or ``foo-controller`` (the console
script), or ``python -m helpers.controller`` (chapter 05's module hands over
to :func:`main`).

The life of the process:

1. Parse flags; connect (``--kubeconfig``/``--master``, or the Pod's service
   account when run in a cluster); check that the Foo API is served and that
   we have every permission we need. Any problem: one ``error:`` line, one
   ``next step:`` line, exit code 2.
2. Serve ``/metrics`` and ``/healthz``/``/readyz``; start the informers (a
   standby replica keeps warm caches, so a failover starts work at once).
3. With ``--leader-elect``, campaign for the Lease; the workers start only
   once we lead. Without it, they start at once.
4. Until a signal: SIGTERM or SIGINT starts a graceful shutdown; a second
   signal exits at once (code 1).

Graceful shutdown, in order: stop handing out keys and let in-flight syncs
finish (at most ``--shutdown-timeout`` seconds), then release the Lease (one
request), stop the informers and the HTTP servers, exit 0. If the syncs do not
finish in time, exit 1 *without* releasing the Lease: a sync may still write,
so nobody else may lead until the Lease runs out.

Losing the Lease (renewal failed for ``--leader-elect-renew-deadline``) exits
at once with code 1, as client-go programs do (``klog.Fatalf`` in
``OnStoppedLeading``): another replica is about to lead, and a restart is the
simplest way back to a clean standby.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType

import kubernetes
from kubernetes.client.exceptions import ApiException

from helpers import kube, preflight
from helpers.apierrors import explain
from helpers.clock import StopEvent
from helpers.controller import REQUEST_TIMEOUT, CacheSyncError, FooController
from helpers.controller_metrics import ControllerMetrics
from helpers.endpoints import Endpoint, checks_route, metrics_route, parse_address, serve
from helpers.errors import CourseError
from helpers.leaderelection import (
    LEASE_DURATION,
    RENEW_DEADLINE,
    RETRY_PERIOD,
    LeaderCallbacks,
    LeaderElector,
    LeaseLock,
)

log = logging.getLogger("helpers.program")

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
SHUTDOWN_TIMEOUT = 20.0
"""Seconds in-flight syncs get to finish after SIGTERM (the Deployment allows 30 s in all)."""
LEADER_HEALTH_TOLERANCE = 20.0
"""/healthz fails once a leader is this long past its lease without renewing (as kube-
controller-manager's ``--leader-elect`` healthz adaptor)."""
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
"""Where the kubelet puts a Pod's token, the cluster's CA and the Pod's namespace."""


# --- flags ----------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """sample-controller's flags, and the production ones kubebuilder adds."""
    parser = argparse.ArgumentParser(
        prog="foo-controller",
        description="Keep a Deployment for every Foo (kubernetes/sample-controller, in Python).",
    )
    connection = parser.add_argument_group("connection (default: $KUBECONFIG, or in a Pod its "
                                           "service account)")  # fmt: skip
    connection.add_argument("--kubeconfig", help="path to a kubeconfig")
    connection.add_argument("--context", help="kubeconfig context (default: the current one)")
    connection.add_argument("--master", help="API server URL; overrides the kubeconfig's")
    work = parser.add_argument_group("work")
    work.add_argument("--namespace", default="", help="only this namespace (default: all)")
    work.add_argument("--workers", type=_positive_int, default=2, help="sync threads (2)")
    work.add_argument(
        "--shutdown-timeout", type=_seconds, default=SHUTDOWN_TIMEOUT,
        help=f"seconds in-flight syncs get after SIGTERM ({SHUTDOWN_TIMEOUT:g})",
    )  # fmt: skip
    election = parser.add_argument_group("leader election")
    election.add_argument("--leader-elect", action="store_true", help="run workers only as leader")
    election.add_argument("--leader-elect-lease-name", default="foo-controller")
    election.add_argument(
        "--leader-elect-lease-namespace",
        help="(default: the Pod's namespace in a cluster, else --namespace, else default)",
    )
    election.add_argument("--leader-elect-identity", help="(default: hostname_uuid)")
    election.add_argument("--leader-elect-lease-duration", type=_seconds, default=LEASE_DURATION)
    election.add_argument("--leader-elect-renew-deadline", type=_seconds, default=RENEW_DEADLINE)
    election.add_argument("--leader-elect-retry-period", type=_seconds, default=RETRY_PERIOD)
    serving = parser.add_argument_group("serving")
    serving.add_argument(
        "--metrics-bind-address", default="0", type=_address,
        help="[host]:port for /metrics, 0 to turn off (0)",
    )  # fmt: skip
    serving.add_argument(
        "--health-probe-bind-address", default=":8081", type=_address,
        help="[host]:port for /healthz and /readyz, 0 to turn off (:8081)",
    )  # fmt: skip
    logs = parser.add_argument_group("logging")
    logs.add_argument(
        "-v", "--v", dest="verbosity", type=int, default=0,
        help="klog-style verbosity: 0 info, 4 and up debug (0)",
    )  # fmt: skip
    logs.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    return parser.parse_args(argv)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _seconds(text: str) -> float:
    value = float(text.removesuffix("s"))
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    return value


def _address(text: str) -> str:
    try:
        parse_address(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def configure_logging(verbosity: int, level: str | None) -> None:
    """One line per record on stderr, klog's first letter for the level, and the time."""
    chosen = logging.getLevelName(level.upper()) if level else (
        logging.DEBUG if verbosity >= 4 else logging.INFO
    )  # fmt: skip
    logging.basicConfig(
        level=chosen,
        stream=sys.stderr,
        format="%(levelname).1s%(asctime)s %(threadName)s %(name)s] %(message)s",
        datefmt="%m%d %H:%M:%S",
        force=True,
    )


# --- connecting -----------------------------------------------------------------------------


def in_cluster() -> bool:
    """Are we in a Pod (the kubelet sets these for every container)?"""
    return bool(
        os.environ.get("KUBERNETES_SERVICE_HOST") and os.environ.get("KUBERNETES_SERVICE_PORT")
    )


def connect(
    options: argparse.Namespace, account: Path = SERVICE_ACCOUNT
) -> kubernetes.client.ApiClient:
    """An API client from the flags (client-go ``BuildConfigFromFlags``), checked to answer.

    No ``--kubeconfig``, ``--context`` or ``--master`` and running in a Pod: the
    service account's token and CA (``account``). Otherwise the kubeconfig
    (``--kubeconfig``, else ``$KUBECONFIG``, else ``~/.kube/config``), with the
    server replaced by ``--master`` if given.
    """
    configuration = kubernetes.client.Configuration()
    if in_cluster() and not (options.kubeconfig or options.context or options.master):
        context, server = "in-cluster", load_in_cluster(configuration, account)
    else:
        path = Path(options.kubeconfig).expanduser() if options.kubeconfig else None
        path = path or kube.default_kubeconfig()
        context, server = kube.describe_context(path, options.context)
        try:
            kubernetes.config.load_kube_config(
                config_file=str(path), context=context, client_configuration=configuration
            )
        except Exception as exc:  # the loader raises many types for one cause: a bad file
            raise CourseError(
                f"The kubeconfig at {path} cannot be used for context '{context}': {exc}",
                "fix the file, or point --kubeconfig at another one.",
            ) from exc
        if options.master:
            configuration.host = server = options.master.rstrip("/")
    configuration.retries = False  # fail fast; informers and the elector retry with backoff
    api = kubernetes.client.ApiClient(configuration)
    kube.probe(api, context, server, timeout=kube.PROBE_TIMEOUT_SECONDS)
    return api


def load_in_cluster(configuration: kubernetes.client.Configuration, account: Path) -> str:
    """Fill ``configuration`` from the Pod's service account; return the server URL."""
    loader = kubernetes.config.incluster_config.InClusterConfigLoader(
        token_filename=str(account / "token"), cert_filename=str(account / "ca.crt")
    )
    try:
        loader.load_and_set(configuration)
    except kubernetes.config.ConfigException as exc:
        raise CourseError(
            f"Running in a Pod, but its service account cannot be used: {exc}",
            "check that the Pod mounts a service account token (automountServiceAccountToken).",
        ) from exc
    return configuration.host


def default_lease_namespace(options: argparse.Namespace, account: Path = SERVICE_ACCOUNT) -> str:
    """The Pod's own namespace in a cluster; else ``--namespace``; else ``default``."""
    if options.leader_elect_lease_namespace:
        return options.leader_elect_lease_namespace
    namespace_file = account / "namespace"
    if in_cluster() and namespace_file.exists():
        return namespace_file.read_text().strip()
    return options.namespace or "default"


# --- the process ----------------------------------------------------------------------------


class MeasuredFooController(FooController):
    """FooController whose syncs are counted and timed (``controller_sync*`` metrics)."""

    metrics: ControllerMetrics | None = None

    def sync_handler(self, key: str) -> None:
        if self.metrics is None:
            super().sync_handler(key)
            return
        with self.metrics.sync():
            super().sync_handler(key)


def exit_now(code: int) -> None:
    """Flush the log and end the process at once, whatever threads still run."""
    logging.shutdown()
    os._exit(code)


class ControllerProcess:
    """One running controller: informers, workers, metrics, probes and (maybe) an elector.

    :meth:`run` blocks until :meth:`shut_down` is called (by a signal handler,
    or a test) and returns the exit code. ``on_lost_lease`` is what happens when
    leadership is lost (default: exit at once); ``controller_class`` lets a test
    hold a sync back. Every thread it starts is named and
    joined, except worker threads that outlive ``--shutdown-timeout``: then
    ``stuck`` is True and the caller must end the process (:func:`main` does).
    """

    def __init__(
        self,
        api: kubernetes.client.ApiClient,
        options: argparse.Namespace,
        *,
        on_lost_lease: Callable[[int], None] = exit_now,
        controller_class: type[MeasuredFooController] = MeasuredFooController,
    ) -> None:
        self.api = api
        self.options = options
        self.on_lost_lease = on_lost_lease
        self.metrics = ControllerMetrics("foo")
        self.controller = controller_class.new(api, namespace=options.namespace or None)
        self.controller.metrics = self.metrics
        self.metrics.watch_queue(self.controller.workqueue.metrics)
        self.elector = self._elector() if options.leader_elect else None
        self.endpoints: list[Endpoint] = []
        self.stuck = False
        self._lock = threading.Lock()
        self._wake = StopEvent()  # set when main has something to do: a signal, a failure
        self._shutting_down = False
        self._failed: str | None = None
        self._workers_stop = StopEvent()
        self._workers_thread: threading.Thread | None = None
        self._elector_stop = StopEvent()
        self._elector_thread: threading.Thread | None = None

    def _elector(self) -> LeaderElector:
        options = self.options
        identity = options.leader_elect_identity or f"{socket.gethostname()}_{uuid.uuid4()}"
        lease_namespace = default_lease_namespace(options)
        lock = LeaseLock.on_cluster(
            self.api, lease_namespace, options.leader_elect_lease_name, identity
        )
        callbacks = LeaderCallbacks(
            on_started_leading=self._started_leading,
            on_stopped_leading=self._stopped_leading,
            on_new_leader=lambda holder: log.info("new leader: %s", holder or "(none)"),
        )
        return LeaderElector(
            lock,
            callbacks,
            lease_duration=options.leader_elect_lease_duration,
            renew_deadline=options.leader_elect_renew_deadline,
            retry_period=options.leader_elect_retry_period,
            release_on_cancel=True,
            name=lock.describe(),
        )

    # -- running -----------------------------------------------------------------------------

    def serve(self) -> None:
        """Start the metrics and probe servers (one server if both addresses are the same)."""
        metrics = {"/metrics": metrics_route(self.metrics.registry)}
        probes = {
            "/healthz": checks_route("healthz", {"ping": _ok, "leader-election": self._lease_ok}),
            "/readyz": checks_route("readyz", {"ping": _ok, "informers": self._caches_synced}),
        }
        addresses = (self.options.metrics_bind_address, self.options.health_probe_bind_address)
        if addresses[0] == addresses[1]:
            plans = [("metrics and probes", addresses[0], metrics | probes)]
        else:
            plans = [("metrics", addresses[0], metrics), ("probes", addresses[1], probes)]
        for name, address, routes in plans:
            try:
                endpoint = serve(name, address, routes)
            except OSError as err:
                self._stop_endpoints()
                raise CourseError(
                    f"Cannot serve {name} on {address}: {err.strerror or err}.",
                    "choose another address with --metrics-bind-address / "
                    "--health-probe-bind-address (0 turns one off).",
                ) from err
            if endpoint is not None:
                self.endpoints.append(endpoint)

    def run(self) -> int:
        """Run until :meth:`shut_down` (or a failure); return the exit code."""
        if not self.endpoints:
            self.serve()
        for informer in self.controller.informers:
            informer.start()
        if self.elector is not None:
            self.metrics.set_leader(self.elector.name, False)
            self._elector_thread = threading.Thread(
                target=self.elector.run, args=(self._elector_stop,), name="leader-elector"
            )
            self._elector_thread.start()
        else:
            self._start_workers()
        self._wake.wait()
        return self._stop_everything()

    def shut_down(self, reason: str) -> None:
        """Begin a graceful shutdown; safe to call from a signal handler, and more than once."""
        with self._lock:
            if self._shutting_down:
                return
            self._shutting_down = True
        log.info("shutting down: %s", reason)
        self._wake.set()

    def _start_workers(self) -> None:
        def work() -> None:
            try:
                self.controller.run(self.options.workers, self._workers_stop)
            except CacheSyncError:
                if not self._workers_stop.is_set():
                    self._fail("the informers stopped before their caches synced")
            except Exception as err:
                log.exception("the controller stopped")
                self._fail(f"the controller stopped: {err}")

        self._workers_thread = threading.Thread(target=work, name="foo-controller")
        self._workers_thread.start()

    def _fail(self, reason: str) -> None:
        self._failed = reason
        self.shut_down(reason)

    def _stop_everything(self) -> int:
        """Workers (bounded), then the Lease, the informers and the servers."""
        timeout = self.options.shutdown_timeout
        self._workers_stop.set()  # no new keys; workers finish the key they hold
        if self._workers_thread is not None:
            self._workers_thread.join(timeout)
            if self._workers_thread.is_alive():
                self.stuck = True
                self._failed = f"in-flight syncs did not finish within {timeout:g}s"
                log.error("%s; the lease is not released (it runs out by itself)", self._failed)
                if self.elector is not None:
                    # A stuck sync may still write: nobody else may lead before the lease ends.
                    self.elector.release_on_cancel = False
            elif self.elector is not None:
                self._log_leadership("stopped")
        if self._elector_thread is not None:
            self._elector_stop.set()  # the elector releases the Lease if it holds it
            self._elector_thread.join(self.options.leader_elect_renew_deadline + REQUEST_TIMEOUT)
        for informer in self.controller.informers:
            informer.stop()
        for informer in self.controller.informers:
            if not informer.join(REQUEST_TIMEOUT):
                log.warning("informer %s still has threads running after stop", informer.name)
        self._stop_endpoints()
        log.info("shut down%s", f" after a failure: {self._failed}" if self._failed else "")
        return EXIT_FAILED if self._failed else EXIT_OK

    def _stop_endpoints(self) -> None:
        for endpoint in self.endpoints:
            endpoint.stop()
        self.endpoints.clear()

    # -- leader election callbacks (on the elector's thread) --------------------------------

    def _started_leading(self, leading: StopEvent) -> None:
        with self._lock:
            if self._shutting_down:
                return  # won the race against a signal: the elector releases at once
            assert self.elector is not None
            self.metrics.set_leader(self.elector.name, True)
            self._log_leadership("started")
            self._start_workers()

    def _stopped_leading(self) -> None:
        assert self.elector is not None
        self.metrics.set_leader(self.elector.name, False)
        if self._elector_stop.is_set():
            return  # our own shutdown: _stop_everything has stopped the workers
        with self._lock:
            leading = self._workers_thread is not None
        if leading:
            self._log_leadership("stopped", level=logging.ERROR, why=": leader election lost")
            self.on_lost_lease(EXIT_FAILED)

    def _log_leadership(self, what: str, level: int = logging.INFO, why: str = "") -> None:
        """The two lines a timeline is built from (the monotonic clock is system-wide)."""
        assert self.elector is not None
        log.log(
            level,
            "%s leading lease %s as %s (monotonic %.6f)%s",
            what,
            self.elector.name,
            self.elector.lock.identity,
            time.monotonic(),
            why,
        )

    # -- health ------------------------------------------------------------------------------

    def _caches_synced(self) -> str | None:
        waiting = [i.name for i in self.controller.informers if not i.has_synced()]
        return f"caches not synced yet: {', '.join(waiting)}" if waiting else None

    def _lease_ok(self) -> str | None:
        return None if self.elector is None else self.elector.check(LEADER_HEALTH_TOLERANCE)


def _ok() -> None:
    return None


# --- main -----------------------------------------------------------------------------------


def install_signal_handlers(process: ControllerProcess) -> None:
    """SIGTERM/SIGINT: graceful shutdown; the second one: exit at once (code 1)."""
    received: list[str] = []

    def handle(signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        received.append(name)
        if len(received) > 1:
            log.warning("received %s again: exiting at once", name)
            exit_now(EXIT_FAILED)
        process.shut_down(f"received {name} (send it again to exit at once)")

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, handle)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the Foo controller until a signal; return the exit code."""
    options = parse_args(argv)
    configure_logging(options.verbosity, options.log_level)
    try:
        api = connect(options)
        preflight.check_foo_api(api)
        lease = None
        if options.leader_elect:
            lease = (default_lease_namespace(options), options.leader_elect_lease_name)
        preflight.check_permissions(api, options.namespace, lease=lease)
        process = ControllerProcess(api, options)
        process.serve()
    except CourseError as exc:
        print(f"error: {exc.problem}\nnext step: {exc.next_step}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ApiException as exc:
        print(f"error: {explain(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    install_signal_handlers(process)
    code = process.run()
    if process.stuck:
        exit_now(code)  # worker threads still run; do not wait for them
    return code


if __name__ == "__main__":
    sys.exit(main())
