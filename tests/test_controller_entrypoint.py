"""``python -m helpers.controller`` is the Foo controller program (chapter 05's module hands over
to chapter 08's ``helpers.program.main``); running the module's cells in a notebook is not.

The process tests start real processes; the last one runs the controller against the real
cluster until SIGTERM.
"""

from __future__ import annotations

import os
import runpy
import signal
import subprocess
import sys
from pathlib import Path

import kubernetes
import pytest

from helpers.controller import FOO_GROUP, FOO_PLURAL, FOO_VERSION, foo_body
from helpers.waiting import wait_for

ROOT = Path(__file__).resolve().parents[1]
MODULE = ROOT / "helpers" / "controller.py"


def run_module(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "helpers.controller", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_help_lists_the_programs_flags() -> None:
    result = run_module("--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: foo-controller")
    for flag in ("--kubeconfig", "--namespace", "--workers", "--leader-elect"):
        assert flag in result.stdout
    assert "RuntimeWarning" not in result.stderr, "the module must not be imported twice badly"


def test_bad_input_is_one_sentence_and_exit_code_2() -> None:
    result = run_module("--kubeconfig", "/nonexistent/kubeconfig")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines[-2] == "error: No kubeconfig at /nonexistent/kubeconfig."
    assert lines[-1].startswith("next step: ")
    assert "Traceback" not in result.stderr

    result = run_module("--workers", "0")
    assert result.returncode == 2 and "--workers" in result.stderr


def test_running_the_cells_as_a_script_does_not_start_the_program() -> None:
    """A notebook runs the export cells with ``__name__ == "__main__"`` and no ``__spec__``."""
    namespace = runpy.run_path(str(MODULE), run_name="__main__")
    assert "FooController" in namespace and "main" not in namespace


@pytest.mark.cluster
def test_the_module_runs_the_controller_until_sigterm(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    custom = kubernetes.client.CustomObjectsApi(api)
    apps = kubernetes.client.AppsV1Api(api)
    process = subprocess.Popen(
        [sys.executable, "-m", "helpers.controller", "--namespace", namespace, "--workers", "1"],
        cwd=ROOT,
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        custom.create_namespaced_custom_object(
            FOO_GROUP, FOO_VERSION, namespace, FOO_PLURAL, foo_body("entry", "entry", 1)
        )
        deployments = wait_for(
            apps.list_namespaced_deployment,
            lambda found: "entry" in found,
            what="the controller started with `python -m helpers.controller` to make a Deployment",
            timeout=60,
            namespace=namespace,
        )
        assert deployments["entry"]["spec"]["replicas"] == 1
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=60)
    assert process.returncode == 0, output
