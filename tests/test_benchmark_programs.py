"""The benchmarks' Go programs: built through the course's cache, and they do what the rows say.

benchmarks/run_all compares the course with client-go and sample-controller, so
those must build from benchmarks/go through :mod:`helpers.cluster.gobuild` (the
cache the control plane's binaries use: a second run finds them in a second)
and must measure what the benchmark says they measure: the HTTP version, a
warm connection, the list mode, the memory after updates, the pacing. When the
cache already holds them (after the first ``benchmarks/run_all`` or ``make
test``) these tests take seconds; on a machine that has built the control
plane, a first build reuses Go's compiled client-go and takes about a minute.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import kubernetes
import pytest

from benchmarks import controller_bench, informer_bench
from benchmarks.cluster import ConfigMaps
from helpers import kube
from helpers.cluster import build, gobuild

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="building needs Go on PATH")


def copy_module(target: Path) -> Path:
    shutil.copytree(gobuild.BENCHMARKS_GO_DIR, target)
    return target


def test_the_paced_sample_controller_is_built_apart(tmp_path: Path) -> None:
    """Its main.go is hashed into its own key, not into the wrapper module's."""
    folder = copy_module(tmp_path / "go")
    go = "go1.26.8"
    before = build.cache_key(gobuild.component(folder), go)
    paced = folder / "_paced-sample-controller" / "main.go"
    paced.write_text(paced.read_text() + "\n// an edit\n")
    assert build.cache_key(gobuild.component(folder), go) == before
    (tmp_path / "staged").mkdir()
    gobuild.stage_paced(tmp_path / "staged")
    staged = tmp_path / "staged" / gobuild.PACED_PACKAGE
    assert sorted(path.name for path in staged.iterdir()) == ["controller.go", "main.go"]
    assert "func NewController(" in (staged / "controller.go").read_text()


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


@pytest.mark.parametrize(
    ("streaming", "http1"), [(True, False), (False, True)], ids=["streaming-h2", "list-http1"]
)
def test_informerbench_caches_every_configmap_and_says_how(
    programs: dict[str, Path], api: kubernetes.client.ApiClient, namespace: str,
    streaming: bool, http1: bool,
) -> None:  # fmt: skip
    there = ConfigMaps(programs["configmaps"]).ensure(namespace, 3)  # and kube-root-ca.crt
    row = informerbench(
        programs["informerbench"], streaming, "-mode", "sync", "-namespace", namespace,
        "-strip", "-content-type", "json", *(["-http1"] if http1 else []),
    )  # fmt: skip
    assert row["objects"] == there >= 3, row
    assert row["list_mode"] == ("streaming" if streaming else "list"), row
    assert row["http"] == ("HTTP/1.1" if http1 else "HTTP/2"), row
    assert row["connections_opened"] == 0, row  # the /version request's connection, reused
    assert 0 < row["sync_seconds"] < 60, row


def test_informerbench_replays_the_updates_after_a_resource_version(
    programs: dict[str, Path], namespace: str
) -> None:
    configmaps = ConfigMaps(programs["configmaps"])
    configmaps.ensure(namespace, 2)
    done = configmaps.update(namespace, 20, 2, "t")
    assert (done.updates, done.objects, done.last_value) == (20, 2, "t-19"), done
    assert done.last_key == f"{namespace}/cm-00001", done
    row = informerbench(
        programs["informerbench"], False, "-mode", "events", "-namespace", namespace,
        "-since", done.since, "-events", "20", "-strip", "-http1",
    )  # fmt: skip
    assert row["events"] == 20 and row["list_mode"] == "list", row
    assert (row["http"], row["strip_managed_fields"]) == ("HTTP/1.1", True), row
    assert configmaps.delete(namespace) == 2
    left = kubernetes.client.CoreV1Api(kube.connect()).list_namespaced_config_map(namespace)
    assert [item.metadata.name for item in left.items] == ["kube-root-ca.crt"]  # not the bench's


@pytest.mark.parametrize("impl", ["ours", "client-go"])
def test_a_sync_reads_memory_again_once_the_updates_reached_its_cache(
    programs: dict[str, Path], namespace: str, impl: str
) -> None:
    """The protocol between run_sync and its processes: a row, "KEY VALUE" on stdin, a row."""
    configmaps = ConfigMaps(programs["configmaps"])
    objects = configmaps.ensure(namespace, 50)
    python, go = (["ours"], []) if impl == "ours" else ([], [informer_bench.GO_DEFAULT])
    (run,) = informer_bench.sync_runs(
        namespace, objects, python, go, False, programs["informerbench"], then_updates=True
    )
    child = run.start()
    try:
        first = child.row()
        assert first["objects"] == objects and first["http"], first
        assert "bytes_per_object_after_updates" not in first
        child.notify(configmaps.update(namespace, 10, 10, f"t{time.time_ns()}"))
        second = child.row()
        assert second["bytes_per_object_after_updates"] > 0, second
        child.finish()
    finally:
        if child.process.poll() is None:
            child.process.kill()


def test_configmaps_says_what_is_missing() -> None:
    program = gobuild.ensure_benchmark_programs()["configmaps"]
    output = subprocess.run([str(program), "-namespace", "x"], capture_output=True, text=True)
    assert output.returncode == 1
    assert output.stderr.strip() == (
        "configmaps: give -namespace, and one of -create N, -update N -objects M, -delete"
    )


@pytest.mark.parametrize("qps", [None, 50.0], ids=["default", "qps-50"])
def test_the_paced_sample_controller_paces_each_api_group_as_asked(
    programs: dict[str, Path], tmp_path: Path, qps: float | None
) -> None:
    """It logs the pacing read back from its clients, and a bucket per API group (3)."""
    pacing = controller_bench.Pacing(qps)
    log = tmp_path / "sample-controller.log"
    command = [str(programs["sample-controller-paced"]), *pacing.sample_controller(),
               "--kubeconfig", str(kube.default_kubeconfig())]  # fmt: skip
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        controller_bench.wait_for_line(log, controller_bench.STARTED, process, timeout=60)
    finally:
        controller_bench.stop_process(process)
    sample = controller_bench.controllers(programs["sample-controller-paced"], pacing)[1]
    found = sample.ran_with(log.read_text(), pacing)
    found.pop("syncs"), found.pop("syncs_per_foo")  # it watches every namespace: another
    # test's Foo may be there
    assert found == {"workers": 2, "qps": qps or 5.0, "burst": 10, "token_buckets": 3}, (
        log.read_text()
    )


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
