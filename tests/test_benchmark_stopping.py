"""A benchmark stopped with SIGTERM stops the controller it started (benchmarks/stopping.py).

Python ends a process at once on SIGTERM by default, and a controller the
benchmark started would live on, holding its probe port, with its namespace
left behind. This starts controller_bench on the course's cluster, waits until
our controller runs as its child, sends the benchmark SIGTERM, and checks that
the controller is gone and its namespace deleted.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import kubernetes
import psutil
import pytest

from helpers import namespaces
from helpers.cluster import processes
from helpers.waiting import wait_for

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[1]


def controllers_started_by(pid: int) -> list[int]:
    """Our controller processes that ``pid`` started and that still run."""
    try:
        started = psutil.Process(pid).children()
    except psutil.NoSuchProcess:
        return []
    return [
        child.pid for child in started if "helpers.program" in processes.command_line(child.pid)
    ]


def test_a_controller_benchmark_stopped_with_sigterm_stops_its_controller(
    api: kubernetes.client.ApiClient, tmp_path: Path
) -> None:
    log = tmp_path / "controller_bench.log"
    command = [
        sys.executable,
        "-m",
        "benchmarks.controller_bench",
        "--pacing",
        "50",
        "--repeat",
        "1",
        "--foos",
        "5",
        "--sample-controller",
        str(tmp_path / "never-started"),
    ]  # ours runs first
    with log.open("w") as out:
        benchmark = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    controller = namespace = None
    try:
        deadline = time.monotonic() + 60
        while controller is None:
            assert benchmark.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"no controller started in 60 s:\n{log.read_text()}"
            found = controllers_started_by(benchmark.pid)
            controller = found[0] if found else None
            time.sleep(0.05)
        arguments = processes.command_line(controller)
        namespace = arguments[arguments.index("--namespace") + 1]

        benchmark.send_signal(signal.SIGTERM)
        assert benchmark.wait(120) == 128 + signal.SIGTERM, log.read_text()
        assert not processes.exists(controller), f"controller {controller} outlived the benchmark"
        core = kubernetes.client.CoreV1Api(api)
        wait_for(
            core.list_namespace,
            lambda found: namespace not in found or found[namespace]["status"]["phase"] != "Active",
            what=f"namespace {namespace} deleted", timeout=30,
        )  # fmt: skip
    finally:
        if benchmark.poll() is None:
            benchmark.kill()
            benchmark.wait()
        if controller is not None and processes.exists(controller):
            os.kill(controller, signal.SIGKILL)
        if namespace is not None:  # what the benchmark did not delete, when it failed to
            namespaces.delete_namespace(api, namespace)  # a namespace already gone is fine
