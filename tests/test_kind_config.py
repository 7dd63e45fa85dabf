"""kind-config.yaml is checked by kind's own code, since kind cannot run here.

``cluster/go/kindcheck`` decodes the file strictly into kind's published
v1alpha4 types (what ``kind create cluster --config`` does first) and reports
the node image kind's release defaults to.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from helpers.cluster.build import KUBERNETES
from helpers.cluster.local import API_SERVER_ARGS, CONTROLLER_MANAGER_ARGS

ROOT = Path(__file__).resolve().parents[1]
CHECKER = ROOT / "cluster" / "go" / "kindcheck"


def kindcheck(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["go", "run", ".", str(config)],
        cwd=CHECKER,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly"},
    )


@pytest.fixture(scope="module")
def decoded() -> dict:
    result = kindcheck(ROOT / "kind-config.yaml")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_one_control_plane_and_two_workers(decoded: dict) -> None:
    roles = [node["role"] for node in decoded["cluster"]["nodes"]]
    assert roles == ["control-plane", "worker", "worker"]


def test_every_node_uses_kinds_own_image_pinned_by_digest(decoded: dict) -> None:
    images = {node["image"] for node in decoded["cluster"]["nodes"]}
    assert images == {decoded["kindDefaultImage"]}
    (image,) = images
    assert re.fullmatch(r"kindest/node:v\d+\.\d+\.\d+@sha256:[0-9a-f]{64}", image)


def test_kind_runs_the_same_minor_version_as_the_local_control_plane(decoded: dict) -> None:
    image = decoded["cluster"]["nodes"][0]["image"]
    kind_minor = re.search(r":v(\d+\.\d+)\.", image).group(1)
    local_minor = re.match(r"v(\d+\.\d+)\.", KUBERNETES.version()).group(1)
    assert kind_minor == local_minor


def test_api_server_stays_on_loopback(decoded: dict) -> None:
    assert decoded["cluster"]["networking"]["apiServerAddress"] == "127.0.0.1"


def test_checker_rejects_an_unknown_field(tmp_path: Path) -> None:
    """The check can fail: a misspelt field is what kind would reject."""
    broken = tmp_path / "kind.yaml"
    text = (ROOT / "kind-config.yaml").read_text().replace("apiServerAddress", "apiServerAdress")
    broken.write_text(text)
    result = kindcheck(broken)
    assert result.returncode != 0
    assert "apiServerAdress" in result.stderr


def extra_args(decoded: dict, component: str) -> dict[str, str]:
    """The flags kind-config.yaml's ClusterConfiguration patch gives ``component``."""
    patches = [yaml.safe_load(text) for text in decoded["cluster"]["kubeadmConfigPatches"]]
    (cluster_configuration,) = [p for p in patches if p["kind"] == "ClusterConfiguration"]
    return {a["name"]: a["value"] for a in cluster_configuration[component]["extraArgs"]}


def test_kind_and_local_give_the_api_server_the_same_extra_flags(decoded: dict) -> None:
    """Chapters behave alike on both backends only if the API servers are configured alike."""
    assert extra_args(decoded, "apiServer") == dict(API_SERVER_ARGS)


def test_kind_and_local_pace_kube_controller_manager_alike(decoded: dict) -> None:
    """The controller benchmark and chapters 06-08 wait on its controllers at the same pace."""
    assert extra_args(decoded, "controllerManager") == dict(CONTROLLER_MANAGER_ARGS)
