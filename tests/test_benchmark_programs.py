"""The benchmarks' Go programs: built through the course's cache, and they answer.

benchmarks/run_all compares the course with client-go and sample-controller, so
those two must build from benchmarks/go through :mod:`helpers.cluster.gobuild`
(the cache the control plane's binaries use: a second run finds them in a
second) and must measure what the benchmark says they measure. When the cache
already holds them (after the first ``benchmarks/run_all`` or ``make test``)
these tests take a few seconds; on a machine that has built the control plane,
a first build reuses Go's compiled client-go and takes under a minute.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import kubernetes
import pytest

from helpers import kube
from helpers.cluster import build, gobuild

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="building needs Go on PATH")


def copy_module(target: Path) -> Path:
    shutil.copytree(gobuild.BENCHMARKS_GO_DIR, target)
    return target


def test_an_edit_to_the_go_source_gives_a_new_cache_entry(tmp_path: Path) -> None:
    folder = copy_module(tmp_path / "go")
    go = "go1.26.8"
    before = build.cache_key(gobuild.component(folder), go)
    assert before == build.cache_key(gobuild.component(folder), go)  # stable
    assert before.startswith("benchmarks-") and "-v0.36.3-" in before  # client-go's version
    main = folder / "informerbench" / "main.go"
    main.write_text(main.read_text() + "\n// an edit\n")
    assert build.cache_key(gobuild.component(folder), go) != before


@pytest.fixture(scope="module")
def programs() -> dict[str, Path]:
    return gobuild.ensure_benchmark_programs()


def informerbench(program: Path, streaming: bool, *args: str) -> dict[str, object]:
    environment = {**os.environ, "KUBECONFIG": str(kube.default_kubeconfig()),
                   "KUBE_FEATURE_WatchListClient": str(streaming).lower()}  # fmt: skip
    output = subprocess.run(
        [str(program), *args], capture_output=True, text=True, timeout=120, env=environment
    )
    assert output.returncode == 0, output.stderr
    return json.loads(output.stdout)


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming-list", "paginated-list"])
def test_informerbench_caches_every_configmap_and_says_how_it_listed(
    programs: dict[str, Path], api: kubernetes.client.ApiClient, namespace: str, streaming: bool
) -> None:
    core = kubernetes.client.CoreV1Api(api)
    for i in range(3):
        core.create_namespaced_config_map(namespace, {"metadata": {"name": f"cm-{i}"}})
    there = len(core.list_namespaced_config_map(namespace).items)  # and kube-root-ca.crt, if made
    row = informerbench(
        programs["informerbench"], streaming, "-mode", "sync", "-namespace", namespace,
        "-strip", "-content-type", "json",
    )  # fmt: skip
    assert row["objects"] >= there >= 3, row
    assert row["list_mode"] == ("streaming" if streaming else "list"), row
    assert 0 < row["sync_seconds"] < 60, row


def test_informerbench_replays_the_updates_after_a_resource_version(
    programs: dict[str, Path], api: kubernetes.client.ApiClient, namespace: str
) -> None:
    core = kubernetes.client.CoreV1Api(api)
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "cm"}})
    since = core.list_namespaced_config_map(namespace).metadata.resource_version
    for i in range(20):
        core.patch_namespaced_config_map("cm", namespace, {"data": {"n": str(i)}})
    row = informerbench(
        programs["informerbench"], False, "-mode", "events", "-namespace", namespace,
        "-since", since, "-events", "20",
    )  # fmt: skip
    assert row["events"] == 20 and row["list_mode"] == "list", row


def test_informerbench_says_what_is_missing() -> None:
    program = gobuild.ensure_benchmark_programs()["informerbench"]
    output = subprocess.run([str(program), "-mode", "sync"], capture_output=True, text=True)
    assert output.returncode == 1
    assert output.stderr.strip() == "informerbench: give the namespace to cache with -namespace"


def test_sample_controller_is_the_upstream_program(programs: dict[str, Path]) -> None:
    output = subprocess.run(
        [str(programs["sample-controller"]), "-h"], capture_output=True, text=True, timeout=30
    )
    assert output.returncode == 0, output.stderr
    assert "-kubeconfig" in output.stderr and "-master" in output.stderr
