"""The benchmark's Python side on the cluster: what its rows count is what the API server sent.

benchmarks/informer_bench.py reads the events workload's watch and the sync's
first LIST without decoding them (``_wire_events``, ``_wire_sync``), in JSON
and protobuf, the way our informer reads them. Such a row is only worth
quoting if it counts exactly the events the watch replays (no partial or
merged frames) and reads the whole LIST, so that is checked here on the real
cluster; and so are the facts every row carries (HTTP version, connections
opened), the API server's CPU time, and the benchmark's namespaces.
"""

from __future__ import annotations

import json

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

from benchmarks import cluster, informer_bench
from benchmarks.connections import ConnectionRecorder
from helpers import kube, namespaces
from helpers.errors import CourseError
from tests.replayed_watch import updates_to_replay

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("wire", ["json", "protobuf"])
def test_the_read_only_rows_count_exactly_the_replayed_events(
    api: kubernetes.client.ApiClient, namespace: str, wire: str
) -> None:
    since = updates_to_replay(api, namespace, 25)
    row = informer_bench.measure_wire_events(wire, namespace, since, 25, timeout_seconds=20)
    assert (row["impl"], row["events"], row["frames"]) == (f"wire-{wire}", 25, 25), row
    assert row["events_per_second"] > 0 and row["bytes"] > 25 * 100, row
    assert (row["http"], row["connections_opened"]) == ("HTTP/1.1", 0), row


def test_the_read_only_sync_reads_the_whole_list_in_one_response(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """More objects than one page: the watch cache still answers resourceVersion=0 in one go."""
    core = kubernetes.client.CoreV1Api(api)
    made = cluster.ConfigMaps(programs()["configmaps"]).ensure(namespace, 520)
    assert made >= 520
    rows = {
        wire: informer_bench.measure_wire_sync(wire, namespace)
        for wire in informer_bench.WIRE_ACCEPT
    }
    assert rows["json"]["limit"] == 500 < 520, rows
    # The same request, decoded here: every object in one response, no continue token.
    response = informer_bench._wire_get(
        api, f"/api/v1/namespaces/{namespace}/configmaps",
        [("resourceVersion", "0"), ("limit", "500")], "application/json",
    )  # fmt: skip
    body = response.data
    response.release_conn()
    listed = json.loads(body)
    assert len(listed["items"]) >= 520, len(listed["items"])
    assert not listed["metadata"].get("continue"), listed["metadata"]
    # The list's resourceVersion may have moved on in between: a few bytes' leeway.
    assert abs(rows["json"]["bytes"] - len(body)) < 40, (rows, len(body))
    assert 0.3 * len(body) < rows["protobuf"]["bytes"] < len(body), (rows, len(body))
    assert all(row["sync_seconds"] > 0 and row["http"] == "HTTP/1.1" for row in rows.values())
    assert len(core.list_namespaced_config_map(namespace).items) == made


def programs() -> dict:
    from helpers.cluster import gobuild

    return gobuild.ensure_benchmark_programs()


def test_the_connection_recorder_sees_the_http_version_and_new_connections() -> None:
    api = kube.connect()  # its GET /version opened the one connection
    recorder = ConnectionRecorder(api)
    recorder.start()
    core = kubernetes.client.CoreV1Api(api)
    core.list_namespace(limit=1)
    assert recorder.fields() == {"http": "HTTP/1.1", "connections_opened": 0}
    # Two requests in flight at once need a second connection: it is counted.
    held = core.list_namespace(limit=1, _preload_content=False)
    core.list_namespace(limit=1)
    held.release_conn()
    assert recorder.fields() == {"http": "HTTP/1.1", "connections_opened": 1}


def test_the_api_server_cpu_is_read_from_the_local_control_plane(
    api: kubernetes.client.ApiClient,
) -> None:
    pid = cluster.api_server_pid()
    assert pid is not None, "make test runs the local control plane: its API server is ours"
    core = kubernetes.client.CoreV1Api(api)

    def list_everything_a_few_times() -> dict:
        for _ in range(20):
            core.list_config_map_for_all_namespaces()
        return {"impl": "lists"}

    row = cluster.with_server_cpu(pid, list_everything_a_few_times)
    assert row["impl"] == "lists" and row["server_cpu_seconds"] > 0, row
    assert cluster.with_server_cpu(None, lambda: {"impl": "x"}) == {"impl": "x"}
    assert cluster.control_plane_cpu_seconds() > cluster.cpu_seconds(pid) > 0


def test_the_benchmarks_namespaces_are_the_courses_and_only_those_are_touched(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    core = kubernetes.client.CoreV1Api(api)
    name, theirs = f"bench-test-{namespace[-6:]}", f"theirs-{namespace[-6:]}"
    core.create_namespace({"metadata": {"name": theirs}})  # no course labels: somebody else's
    try:
        assert cluster.create_namespace(api, name) == name
        found = core.read_namespace(name)
        assert namespaces.is_the_courses(found), found.metadata.labels
        assert cluster.create_namespace(api, name) == name  # kept as it is (--keep-objects)
        assert core.read_namespace(name).metadata.uid == found.metadata.uid
        with pytest.raises(CourseError, match="the course did not make it"):
            cluster.create_namespace(api, theirs)
        cluster.remove_namespaces(api, [name, theirs], timeout=120)
        assert core.read_namespace(theirs).metadata.deletion_timestamp is None
        with pytest.raises(ApiException) as gone:
            core.read_namespace(name)
        assert gone.value.status == 404
    finally:
        namespaces.delete_namespace(api, name)
        core.delete_namespace(theirs)  # the test made it, so the test removes it
