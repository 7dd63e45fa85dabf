"""The benchmark's wire-only rows: they count what the API server sent, and the report shows them.

benchmarks/informer_bench.py reads the events workload's watch and the sync's
first LIST without decoding them (``_wire_events``, ``_wire_sync``), in JSON
and protobuf, to measure the most any client speaking that format could do on
the machine. A ceiling is only worth quoting if it counts exactly the events
the watch replays (no partial or merged frames) and reads the whole LIST, so
that is checked here on the real cluster. The rendering tests need no cluster:
the report's table functions take a results dictionary, and an older
results.json without wire rows must still render (``--render-only``).
"""

from __future__ import annotations

import concurrent.futures
import json
import sys
from pathlib import Path
from typing import Any

import kubernetes
import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import informer_bench  # noqa: E402  (benchmarks/ is not a package)
import report  # noqa: E402

from helpers.waiting import wait_for  # noqa: E402


def test_frames_are_counted_whole_however_the_bytes_are_cut() -> None:
    frames = [b"x" * size for size in (0, 1, 255, 256, 70_000)]
    wire = b"".join(len(frame).to_bytes(4, "big") + frame for frame in frames)
    for step in (1, 3, 4096):
        counted, pending = 0, b""
        for at in range(0, len(wire), step):
            found, pending = informer_bench.count_frames(pending + wire[at : at + step], "protobuf")
            counted += found
        assert (counted, pending) == (len(frames), b""), step
    lines = b'{"type":"MODIFIED"}\n{"type":"MODIFIED","object":{"a":"b\\nc"}}\n{"type":'
    assert informer_bench.count_frames(lines, "json") == (2, b'{"type":')


@pytest.mark.cluster
@pytest.mark.parametrize("wire", ["json", "protobuf"])
def test_the_wire_rows_count_exactly_the_replayed_events(
    api: kubernetes.client.ApiClient, namespace: str, wire: str
) -> None:
    core = kubernetes.client.CoreV1Api(api)
    # A new namespace gets kube-root-ca.crt from the controller manager: once
    # it is there, the 25 updates below are all the watch has to replay.
    wait_for(
        core.list_namespaced_config_map,
        lambda found: "kube-root-ca.crt" in found,
        what="kube-root-ca.crt in the new namespace",
        timeout=30,
        namespace=namespace,
    )
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "cm"}})
    since = core.list_namespaced_config_map(namespace).metadata.resource_version
    for i in range(25):
        core.patch_namespaced_config_map("cm", namespace, {"data": {"n": str(i)}})
    row = informer_bench.measure_wire_events(wire, namespace, since, 25, timeout_seconds=20)
    assert (row["impl"], row["events"], row["frames"]) == (f"wire-{wire}", 25, 25), row
    assert row["events_per_second"] > 0 and row["bytes"] > 25 * 100, row


@pytest.mark.cluster
def test_the_wire_sync_reads_the_whole_list_in_one_response(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    """More objects than one page: the watch cache still answers resourceVersion=0 in one go."""
    core = kubernetes.client.CoreV1Api(api)
    config_maps = [informer_bench.config_map(f"cm-{i:03d}") for i in range(520)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda body: core.create_namespaced_config_map(namespace, body), config_maps))
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
    assert all(row["sync_seconds"] > 0 for row in rows.values()), rows


def results(*, wire: bool) -> dict[str, Any]:
    """A results dictionary as informer_bench.py writes it, with or without the wire rows."""
    sync = [
        {"impl": "ours", "objects": 10_001, "sync_seconds": 0.3, "peak_rss_mib": 100.0,
         "bytes_per_object": 2_200},
        {"impl": report.GO_LIKE_OURS, "objects": 10_001, "sync_seconds": 0.33,
         "peak_rss_mib": 60.0, "bytes_per_object": 2_190},
        {"impl": report.GO_DEFAULT, "objects": 10_001, "sync_seconds": 0.2,
         "peak_rss_mib": 50.0, "bytes_per_object": 2_200},
    ]  # fmt: skip
    events = [
        {"impl": "ours", "events": 5_000, "seconds": 0.2, "events_per_second": 25_000},
        {"impl": report.GO_EVENTS, "events": 5_000, "seconds": 0.5, "events_per_second": 10_000},
        {"impl": report.GO_EVENTS_DEFAULT, "events": 5_000, "seconds": 0.1,
         "events_per_second": 50_000},
    ]  # fmt: skip
    if wire:
        sync += [
            {
                "impl": "wire-json",
                "sync_seconds": 0.16,
                "bytes": 8_000_000,
                "limit": 500,
                "client_cpu_seconds": 0.04,
            },
            {"impl": "wire-protobuf", "sync_seconds": 0.1, "bytes": 6_000_000, "limit": 500},
        ]
        events += [
            {"impl": "wire-json", "events": 5_000, "frames": 5_000, "seconds": 0.125,
             "events_per_second": 40_000, "bytes": 4_600_000, "client_cpu_seconds": 0.05},
            {"impl": "wire-protobuf", "events": 5_000, "frames": 5_000, "seconds": 0.0625,
             "events_per_second": 80_000, "bytes": 3_400_000},
        ]  # fmt: skip
    return {"informer": {"sync": sync, "events": events}}


def test_the_report_shows_the_wire_rows_with_their_ratios_and_what_they_mean() -> None:
    sync = "\n".join(report.render_sync(results(wire=True)))
    assert (
        "| wire only, JSON (bytes read, nothing decoded) | 0.160 s | **0.160 s** | 0.80x "
        "| 0.48x | (nothing kept) | - |"
    ) in sync
    assert "| wire only, protobuf (bytes read, nothing decoded) | 0.100 s |" in sync
    assert "ceiling any client speaking that format through urllib3, as ours does, can" in sync
    assert "is 0.240 s; reading the JSON LIST alone took 0.160 s (median)." in sync
    assert "Run by run, the JSON wire against client-go (stream, protobuf): 0.80x." in sync
    assert "The reader's own CPU time was 25% of its wall time (median)" in sync
    events = "\n".join(report.render_events(results(wire=True)))
    wire_json = "| wire only, JSON (bytes read, nothing decoded) | 40,000 | **40,000** | 4.00x |"
    assert wire_json in events
    assert "| wire only, protobuf (bytes read, nothing decoded) | 80,000 |" in events
    assert "count its frames as the bytes arrive" in events and "through urllib3" in events
    assert "is 35,000 events a second; the JSON watch's bytes alone arrived at 40,000" in events
    assert "Run by run, the JSON wire against client-go (list, protobuf): 0.80x." in events
    assert "The reader's own CPU time was 40% of its wall time (median)" in events
    # The wire rows come after every client's row: they are a bound, not a client.
    assert events.index("client-go (list, protobuf) | 50,000") < events.index("wire only, JSON")


def test_results_without_wire_rows_render_as_before() -> None:
    old = results(wire=False)
    text = "\n".join(report.render_sync(old) + report.render_events(old))
    assert "wire only" not in text and "ceiling" not in text
    assert "| ours (managedFields stripped, json) | 0.300 s | **0.300 s** | 1.50x |" in text


def test_the_report_shows_what_each_event_cost_the_api_server() -> None:
    data = results(wire=True)
    cpu = {"ours": 0.15, "wire-json": 0.1, "wire-protobuf": 0.05}  # seconds for 5,000 events
    for row in data["informer"]["events"]:
        if row["impl"] in cpu:
            row["server_cpu_seconds"] = cpu[row["impl"]]
    events = "\n".join(report.render_events(data))
    assert "| ours (managedFields stripped, json) | 25,000 | **25,000** | 2.50x | 30 µs |" in events
    assert "| client-go (list, protobuf) | 50,000 | **50,000** | 5.00x | - |" in events
    assert "cost the API server 20 µs of CPU in JSON and 10 µs in protobuf" in events
    # Without the column's figures (an older results.json) neither sentence nor numbers appear.
    assert "cost the API server" not in "\n".join(report.render_events(results(wire=True)))


@pytest.mark.cluster
def test_the_api_server_cpu_is_read_from_the_local_control_plane(
    api: kubernetes.client.ApiClient,
) -> None:
    pid = informer_bench.api_server_pid()
    assert pid is not None, "make test runs the local control plane: its API server is ours"
    core = kubernetes.client.CoreV1Api(api)

    def list_everything_a_few_times() -> dict[str, Any]:
        for _ in range(20):
            core.list_config_map_for_all_namespaces()
        return {"impl": "lists"}

    row = informer_bench.with_server_cpu(pid, list_everything_a_few_times)
    assert row["impl"] == "lists" and row["server_cpu_seconds"] > 0, row
    assert informer_bench.with_server_cpu(None, lambda: {"impl": "x"}) == {"impl": "x"}


def test_each_repeat_starts_with_another_informer() -> None:
    runs = [lambda: {"impl": "a"}, lambda: {"impl": "b"}, lambda: {"impl": "c"}]
    order = [[run()["impl"] for run in informer_bench.rotated(runs, r)] for r in range(4)]
    assert order == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]]
    assert informer_bench.rotated([], 3) == []
