"""Bad input gets one clear sentence and a next step, never a traceback.

These run the real command line (``python -m helpers.cluster``) in a
subprocess, the way a learner meets it, and check what it prints.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import kube
from helpers.cluster.backends import choose_backend
from helpers.errors import CourseError

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "helpers.cluster", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def assert_clear_error(result: subprocess.CompletedProcess[str], *phrases: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ")
    assert "next step: " in result.stderr
    for phrase in phrases:
        assert phrase in result.stderr


def bin_dir_with(tmp_path: Path, **scripts: str) -> Path:
    """A PATH folder holding only Python and the given stand-in commands."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "python3").symlink_to(sys.executable)
    for name, body in scripts.items():
        path = folder / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
    return folder


def test_no_docker_and_no_go(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(bin_dir_with(tmp_path)), "CFS_HOME": str(tmp_path / "home")}
    result = run_cli("up", env=env)
    assert_clear_error(result, "Neither Docker with kind nor Go", "https://go.dev/dl")


def test_kind_backend_without_docker(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(bin_dir_with(tmp_path)), "CFS_HOME": str(tmp_path / "home")}
    result = run_cli("up", "--backend", "kind", env=env)
    assert_clear_error(result, "Docker is not running")


def test_docker_without_kind(tmp_path: Path) -> None:
    # A stand-in `docker` whose `info` answers like a running engine: the
    # message under test depends only on whether `kind` is on PATH.
    folder = bin_dir_with(tmp_path, docker='echo "28.2.2"')
    env = {**os.environ, "PATH": str(folder), "CFS_HOME": str(tmp_path / "home")}
    result = run_cli("up", "--backend", "kind", env=env)
    assert_clear_error(result, "the `kind` command is not installed")


def test_auto_falls_back_to_local_when_kind_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = bin_dir_with(tmp_path, docker='echo "28.2.2"', go="exit 0")
    monkeypatch.setenv("PATH", str(folder))
    assert choose_backend() == "local"
    assert "kind is not installed; using the local control plane" in capsys.readouterr().out


def test_status_without_a_cluster(tmp_path: Path) -> None:
    env = {**os.environ, "CFS_HOME": str(tmp_path / "home")}
    result = run_cli("status", "--name", "nothing-here", env=env)
    assert result.returncode == 1
    assert "no cluster named 'nothing-here'" in result.stdout


def test_port_in_use_is_reported_before_any_build(tmp_path: Path) -> None:
    """No Go and nothing built: a taken port is the first thing `up` says, not minutes later."""
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)  # an empty binary cache: `up` would have to build
    env = {**os.environ, "PATH": str(bin_dir_with(tmp_path)), "CFS_HOME": str(home)}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli("up", "--backend", "local", "--name", "cfs-port-test", "--port", str(port),
                         env=env)  # fmt: skip
    assert_clear_error(result, f"Port {port} on 127.0.0.1 is already in use", "--port")
    assert not (home / "kwok" / "clusters" / "cfs-port-test").exists()


# -- kubeconfig problems, as a notebook meets them through helpers.kube.connect --


def write_kubeconfig(path: Path, server: str, context: str = "ghost") -> Path:
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": context,
        "clusters": [
            {"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}
        ],
        "users": [{"name": "u", "user": {"token": "not-a-real-token"}}],
        "contexts": [{"name": context, "context": {"cluster": "c", "user": "u"}}],
    }
    path.write_text(yaml.safe_dump(document))
    return path


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_unreachable_cluster_names_the_context(tmp_path: Path) -> None:
    server = f"https://127.0.0.1:{closed_port()}"
    path = write_kubeconfig(tmp_path / "config", server)
    with pytest.raises(CourseError) as caught:
        kube.connect(path)
    assert "context 'ghost'" in caught.value.problem
    assert server in caught.value.problem
    assert "does not answer (connection refused)" in caught.value.problem
    assert "make up" in caught.value.next_step


def test_missing_kubeconfig(tmp_path: Path) -> None:
    with pytest.raises(CourseError, match="No kubeconfig at"):
        kube.connect(tmp_path / "nope")


def test_garbage_kubeconfig(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text("this: [is not: a kubeconfig\n")
    with pytest.raises(CourseError, match="cannot be read"):
        kube.connect(path)


def test_unknown_context(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "config", "https://127.0.0.1:1")
    with pytest.raises(CourseError) as caught:
        kube.connect(path, context="elsewhere")
    assert "no context named 'elsewhere'" in caught.value.problem
    assert "ghost" in caught.value.next_step


def test_cli_reports_a_bad_kubeconfig_without_traceback(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(":::")
    env = {**os.environ, "CFS_HOME": str(tmp_path / "home")}
    result = run_cli("up", "--backend", "existing", "--kubeconfig", str(path), env=env)
    assert_clear_error(result, "cannot be read")
