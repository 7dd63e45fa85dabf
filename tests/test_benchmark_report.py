"""The benchmark report: every figure comes from results.json, and the recorded files agree with it.

benchmarks/report.py writes RESULTS.md's measured part and README.md's
benchmark paragraph from benchmarks/results.json. These tests need no cluster:
they render a results dictionary made here (so each figure and verdict is
known), check that the recorded RESULTS.md and README.md are exactly what the
recorded results.json renders to, that results.json says what ran, and the
bookkeeping around the benchmarks (the package imports nothing from tests/, a
Go program documents only flags it has).
"""

from __future__ import annotations

import ast
import copy
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks import (
    controller_bench,
    creation_window,
    informer_bench,
    report,
    second_round,
    sync_timeline,
)
from helpers import decode

ROOT = Path(__file__).resolve().parents[1]
GO_H1 = "client-go (list, json, HTTP/1.1)"
GO_STREAM_H1 = "client-go (stream, json, HTTP/1.1)"
GO_PROTO = "client-go (list, protobuf, HTTP/2)"


def sync_row(impl: str, repeat: int, seconds: float, memory: int, after: int | None,
             http: str = "HTTP/1.1", count: int = 10_000) -> dict[str, Any]:  # fmt: skip
    row = {"impl": impl, "objects": count + 1, "sync_seconds": seconds, "peak_rss_mib": 80.0,
           "bytes_per_object": memory, "http": http, "connections_opened": 0, "count": count,
           "repeat": repeat}  # fmt: skip
    if after is not None:
        row |= {"bytes_per_object_after_updates": after, "updated_objects": count // 5}
    return row


def event_row(impl: str, repeat: int, rate: int, http: str = "HTTP/1.1", **more: Any) -> dict:
    seconds = 20_000 / rate
    return {"impl": impl, "events": 20_000, "seconds": seconds, "events_per_second": rate,
            "http": http, "connections_opened": 0, "repeat": repeat, **more}  # fmt: skip


def results() -> dict[str, Any]:
    """A run as benchmarks/run.py records it, with figures chosen so each verdict is known."""
    sync = []
    for repeat, (ours, list_h1, stream_h1) in enumerate([(0.30, 0.40, 0.60), (0.36, 0.30, 0.50)]):
        sync += [
            sync_row("ours", repeat, ours, 2_000, 2_300),
            sync_row(GO_H1, repeat, list_h1, 2_200, 2_250),
            sync_row(GO_STREAM_H1, repeat, stream_h1, 2_100, 2_200),
            sync_row(informer_bench.GO_DEFAULT, repeat, 0.2, 2_150, 2_150, "HTTP/2"),
            {"impl": "wire-json", "sync_seconds": 0.1, "bytes": 8_000_000, "limit": 500,
             "client_cpu_seconds": 0.02, "http": "HTTP/1.1", "connections_opened": 0,
             "count": 10_000, "repeat": repeat},
        ]  # fmt: skip
    events = []
    figures = [(45_000, 30_000, 50_000), (40_000, 40_000, 40_000)]
    for repeat, (ours, json_h1, wire) in enumerate(figures):
        events += [
            event_row("ours", repeat, ours, server_cpu_seconds=0.36),
            event_row(GO_H1, repeat, json_h1, server_cpu_seconds=0.5),
            event_row(GO_PROTO, repeat, 100_000, "HTTP/2", server_cpu_seconds=0.14),
            event_row("wire-json", repeat, wire, client_cpu_seconds=0.1, frames=20_000),
        ]
    controllers = [
        {"controller": name, "pacing": pacing, "workers": 2, "qps": qps, "burst": 10,
         "foos": 200, "replicas": 1, "wall_seconds": wall, "repeat": repeat}
        | ({"syncs": 400 + 10 * repeat,
            "syncs_per_foo": {"1": 2, "2": 190 - repeat, "3": 8 + repeat},
            "cpu_seconds": 2.0 + repeat, "control_plane_cpu_seconds": 30.0 - repeat,
            "create_seconds": 1.0 + repeat / 10}
           if name == "ours"
           else {})
        for pacing, qps, walls in [("default", 5.0, {"ours": [80.0, 81.0, 79.0],
                                                     "sample-controller": [80.5, 80.0, 90.0]}),
                                   ("QPS 50", 50.0, {"ours": [20.0, 22.0, 21.0],
                                                     "sample-controller": [18.0, 19.0, 20.0]})]
        for name, runs in walls.items() for repeat, wall in enumerate(runs)
    ]  # fmt: skip
    return {
        "run": {
            "command": "benchmarks/run_all --scale 10000",
            "commit": "0123456789abcdef" * 2,
            "uncommitted_changes": False,
            "date": "2026-12-04 10:00 UTC",
            "backend": "local control plane",
            "kubernetes": "v1.36.3",
            "client_go": "v0.36.3",
            "go": "go1.26.8",
            "python": "3.11.7",
            "kubernetes_python_client": "36.0.3",
            "orjson": "3.13.0",
            "cpus": 2,
            "cpu": "AMD EPYC",
            "memory_gib": 24,
            "load": {"start": "0.50 0.40 0.30", "end": "1.50 0.90 0.50"},
            "steps": {"events": {"seconds": 90.0, "benchmark_cpu": 60.0, "cluster_cpu": 80.0}},
            "seconds": 600.0,
        },
        "sync": sync,
        "events": events,
        "event_updates": [
            {
                "since": "100",
                "updates": 20_000,
                "objects": 100,
                "last_key": "bench-events/cm-00099",
                "last_value": "e-19999",
                "seconds": 20.0,
            }
        ],
        "replay_fresh_seconds": 240.0,
        "controllers": controllers,
    }


def test_each_target_is_judged_on_the_medians_with_the_runs_paired() -> None:
    found = report.verdicts(results())
    sync, memory, memory_after, events, events_read, default, qps50, run_time = found
    # Sync: ours 0.33 s against the faster client-go JSON listing at HTTP/1.1 (list: 0.35 s).
    assert sync.measure == "initial sync of 10,001 ConfigMaps"
    assert sync.result == f"0.94x: 0.330 s against 0.350 s, {GO_H1}; run by run 0.75x, 1.20x", (
        sync.result
    )
    assert sync.met is True
    # Memory: against the least client-go row (stream, 2,100 B), then after the updates.
    assert memory.result.startswith(f"0.95x: 2,000 B against 2,100 B, {GO_STREAM_H1}")
    assert memory.met is True
    assert memory_after.measure.endswith("after 2,000 were updated through the watch")
    assert memory_after.result.startswith(
        f"1.07x: 2,300 B against 2,150 B, {informer_bench.GO_DEFAULT}"
    )
    assert memory_after.met is False and memory_after.answer == "**no**"
    assert events.result == (
        f"1.21x: 42,500/s against 35,000/s, {GO_H1}; run by run 1.50x, 1.00x "
        "(beside client-go over protobuf: 0.42x)"
    ), events.result
    assert events.met is True
    assert events_read.result.startswith("0.94x: 42,500/s against 45,000/s, the JSON read alone")
    assert events_read.met is True  # at least 0.9x
    assert default.measure == "Foo controller, 200 Foos to available, default pacing"
    assert (
        default.result
        == "0.99x: 80.00 s against 80.50 s, sample-controller; run by run 0.99x, 1.01x, 0.88x"
    )
    assert default.met is True
    assert qps50.result.startswith("1.11x: 21.00 s against 19.00 s") and qps50.met is False
    # A shorter run than the default one says how long it took and is not judged.
    assert (
        run_time.result
        == "10.0 minutes for `benchmarks/run_all --scale 10000`, not the default run"
    )
    assert run_time.met is None


@pytest.mark.parametrize(
    ("value", "target", "text"),
    [(0.936, 1.0, "0.94x"), (1.004, 1.0, "1.004x"), (1.0005, 1.0, "1.0005x"),
     (0.8996, 0.9, "0.8996x"), (1.0, 1.0, "1.00x"), (1.00001, 1.0, "1.0000x")],
)  # fmt: skip
def test_a_ratio_is_never_rounded_onto_the_target_it_misses(
    value: float, target: float, text: str
) -> None:
    assert report.ratio_beside(value, target) == text


def test_a_controller_slower_by_less_than_rounding_shows_so_with_both_sync_counts() -> None:
    data = results()
    syncs = {"ours": [412, 413, 412], "sample-controller": [411, 409, 411]}
    for row in data["controllers"]:
        if row["pacing"] == "default":
            row["wall_seconds"] = 80.46 if row["controller"] == "ours" else 80.42
            row["syncs"] = syncs[row["controller"]][row["repeat"]]
    default = report.verdicts(data)[5]
    assert default.result == (
        "1.0005x: 80.46 s against 80.42 s, sample-controller; run by run 1.00x, 1.00x, 1.00x"
        "; syncs 412 against 411 (medians)"
    ), default.result
    assert default.met is False
    # Without sample-controller's counts there is nothing to set beside ours.
    del data["controllers"][3]["syncs"], data["controllers"][4]["syncs"]
    del data["controllers"][5]["syncs"]
    assert "syncs" not in report.verdicts(data)[5].result


@pytest.mark.parametrize(("seconds", "met"), [(1_199.0, True), (1_200.0, False), (1_500.0, False)])
def test_the_whole_default_run_is_judged_against_twenty_minutes(seconds: float, met: bool) -> None:
    data = results()
    steps = {"controllers": {"seconds": 810.0}, "events": {"seconds": 90.0}}
    data["run"] |= {"command": "benchmarks/run_all", "seconds": seconds, "steps": steps}
    verdict = report.verdicts(data)[-1]
    assert verdict.measure == "benchmarks/run_all's run time"
    assert verdict.result == f"{seconds / 60:.1f} minutes (controllers: 810 s of it)"
    assert verdict.met is met


def test_a_missing_part_is_said_to_be_unmeasured() -> None:
    data = results()
    del data["controllers"], data["events"]
    found = report.verdicts(data)
    unmeasured = [v for v in found if v.met is None]
    assert [v.measure for v in unmeasured] == [
        "watch events a second to a no-op handler",
        "watch events a second to a no-op handler",
        "Foo controller, ? Foos to available, default pacing",
        "Foo controller, ? Foos to available, QPS 50 pacing",
        "benchmarks/run_all's run time",
    ]
    assert all(v.answer == "not measured" for v in unmeasured)
    assert all(v.result == "-" for v in unmeasured[:-1])
    assert unmeasured[-1].result.endswith("not the default run")  # its time is said, not judged
    text = report.render(data)  # renders without them
    assert "## Watch events" not in text and "## Controller" not in text


def test_the_tables_name_each_rows_http_version_and_put_the_read_only_rows_last() -> None:
    text = report.render(results())
    assert (
        "| ours (managedFields stripped, json) | HTTP/1.1 | 0.300, 0.360 s | **0.330 s** "
        "| 0.94x | 1.65x | 2,000 B | 2,300 B | 80.0 MiB |"
    ) in text
    assert f"| {informer_bench.GO_DEFAULT} | HTTP/2 | 0.200, 0.200 s |" in text
    assert "| JSON read as ours reads it, nothing decoded | HTTP/1.1 | 0.100, 0.100 s |" in text
    assert "| (nothing kept) | - | - |" in text
    events = text[text.index("## Watch events") :]
    assert events.index(GO_PROTO) < events.index("JSON read as ours reads it")
    assert f"| {GO_PROTO} | HTTP/2 | 100,000 / 100,000 | **100,000** | 2.86x | - | 7.0 µs |" in (
        events
    )
    assert "| JSON read as ours reads it, nothing decoded | HTTP/1.1 | 50,000 / 40,000 " in events
    assert "| 1.29x | 5.0 µs | - |" in events  # 0.1 s of its CPU over 20,000 events
    assert "| ours (managedFields stripped, json) | HTTP/1.1 | 45,000 / 40,000 | **42,500** |" in (
        events
    )
    assert "20,000 updates to 100 ConfigMaps are made first (rounds made in this run: 1" in events
    assert "ceiling" not in text  # the read-only rows bound no client


def test_the_controller_table_gives_the_spread_and_what_each_ran_with() -> None:
    text = "\n".join(report.render_controllers(results()))
    ours = "| default | ours | 2 | 5 / 10 | 400, 410, 420 | 8, 9, 10 | 1.10 s | 3.0 s / 29.0 s |"
    assert f"{ours} 80.0, 81.0, 79.0 s | **80.0 s** (79.0-81.0) | 0.99x |" in text
    sample = "| QPS 50 | sample-controller | 2 | 50 / 10 | - | - | - | - | 18.0, 19.0, 20.0 s |"
    assert f"{sample} **19.0 s** (18.0-20.0) | 1.00x |" in text


def test_the_controller_section_says_how_kube_controller_manager_was_paced() -> None:
    data = results()
    assert "kube-controller-manager" not in "\n".join(report.render_controllers(data))
    data["run"]["controller_manager_pacing"] = "--kube-api-qps=100 --kube-api-burst=100"
    text = "\n".join(report.render_controllers(data))
    assert "which ran with --kube-api-qps=100 --kube-api-burst=100 (each controller's" in text


def test_the_controller_section_says_when_the_foos_were_created() -> None:
    data = results()
    assert "Started workers" not in "\n".join(report.render_controllers(data))
    for row in data["controllers"]:
        row["settle_seconds"] = 2.0 if row["pacing"] == "default" else 0.2
    text = "\n".join(report.render_controllers(data))
    assert (
        'The Foos are created burst / QPS after the controller logged "Started workers" '
        "(2 s at default pacing, 0.2 s at QPS 50 pacing): by then its token buckets are full"
    ) in text


def test_what_the_report_says_about_the_run_comes_from_the_run() -> None:
    data = results()
    text = "\n".join(report.render_run(data["run"]))
    assert (
        "by `benchmarks/run_all --scale 10000` at commit 0123456789ab, on local control plane"
        in (text)
    )
    assert "(with uncommitted changes)" not in text
    assert "The run took 10.0 minutes (its steps are at the end)." in text
    assert "| events | 90 s | 80 s | 60 s |" in "\n".join(report.render_steps(data["run"]))
    assert "other work shared the machine" not in text  # the load stayed under the cores
    data["run"]["load"]["end"] = "5.25 3.00 2.00"
    data["run"]["backend"], data["run"]["cpus"] = "kind", 4
    data["run"]["uncommitted_changes"] = True
    text = "\n".join(report.render_run(data["run"]))
    assert "on kind: 4 cores" in text and "(with uncommitted changes)" in text
    assert "The 1-minute load reached 5.25 on 4 cores, so other work shared the machine" in text


def test_the_connection_sentence_counts_the_runs_that_opened_one() -> None:
    data = results()
    assert "None of the 18 timed runs opened a connection while timed." in "\n".join(
        report.render_connections(data)
    )
    data["events"][1]["connections_opened"] = 1
    assert f"17 of 18 timed runs opened none while timed; these did: {GO_H1}." in "\n".join(
        report.render_connections(data)
    )


def test_the_readme_paragraph_holds_the_targets_and_the_official_client() -> None:
    data = results()
    data["sync"] += [
        sync_row("official", 0, 3.3, 8_000, None),
        sync_row("official", 1, 3.3, 8_000, None),
    ]
    data["events"] += [event_row("official", 0, 8_500), event_row("official", 1, 8_500)]
    text = report.readme_paragraph(data)
    assert text.startswith(
        "The recorded run: `benchmarks/run_all --scale 10000` on 2026-12-04 10:00 UTC (commit "
        "0123456789ab; local control plane, 2 cores; it took 10.0 minutes)."
    )
    assert "| initial sync of 10,001 ConfigMaps | at most 1.0x client-go over JSON" in text
    assert (
        "Against the official Python client's informer in the same run: the initial sync of "
        "10,001 ConfigMaps took 0.10x its time and 0.25x its memory per object; watch events "
        "reached a no-op handler at 5.00x its rate."
    ) in text


def test_the_markers_are_replaced_and_what_is_around_them_kept() -> None:
    text = f"intro\n{report.README_BEGIN}\nold\n{report.README_END}\nafter\n"
    assert report.between(text, report.README_BEGIN, report.README_END, "new") == (
        f"intro\n{report.README_BEGIN}\n\nnew\n\n{report.README_END}\nafter\n"
    )
    with pytest.raises(ValueError, match="markers"):
        report.between("no markers here", report.BEGIN, report.END, "new")


# -- the recorded files ---------------------------------------------------------------------------


def recorded() -> dict[str, Any]:
    return json.loads(report.RESULTS_JSON.read_text())


def test_results_md_is_what_results_json_renders_to() -> None:
    current = report.RESULTS_MD.read_text()
    assert report.results_md(recorded(), current) == current, (
        "benchmarks/RESULTS.md differs from what benchmarks/results.json renders to: "
        "run `benchmarks/run_all --render-only`"
    )


def test_readmes_benchmark_paragraph_is_what_results_json_renders_to() -> None:
    current = report.README.read_text()
    assert report.readme(recorded(), current) == current, (
        "README.md's benchmark paragraph differs from what benchmarks/results.json renders "
        "to: run `benchmarks/run_all --render-only`"
    )


def test_results_json_says_what_ran_and_holds_no_temporary_paths() -> None:
    data = recorded()
    run = data["run"]
    for fact in ("command", "commit", "backend", "kubernetes", "client_go", "go", "python",
                 "cpus", "cpu", "memory_gib", "date", "seconds", "steps", "load",
                 "controller_manager_pacing"):  # fmt: skip
        assert run.get(fact) not in (None, ""), fact
    assert run["command"].startswith("benchmarks/run_all")
    assert re.fullmatch(r"[0-9a-f]{40}", run["commit"]), run["commit"]
    assert "/tmp" not in report.RESULTS_JSON.read_text()
    assert all("http" in row and "connections_opened" in row for row in data["events"])


def test_a_changed_figure_in_results_json_changes_the_files() -> None:
    data = copy.deepcopy(recorded())
    data["events"][0]["events_per_second"] += 1
    assert report.results_md(data, report.RESULTS_MD.read_text()) != report.RESULTS_MD.read_text()


# -- the bookkeeping around the benchmarks -------------------------------------------------------


def test_the_benchmarks_import_nothing_from_tests() -> None:
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                assert name.split(".")[0] != "tests", f"{path.name} imports {name}"
                assert name.split(".")[0] not in {
                    p.stem for p in (ROOT / "benchmarks").glob("*.py")
                }, f"{path.name} imports {name} as a top-level module, not from the package"


GO_PROGRAMS = [
    ROOT / "benchmarks/go/informerbench/main.go",
    ROOT / "benchmarks/go/configmaps/main.go",
    ROOT / "benchmarks/go/_paced-sample-controller/main.go",
]


@pytest.mark.parametrize("program", GO_PROGRAMS, ids=lambda path: path.parent.name)
def test_a_go_programs_comment_names_only_flags_it_has(program: Path) -> None:
    source = program.read_text()
    comment = source.split("package main", 1)[0]
    documented = set(re.findall(r"(?<![\w-])-([a-z][a-z0-9-]*)", comment))
    defined = set(re.findall(r'flag\.\w+\((?:&[\w.]+, )?"([a-z0-9-]+)"', source))
    assert documented, "the comment shows no command line"
    assert documented <= defined, f"documented but not defined: {documented - defined}"


def test_the_list_is_read_in_the_pieces_decode_list_reads() -> None:
    assert informer_bench.LIST_READ == decode._Text.CHUNK


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


def test_each_repeat_starts_with_another_informer() -> None:
    order = [informer_bench.rotated(["a", "b", "c"], r) for r in range(4)]
    assert order == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]]
    assert informer_bench.rotated([], 3) == []


def test_each_client_go_variant_runs_as_its_label_says() -> None:
    variant = informer_bench.GO[GO_H1]
    command, environment = variant.command(Path("/bin/informerbench"), "-mode", "sync")
    assert command == ["/bin/informerbench", "-mode", "sync", "-strip", "-content-type", "json",
                       "-http1"]  # fmt: skip
    assert environment["KUBE_FEATURE_WatchListClient"] == "false"
    row = {"impl": "client-go", "list_mode": "list", "http": "HTTP/1.1"}
    assert variant.check(row)["impl"] == GO_H1
    with pytest.raises(RuntimeError, match="went over HTTP/2"):
        variant.check({**row, "http": "HTTP/2"})
    with pytest.raises(RuntimeError, match="listed by streaming"):
        variant.check({**row, "list_mode": "streaming"})
    assert informer_bench.GO_DEFAULT in informer_bench.GO_SYNC
    assert all("list" in label for label in informer_bench.GO_EVENTS)


def test_a_pacing_is_default_or_a_qps() -> None:
    assert controller_bench.Pacing.parse("default").ours() == []
    fifty = controller_bench.Pacing.parse("50")
    assert (fifty.name, fifty.ours(), fifty.sample_controller()) == (
        "QPS 50",
        ["--kube-api-qps", "50"],
        ["-kube-api-qps", "50"],
    )
    for wrong in ("fast", "0", "-5"):
        with pytest.raises(Exception, match=r"pacing is 'default' or a QPS|above 0"):
            controller_bench.Pacing.parse(wrong)


def test_what_a_controller_ran_with_is_read_from_its_log() -> None:
    ours, sample = controller_bench.controllers(Path("/bin/sc"), controller_bench.Pacing(50.0))
    log = (
        "I1204 03:47:29 foo-controller helpers.controller] Starting workers count=2\n"
        "I1204 03:47:30 foo-controller helpers.controller] Successfully synced ns/foo-001\n"
    )
    assert ours.ran_with(log, controller_bench.Pacing(50.0)) == {
        "workers": 2,
        "syncs": 1,
        "syncs_per_foo": {"1": 1},
        "qps": 50.0,
        "burst": 10,
    }
    log = (
        'I1204 03:40:01.123456   12345 main.go:120] "Client pacing" qps=50 burst=10 '
        "perAPIGroup=3\n"
        'I1204 03:40:01.223456   12345 controller.go:177] "Starting workers" count=2\n'
        'I1204 03:40:02.1   12345 controller.go:222] "Successfully synced" objectName="ns/foo"\n'
        'I1204 03:40:02.2   12345 controller.go:222] "Successfully synced" objectName="ns/foo"\n'
        'I1204 03:40:02.3   12345 controller.go:222] "Successfully synced" objectName="ns/bar"\n'
    )
    assert sample.command == ["/bin/sc", "-kube-api-qps", "50"]
    assert sample.ran_with(log, controller_bench.Pacing(50.0)) == {
        "workers": 2,
        "syncs": 3,
        "syncs_per_foo": {"1": 1, "2": 1},
        "qps": 50.0,
        "burst": 10,
        "token_buckets": 3,
    }


def test_a_bucket_refills_its_burst_in_burst_over_qps_seconds() -> None:
    assert controller_bench.Pacing.parse("default").refill_seconds() == 2.0  # 10 at 5 a second
    assert controller_bench.Pacing.parse("50").refill_seconds() == 0.2  # the burst stays 10


def until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the log clock never saw the line"
        time.sleep(0.005)


def test_the_sync_timeline_times_each_sync_line_as_it_is_written(tmp_path: Path) -> None:
    with sync_timeline.LogClock(tmp_path) as clock:
        log = (tmp_path / "run.log").open("w")
        log.write('"Started workers"\n"Successfully synced" objectName="ns/foo-1"\n')
        log.flush()
        until(lambda: len(clock.synced_at) == 1)
        log.write("I1205 Successfully synced ns/foo-2\nI1205 Successfully syn")
        log.flush()
        until(lambda: len(clock.synced_at) == 2)
        log.write("ced ns/foo-3\n")  # a line read in two pieces counts once, when it ends
        log.close()
        until(lambda: len(clock.synced_at) == 3)
    assert clock.synced_at == sorted(clock.synced_at)
    assert clock.synced_keys == ["ns/foo-1", "ns/foo-2", "ns/foo-3"]
    times = [0.1 * n for n in range(1, 451)]
    assert sync_timeline.marks(times) == {
        "sync 1": 0.1, "sync 20": 2.0, "sync 400": 40.0, "last sync": 45.0,
    }  # fmt: skip
    assert sync_timeline.marks([0.5, 0.7]) == {"sync 1": 0.5, "last sync": 0.7}
    assert sync_timeline.parse_settles("0,refill,1.5") == [0.0, None, 1.5]


def test_the_sync_section_says_when_glibcs_trim_threshold_was_held() -> None:
    data = results()
    held = "with glibc's trim threshold held at 128 KiB"
    for row in data["sync"]:
        row["malloc_trim"] = True
    assert held not in "\n".join(report.render_sync(data, 10_000))
    for row in data["sync"]:
        if row["impl"].startswith("ours"):
            row["trim_threshold"] = informer_bench.TRIM_THRESHOLD
    text = "\n".join(report.render_sync(data, 10_000))
    assert f"glibc's `malloc_trim(0)`, {held} so that each thread's arena hands back" in text


def test_a_thread_hands_back_its_free_arena_top_once_the_threshold_is_held() -> None:
    """The measurement's premise, in a child: a thread frees 8 MiB of small blocks."""
    child = """
import sys, threading
from benchmarks import informer_bench
if sys.argv[1] == "held":
    assert informer_bench.hold_trim_threshold() == 128 * 1024
held = []
def churn():
    held.append(bytearray(16 << 20))  # mmap'd, then unmapped: glibc raises its thresholds
    held.clear()
    blocks = [bytearray(100_000) for _ in range(80)]  # 8 MB from this thread's arena
    del blocks  # its free top: 8 MB
worker = threading.Thread(target=churn)
worker.start()
worker.join()
informer_bench.free_memory()
before = informer_bench.rss_bytes()
print(before)
"""
    rss = {}
    for mode in ("default", "held"):
        done = subprocess.run(
            [sys.executable, "-c", child, mode], capture_output=True, text=True,
            cwd=ROOT, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        rss[mode] = int(done.stdout)
    assert rss["default"] - rss["held"] > 4 << 20, rss


def test_the_creation_window_drill_fits_syncs_to_the_time_the_foos_took() -> None:
    rows = [
        {"controller": name, "pacing": "default", "create_seconds": created,
         "syncs": 400 + 5 * created, "wall_seconds": 0.2 * (400 + 5 * created)}
        for name, created in [("ours", 1.0), ("ours", 2.0), ("sample-controller", 0.5),
                              ("sample-controller", 1.5)]
    ] + [{"controller": "ours", "pacing": "QPS 50", "create_seconds": 9.0, "syncs": 1,
          "wall_seconds": 1.0}]  # fmt: skip
    lines = creation_window.summary(rows, "default")
    assert lines[:3] == [
        "4 runs at default pacing.",
        "Each second more to create the Foos: +5.0 syncs (r = 1.00).",
        "Each sync more: +0.200 s of wall time (r = 1.00).",
    ]
    assert "| ours | 2 | 1.50 s | 407.5 | 81.50 s |" in lines
    assert "| sample-controller | 2 | 1.00 s | 405 | 81.00 s |" in lines
    assert creation_window.summary(rows, "QPS 50") == [
        "runs at QPS 50 pacing that recorded their creation time: 1; a fit needs 3 or more"
    ]


def test_the_second_round_drill_predicts_a_runs_syncs_from_its_times() -> None:
    def lines(syncs: dict[str, list[float]]) -> list[tuple[float, str]]:
        return sorted((when, key) for key, times in syncs.items() for when in times)

    available = {"ns/a": 1.0, "ns/b": 1.5, "ns/c": 2.0}
    # Every second sync wrote 1 (each just before its line): the run ends with c's, whose
    # key c's first sync added at 0.3; no needed sync had ended by then.
    fast = second_round.predict(
        lines({"ns/a": [0.1, 2.1], "ns/b": [0.2, 2.2], "ns/c": [0.3, 2.3]}),
        available, {"ns/a": 2.09, "ns/b": 2.19, "ns/c": 2.29},
    )  # fmt: skip
    assert (fast.syncs, fast.predicted, fast.needed, fast.extra) == (6, 6, 6, 0)
    assert (fast.needed_a_third, fast.last_needed_added, fast.first_round) == (0, 0.2, 0.2)
    # b's second sync came before its Deployment was available (3.0) and wrote 0 again:
    # its needed sync is its third, added at 3.0, after a's and c's needed syncs had
    # ended, so each of them has one more sync (an extra) before the run ends.
    slow = second_round.predict(
        lines({"ns/a": [0.1, 2.1, 3.1], "ns/b": [0.2, 2.2, 3.3], "ns/c": [0.3, 2.3, 3.2]}),
        {**available, "ns/b": 3.0}, {"ns/a": 2.09, "ns/b": 3.29, "ns/c": 2.29},
    )  # fmt: skip
    assert (slow.syncs, slow.predicted, slow.needed, slow.extra) == (9, 9, 7, 2)
    assert (slow.needed_a_third, slow.last_needed_added) == (1, 2.9)
    # A status write read just after its sync's line still names that sync.
    late = second_round.predict(lines({"ns/a": [0.1, 2.1]}), {"ns/a": 1.0}, {"ns/a": 2.102})
    assert (late.needed, late.predicted) == (2, 2)
    # A Foo whose status never said available has no needed sync to count.
    partial = second_round.predict(
        lines({"ns/a": [0.1, 2.1], "ns/b": [0.2, 2.2]}), available, {"ns/a": 2.09}
    )
    assert (partial.predicted, partial.needed, partial.extra) == (2, 2, 0)


def test_the_second_round_drill_tables_its_runs_and_counts_the_late_ones() -> None:
    def row(controller: str, syncs: int, last_added: float, first_round: float) -> dict:
        return {"controller": controller, "pacing": "QPS 50", "wall_seconds": syncs / 45,
                "syncs": syncs, "predicted": syncs, "needed": 400, "needed_a_third": 0,
                "extra": syncs - 400, "last_needed_added": last_added,
                "first_round": first_round}  # fmt: skip

    rows = [row("ours", 430, 6.0, 6.0), row("sample-controller", 580, 8.7, 5.4),
            row("sample-controller", 425, 6.2, 6.2), row("ours", 560, 8.5, 5.6)]  # fmt: skip
    lines = second_round.table(rows)
    assert lines[2] == ("| 1 | ours | 430 | 430 | 400 (0) | 30 | 6.00 s | 6.00 s | 9.56 s |")
    assert lines[-2:] == [
        "ours: 1 of 2 runs with a needed key added after the first round; first round "
        "5.80 s, wall time 11.00 s (medians).",
        "sample-controller: 1 of 2 runs with a needed key added after the first round; "
        "first round 5.80 s, wall time 11.17 s (medians).",
    ]
