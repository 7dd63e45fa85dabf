"""The controller as a program: flags, bad input, signals, a bounded graceful shutdown.

Processes are real (``python -m helpers.program`` or the ``foo-controller``
console script) and talk to the real cluster. Bad input must end in one
``error:`` sentence and a ``next step:``, with exit code 2; a signal must end
in exit code 0 within a stated time, with the Lease released.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import kubernetes
import pytest
import yaml

from helpers import kube, rbac
from helpers.cluster import bootstrap
from helpers.controller import FOO_GROUP, FOO_PLURAL, FOO_VERSION, foo_body
from helpers.faults.tcp_proxy import kubeconfig_through
from helpers.leaderelection import RENEW_DEADLINE
from helpers.private_files import write_private
from helpers.program import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_OK,
    SHUTDOWN_TIMEOUT,
    ControllerProcess,
    MeasuredFooController,
    configure_logging,
    parse_args,
)
from helpers.waiting import wait_for
from tests.program_harness import (
    ROOT,
    ControllerRun,
    StallingProxy,
    api_server_address,
    program_args,
)


def run_program(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the program to its end; it should not need long to refuse bad input."""
    return subprocess.run(
        [sys.executable, "-m", "helpers.program", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def assert_one_sentence(result: subprocess.CompletedProcess[str], problem: str) -> str:
    """Exit code 2, and stderr ends with an error line and a next step (no traceback)."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == EXIT_BAD_INPUT, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert [line for line in lines if line.startswith("error: ")] == [lines[-2]], result.stderr
    assert lines[-2].startswith("error: ") and problem in lines[-2], lines[-2]
    assert lines[-1].startswith("next step: "), lines[-1]
    return lines[-2]


# --- flags (no cluster needed) ---------------------------------------------------------------


def test_flags_and_their_defaults() -> None:
    options = parse_args([])
    assert (options.workers, options.namespace, options.leader_elect) == (2, "", False)
    assert (options.metrics_bind_address, options.health_probe_bind_address) == ("0", ":8081")
    durations = (
        options.leader_elect_lease_duration,
        options.leader_elect_renew_deadline,
        options.leader_elect_retry_period,
    )
    assert durations == (15.0, 10.0, 2.0)
    assert parse_args(["--leader-elect-retry-period", "0.5s"]).leader_elect_retry_period == 0.5


@pytest.mark.parametrize(
    ("flags", "level"),
    [
        ([], logging.INFO),
        (["-v", "4"], logging.DEBUG),
        (["--log-level", "warning"], logging.WARNING),
        (["-v", "4", "--log-level", "error"], logging.ERROR),  # the named level wins
    ],
)
def test_log_level_flags(flags: list[str], level: int) -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        options = parse_args(flags)
        configure_logging(options.verbosity, options.log_level)
        assert root.level == level
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--workers", "0"], "must be at least 1"),
        (["--metrics-bind-address", "8080"], "is not [host]:port"),
        (["--shutdown-timeout", "-1"], "must be a positive number of seconds"),
    ],
)
def test_bad_flags_are_refused_with_a_sentence(flags: list[str], message: str) -> None:
    result = run_program(*flags)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_console_script_is_installed() -> None:
    """`foo-controller` is the same program (pyproject's [project.scripts])."""
    script = shutil.which("foo-controller", path=str(Path(sys.executable).parent))
    assert script, "run `pip install -e .` to install the console script"
    result = subprocess.run([script, "--help"], capture_output=True, text=True, check=False)
    assert result.returncode == 0
    assert "--leader-elect" in result.stdout and "--kubeconfig" in result.stdout


# --- bad input ---------------------------------------------------------------------------------


@pytest.fixture
def kubeconfig() -> Path:
    return kube.default_kubeconfig()


def test_unreachable_cluster(kubeconfig: Path, tmp_path: Path) -> None:
    document = yaml.safe_load(kubeconfig.read_text())
    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    for cluster in document["clusters"]:
        cluster["cluster"]["server"] = f"https://127.0.0.1:{port}"
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(document))
    result = run_program("--kubeconfig", str(tmp_path / "kubeconfig"))
    assert_one_sentence(result, f"at https://127.0.0.1:{port} does not answer (connection refused)")


def test_kubeconfig_without_the_context(kubeconfig: Path) -> None:
    result = run_program("--kubeconfig", str(kubeconfig), "--context", "no-such-context")
    assert_one_sentence(result, "has no context named 'no-such-context'")


def test_missing_kubeconfig(tmp_path: Path) -> None:
    result = run_program("--kubeconfig", str(tmp_path / "nowhere"))
    assert_one_sentence(result, f"No kubeconfig at {tmp_path / 'nowhere'}")


@pytest.mark.cluster
def test_missing_permissions(
    api: kubernetes.client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    """A service account with no rules: every permission is named, in one sentence."""
    rbac.service_account_client(api, namespace, "nobody", [])
    token = rbac.service_account_token(api, namespace, "nobody")
    config = rbac.token_kubeconfig(api, token, tmp_path / "nobody")
    result = run_program("--kubeconfig", str(config), *program_args(namespace))
    line = assert_one_sentence(
        result, f"user system:serviceaccount:{namespace}:nobody, which may not"
    )
    for needed in ("list foos.samplecontroller.k8s.io", "watch deployments.apps",
                   "update foos/status.samplecontroller.k8s.io", "patch events",
                   "get leases.coordination.k8s.io named foo-controller"):  # fmt: skip
        assert needed in line, needed


@pytest.mark.cluster
def test_port_in_use(api: kubernetes.client.ApiClient, namespace: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = program_args(namespace)
        args[args.index("--metrics-bind-address") + 1] = f"127.0.0.1:{port}"
        result = run_program(*args)
    assert_one_sentence(result, f"Cannot serve metrics on 127.0.0.1:{port}: Address already in use")


@pytest.mark.cluster
def test_missing_crd(api: kubernetes.client.ApiClient, namespace: str) -> None:
    """Deletes the Foo CRD (and so every Foo in the cluster) and installs it again."""
    extensions = kubernetes.client.ApiextensionsV1Api(api)
    extensions.delete_custom_resource_definition(bootstrap.FOO_CRD_NAME)
    try:
        wait_for(
            extensions.list_custom_resource_definition,
            lambda crds: bootstrap.FOO_CRD_NAME not in crds,
            what="the Foo CRD to be deleted",
            timeout=60,
        )
        result = run_program(*program_args(namespace))
        assert_one_sentence(
            result, "does not serve foos.samplecontroller.k8s.io/v1alpha1: the Foo "
            "CustomResourceDefinition is not installed"
        )  # fmt: skip
        assert "kubectl apply -f manifests/foo-crd.yaml" in result.stderr
    finally:
        bootstrap.install_foo_crd(api, timeout=60)


# --- the flags, in a running process ----------------------------------------------------------


@pytest.fixture
def other_namespace(api: kubernetes.client.ApiClient, namespace: str) -> Iterator[str]:
    """A second namespace (for the Lease), deleted afterwards."""
    core = kubernetes.client.CoreV1Api(api)
    name = f"{namespace[:50]}-lease"
    core.create_namespace({"metadata": {"name": name, "labels": {"course-test": "true"}}})
    yield name
    core.delete_namespace(name)


@pytest.fixture
def runs() -> Iterator[list[ControllerRun]]:
    started: list[ControllerRun] = []
    yield started
    for run in started:
        run.stop()


@pytest.mark.cluster
def test_flags_reach_the_process(
    api: kubernetes.client.ApiClient,
    namespace: str,
    other_namespace: str,
    runs: list[ControllerRun],
    kubeconfig: Path,
    tmp_path: Path,
) -> None:
    """--master wins over the kubeconfig's server; --namespace scopes the informers; --workers,
    -v, the Lease's name and namespace, and a metrics address of 0 (off) all take effect."""
    document = yaml.safe_load(kubeconfig.read_text())
    host, port = api_server_address(kubeconfig)
    with socket.socket() as closed:  # the kubeconfig points at a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        nowhere = closed.getsockname()[1]
    for cluster in document["clusters"]:
        cluster["cluster"]["server"] = f"https://127.0.0.1:{nowhere}"
    wrong = tmp_path / "wrong-server"
    write_private(wrong, yaml.safe_dump(document))
    run = ControllerRun(
        ["--kubeconfig", str(wrong), "--master", f"https://{host}:{port}",
         "--namespace", namespace, "--workers", "3", "-v", "4",
         "--leader-elect", "--leader-elect-identity", "flags",
         "--leader-elect-lease-name", "flags-lease",
         "--leader-elect-lease-namespace", other_namespace,
         "--metrics-bind-address", "0", "--health-probe-bind-address", "127.0.0.1:0"],
        name="flags",
    )  # fmt: skip
    runs.append(run)
    run.wait_for_line("Started workers", 30)
    assert run.has_line("Starting workers count=3")
    foos = f"/apis/{FOO_GROUP}/{FOO_VERSION}/namespaces/{namespace}/{FOO_PLURAL}"
    assert run.has_line(re.escape(f"ListWatch('{foos}')")), run.log()
    assert run.has_line(r"serving probes on http://127\.0\.0\.1:")
    assert not run.has_line("serving metrics")
    run.wait_for_line(r"^D.*successfully renewed lease", 30)  # -v 4: debug lines
    lease = kubernetes.client.CoordinationV1Api(api).read_namespaced_lease(
        "flags-lease", other_namespace
    )
    assert lease.spec.holder_identity == "flags"
    create_foo(api, namespace, "flagged")
    wait_for(
        kubernetes.client.AppsV1Api(api).list_namespaced_deployment,
        lambda deployments: "flagged" in deployments,
        what="Deployment flagged",
        timeout=30,
        namespace=namespace,
    )
    run.signal(signal.SIGTERM)
    assert run.wait(30) == EXIT_OK


# --- signals and shutdown --------------------------------------------------------------------


def lease_holder(api: kubernetes.client.ApiClient, namespace: str) -> str:
    lease = kubernetes.client.CoordinationV1Api(api).read_namespaced_lease(
        "foo-controller", namespace
    )
    return lease.spec.holder_identity or ""


def shuts_down_gracefully(
    api: kubernetes.client.ApiClient, namespace: str, runs: list[ControllerRun], signum: int
) -> None:
    """Exit 0 without waiting for --shutdown-timeout (nothing is in flight), the Lease released,
    every thread joined. Half the timeout tells "at once" from "waited it out" on a busy machine."""
    run = ControllerRun(program_args(namespace, identity="only"), name="only")
    runs.append(run)
    run.wait_for_line("started leading", 30)
    # Signalled before its caches sync, the controller stops as sample-controller's Run does,
    # with no "Shutting down workers" (it never started them): signal once they run.
    run.wait_for_line("Started workers", 30)
    assert lease_holder(api, namespace) == "only"
    sent = run.signal(signum)
    assert run.wait(30) == EXIT_OK
    took = time.monotonic() - sent
    assert took < SHUTDOWN_TIMEOUT / 2, f"shutdown took {took:.1f} s"
    assert lease_holder(api, namespace) == ""
    lines = run.log()
    order = ["shutting down: received", "Shutting down workers", "stopped leading",
             "released lease", "reflector foos: stopped", "shut down"]  # fmt: skip
    missing = [text for text in order if text not in lines]
    assert not missing, f"no line with {missing}:\n{lines}"
    positions = [lines.index(text) for text in order]
    assert positions == sorted(positions), lines


@pytest.mark.cluster
def test_sigterm_shuts_down_gracefully(
    api: kubernetes.client.ApiClient, namespace: str, runs: list[ControllerRun]
) -> None:
    shuts_down_gracefully(api, namespace, runs, signal.SIGTERM)


@pytest.mark.cluster
def test_sigint_shuts_down_gracefully(
    api: kubernetes.client.ApiClient, namespace: str, runs: list[ControllerRun]
) -> None:
    shuts_down_gracefully(api, namespace, runs, signal.SIGINT)


@pytest.mark.cluster
def test_second_signal_exits_at_once(
    api: kubernetes.client.ApiClient,
    namespace: str,
    runs: list[ControllerRun],
    kubeconfig: Path,
    tmp_path: Path,
) -> None:
    """A shutdown stuck on a silent API server (releasing the Lease can take the renew
    deadline, 10 s) is cut short by a second SIGTERM: exit code 1 at once."""
    with StallingProxy(api_server_address(kubeconfig)) as proxy:
        proxied = kubeconfig_through(proxy, kubeconfig, tmp_path / "proxied")
        run = ControllerRun(
            ["--kubeconfig", str(proxied), *program_args(namespace, identity="slow")], name="slow"
        )
        runs.append(run)
        run.wait_for_line("started leading", 30)
        proxy.stall()
        run.signal(signal.SIGTERM)
        run.wait_for_line("stopped leading", 10)  # the workers are done; the release hangs
        assert run.process.poll() is None, "the first signal alone ended the process"
        second = run.signal(signal.SIGTERM)
        assert run.wait(10) == EXIT_FAILED
        # At once, not after the release's renew deadline (10 s) the first signal waits for.
        assert time.monotonic() - second < RENEW_DEADLINE / 2
        assert run.has_line("received SIGTERM again: exiting at once")


@pytest.mark.cluster
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads Linux's /proc")
def test_shutdown_signals_are_blocked_in_every_thread(
    api: kubernetes.client.ApiClient, namespace: str, runs: list[ControllerRun]
) -> None:
    """SIGTERM and SIGINT are blocked in every thread but the one waiting for them in
    sigwait (which unblocks them while it waits). With a signal.signal handler instead, about
    one SIGTERM in ten sent as the workers started was lost (the main thread slept on a lock
    the signal did not wake)."""
    run = ControllerRun(program_args(namespace, identity="masked"), name="masked")
    runs.append(run)
    run.wait_for_line("Started workers", 30)
    wanted = (1 << (signal.SIGTERM - 1)) | (1 << (signal.SIGINT - 1))
    masks = {}
    for task in Path(f"/proc/{run.process.pid}/task").iterdir():
        fields = dict(
            line.split(":\t", 1) for line in (task / "status").read_text().splitlines()
            if ":\t" in line
        )  # fmt: skip
        masks[task.name] = int(fields["SigBlk"], 16)
    assert len(masks) > 5, masks  # informers, elector, workers, servers, signals
    open_to_signals = [task for task, mask in masks.items() if mask & wanted != wanted]
    assert len(open_to_signals) == 1, masks
    run.signal(signal.SIGINT)
    assert run.wait(30) == EXIT_OK


# --- in-flight syncs: finished, but within a bound ----------------------------------------------


class HeldBackController(MeasuredFooController):
    """A controller whose syncs wait for the test's go-ahead (an in-flight sync on demand)."""

    entered = threading.Event()
    go_ahead = threading.Event()

    def sync_handler(self, key: str) -> None:
        type(self).entered.set()
        assert type(self).go_ahead.wait(60)
        super().sync_handler(key)


@pytest.fixture
def held_back() -> Iterator[type[HeldBackController]]:
    cls = type("HeldBack", (HeldBackController,), {})
    cls.entered, cls.go_ahead = threading.Event(), threading.Event()
    yield cls
    cls.go_ahead.set()


def start_in_process(
    api: kubernetes.client.ApiClient, namespace: str, controller_class: type, *flags: str
) -> tuple[ControllerProcess, threading.Thread, list[int]]:
    options = parse_args(program_args(namespace, "--shutdown-timeout", *flags, identity="inproc"))
    lost: list[int] = []
    process = ControllerProcess(
        api, options, on_lost_lease=lost.append, controller_class=controller_class
    )
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(process.run()), name="controller-run")
    thread.start()
    return process, thread, codes


def create_foo(api: kubernetes.client.ApiClient, namespace: str, name: str) -> None:
    kubernetes.client.CustomObjectsApi(api).create_namespaced_custom_object(
        FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, foo_body(name, name, 1)
    )


@pytest.mark.cluster
def test_shutdown_lets_an_in_flight_sync_finish(
    api: kubernetes.client.ApiClient, namespace: str, held_back: type[HeldBackController]
) -> None:
    process, thread, codes = start_in_process(api, namespace, held_back, "20")
    try:
        create_foo(api, namespace, "in-flight")
        assert held_back.entered.wait(30)
        process.shut_down("test")  # the sync is in flight ...
        held_back.go_ahead.set()  # ... and is allowed to finish
        thread.join(30)
        assert codes == [EXIT_OK]
        # The sync did its work before the process let go: the Deployment exists.
        apps = kubernetes.client.AppsV1Api(api)
        assert apps.read_namespaced_deployment("in-flight", namespace).metadata.name
        registry = process.metrics.registry
        labels = {"controller": "foo", "result": "success"}
        assert registry.get_sample_value("controller_syncs_total", labels) == 1
        assert lease_holder(api, namespace) == ""
    finally:
        held_back.go_ahead.set()
        process.shut_down("test cleanup")
        thread.join(30)


@pytest.mark.cluster
def test_shutdown_gives_up_on_a_stuck_sync_and_keeps_the_lease(
    api: kubernetes.client.ApiClient, namespace: str, held_back: type[HeldBackController]
) -> None:
    """Past --shutdown-timeout: exit code 1, and the Lease is *not* released (the stuck sync
    may still write, so nobody else may lead until the Lease runs out)."""
    process, thread, codes = start_in_process(api, namespace, held_back, "1")
    try:
        create_foo(api, namespace, "stuck")
        assert held_back.entered.wait(30)
        began = time.monotonic()
        process.shut_down("test")
        thread.join(30)
        # It waited its --shutdown-timeout (1 s), then gave up: main() returned while the sync
        # is still held (go_ahead is set only below), which waiting for the sync could not do.
        assert time.monotonic() - began >= 1.0
        assert not thread.is_alive() and not held_back.go_ahead.is_set()
        assert codes == [EXIT_FAILED] and process.stuck
        assert lease_holder(api, namespace) == "inproc"
    finally:
        held_back.go_ahead.set()  # main() would end the process here; we let the sync end
        for worker in process.controller.worker_threads:
            worker.join(30)
        thread.join(30)


# --- in a Pod --------------------------------------------------------------------------------


@pytest.mark.cluster
def test_in_cluster_configuration(
    api: kubernetes.client.ApiClient,
    namespace: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Inside a Pod: KUBERNETES_SERVICE_HOST/PORT and the mounted service account files."""
    from helpers.program import connect, default_lease_namespace
    from helpers.startup_checks import who_am_i

    config = kube.default_kubeconfig()
    monkeypatch.delenv("KUBECONFIG", raising=False)  # as in a Pod: else $KUBECONFIG would win
    core = kubernetes.client.CoreV1Api(api)
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "in-pod"}})
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text(rbac.service_account_token(api, namespace, "in-pod"))
    shutil.copy(api.configuration.ssl_ca_cert, account / "ca.crt")
    (account / "namespace").write_text(namespace)
    host, port = api_server_address(config)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(port))

    options = parse_args([])
    client = connect(options, account)
    assert who_am_i(client) == f"user system:serviceaccount:{namespace}:in-pod"
    assert default_lease_namespace(options, account) == namespace
    # An explicit --kubeconfig still wins over the Pod's identity.
    explicit = connect(parse_args(["--kubeconfig", str(config)]), account)
    assert who_am_i(explicit) != f"user system:serviceaccount:{namespace}:in-pod"


def test_in_cluster_without_a_token_is_one_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from helpers.errors import CourseError
    from helpers.program import connect

    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    with pytest.raises(CourseError, match="its service account cannot be used"):
        connect(parse_args([]), tmp_path)


@pytest.mark.parametrize(
    ("flags", "env", "in_pod", "found"),
    [
        (["--kubeconfig", "flag"], "a:b", True, ["flag"]),
        ([], "a:b", True, ["a", "b"]),
        ([], "", True, []),
        (["--context", "c"], "", True, ["HOME/.kube/config"]),
        ([], "", False, ["HOME/.kube/config"]),
    ],
)
def test_the_kubeconfig_is_found_as_controller_runtime_finds_it(
    flags: list[str],
    env: str,
    in_pod: bool,
    found: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--kubeconfig, else $KUBECONFIG's files, else a Pod's service account ([]), else
    ~/.kube/config (controller-runtime's loadConfig); never the course's own kubeconfig, even
    when the course's cluster is up: whoever starts the program names it."""
    from helpers.home import DEFAULT_CLUSTER_NAME, CourseHome
    from helpers.program import kubeconfig_files

    home = CourseHome(tmp_path / "course")
    home.make_cluster_dir(DEFAULT_CLUSTER_NAME)
    home.kubeconfig(DEFAULT_CLUSTER_NAME).write_text("the course's")
    monkeypatch.setenv("CFS_HOME", str(home.root))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    if env:
        monkeypatch.setenv("KUBECONFIG", env.replace(":", os.pathsep))
    else:
        monkeypatch.delenv("KUBECONFIG", raising=False)
    for name in ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        if in_pod:
            monkeypatch.setenv(name, "1")
        else:
            monkeypatch.delenv(name, raising=False)
    expected = [Path(p.replace("HOME", str(tmp_path / "home"))) for p in found]
    assert kubeconfig_files(parse_args(flags)) == expected
