"""Every next step the course's messages suggest exists, and the safe ones work.

Messages end with "next step: run `python -m helpers.cluster logs`" or "`make
up`". A suggestion that does not exist sends a learner nowhere at the worst
moment, so this test reads every such command out of helpers/ (the source,
not a list kept by hand), checks that the command line or the Makefile knows
it, and runs the ones that change nothing against the course's cluster.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cluster.__main__ import _parser

ROOT = Path(__file__).resolve().parents[1]
# A command in single backticks (double backticks are reST literals in docstrings).
CLUSTER_COMMAND = re.compile(r"(?<!`)`(python -m helpers\.cluster [^`]+)`(?!`)")
MAKE_COMMAND = re.compile(r"(?<!`)`make ([a-z][\w-]*)[^`]*`(?!`)")
SAFE = ("status", "kubeconfig", "logs")  # read-only: fine to run against the shared cluster
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
              "kwok-controller")  # fmt: skip


def suggested() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """``({command: files that suggest it}, {make target: files})`` from helpers/."""
    commands: dict[str, set[str]] = {}
    targets: dict[str, set[str]] = {}
    for path in sorted((ROOT / "helpers").rglob("*.py")):
        text = path.read_text()
        where = str(path.relative_to(ROOT))
        for command in CLUSTER_COMMAND.findall(text):
            commands.setdefault(" ".join(command.split()), set()).add(where)
        for target in MAKE_COMMAND.findall(text):
            targets.setdefault(target, set()).add(where)
    return commands, targets


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "helpers.cluster", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip


def test_the_messages_suggest_commands_at_all() -> None:
    commands, targets = suggested()
    assert any(command.endswith(" logs") for command in commands), sorted(commands)
    assert "up" in targets


def test_every_suggested_cluster_command_parses() -> None:
    commands, _ = suggested()
    for command, files in sorted(commands.items()):
        words = shlex.split(command)[3:]
        try:
            _parser().parse_args(words)
        except SystemExit:
            pytest.fail(f"{sorted(files)} suggest `{command}`, which the command line rejects")


def test_every_suggested_make_target_exists() -> None:
    _, targets = suggested()
    makefile = (ROOT / "Makefile").read_text()
    defined = set(re.findall(r"^([A-Za-z][\w-]*):", makefile, re.MULTILINE))
    missing = {target: sorted(files) for target, files in targets.items() if target not in defined}
    assert not missing, f"messages suggest make targets the Makefile lacks: {missing}"


@pytest.mark.cluster
@pytest.mark.parametrize("command", SAFE)
def test_the_safe_suggestions_run_against_the_cluster(command: str) -> None:
    result = cli(command)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    if command == "status":
        assert "ready:      yes" in result.stdout
        assert "processes:  all 5 running (etcd, kube-apiserver, kube-controller-manager" in (
            result.stdout
        )
    if command == "kubeconfig":
        assert Path(result.stdout.strip()).is_file()
    if command == "logs":
        for component in COMPONENTS:
            assert f"--- {component}: the last 20 lines of " in result.stdout
        assert "kwokctl's own log" in result.stdout


@pytest.mark.cluster
def test_logs_of_one_component_and_how_many_lines() -> None:
    result = cli("logs", "--component", "kube-apiserver", "--lines", "3")
    assert result.returncode == 0, result.stderr
    body = result.stdout.split("--- kube-apiserver: the last 3 lines of ", 1)[1]
    assert len(body.splitlines()[1:]) == 3
    assert "--- etcd" not in result.stdout


@pytest.mark.cluster
def test_logs_names_the_components_it_knows() -> None:
    result = cli("logs", "--component", "kubelet")
    assert result.returncode == 2
    assert result.stderr.startswith("error: Cluster ")
    assert "next step: use one of: etcd, kube-apiserver" in result.stderr


def record(home: Path, name: str, backend: str) -> None:
    folder = home / "clusters" / name
    folder.mkdir(parents=True)
    (folder / "state.json").write_text(json.dumps({"backend": backend, "context": "ctx"}))


def test_logs_of_an_existing_cluster_say_what_to_run_instead(tmp_path: Path) -> None:
    record(tmp_path / "home", "theirs", "existing")
    env = {**os.environ, "CFS_HOME": str(tmp_path / "home")}
    result = cli("logs", "--name", "theirs", env=env)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert lines[0].startswith("error: The course did not create cluster 'theirs'")
    assert lines[1].startswith("next step: `kubectl --kubeconfig ")
    assert "get events -A" in lines[1]


def test_logs_of_a_kind_cluster_are_exported_with_kind(tmp_path: Path) -> None:
    """kind itself is not installed here: a stand-in records how it was called."""
    calls = tmp_path / "kind-calls"
    folder = tmp_path / "path"
    folder.mkdir()
    (folder / "kind").write_text(
        f'#!/bin/sh\necho "$@" >> {calls}\n[ "$1" = export ] && mkdir -p "$3"\nexit 0\n'
    )
    (folder / "kind").chmod(0o755)
    home = tmp_path / "home"
    record(home, "ours", "kind")
    env = {**os.environ, "CFS_HOME": str(home), "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}

    result = cli("logs", "--name", "ours", env=env)

    assert result.returncode == 0, result.stderr
    exported = calls.read_text().split()
    assert exported[:2] == ["export", "logs"] and exported[3:] == ["--name", "ours"]
    assert Path(exported[2]).is_dir()
    assert f"to {exported[2]}" in result.stdout


def test_logs_without_a_cluster(tmp_path: Path) -> None:
    env = {**os.environ, "CFS_HOME": str(tmp_path / "home")}
    result = cli("logs", "--name", "nothing-here", env=env)
    assert result.returncode == 2
    assert "no cluster named 'nothing-here'" in result.stderr
    assert "next step: start it with `python -m helpers.cluster up`" in result.stderr
