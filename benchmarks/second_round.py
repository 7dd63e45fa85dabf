"""How many syncs a controller run needs, predicted from when each sync came and each Deployment.

A drill run by hand (benchmarks/RESULTS.md records it), not part of run_all.
It runs controller_bench's run (200 Foos, each controller in turn) while one
thread notes when each "Successfully synced" line reaches the controller's log
and for which Foo (benchmarks/sync_timeline.py's ``LogClock``), and another
watches Deployments and notes when each first has all its replicas available.

From those times alone it predicts the run's syncs. Both controllers enqueue a
Foo on every update to it and to its Deployment, and a workqueue hands keys
out in the order they were added. So:

- A Foo's *needed* sync is the one that writes ``availableReplicas: 1``: the
  sync whose line is nearest the moment the Foo's status said so (a third
  thread watches the Foos). Its second sync, as a rule; its third when the second
  came before the Deployment was available (and wrote 0 again).
- That sync's key was added when the first sync ended (its write of 0, where
  there was no status, is a Foo update); for a third, when the Deployment
  became available (the second wrote nothing new, so only the Deployment's
  change added it).
- The run ends with the needed sync whose key was added last. Every key added
  before it is handed out before it: among them, the extra sync of every Foo
  whose needed sync had already ended (its write of 1 was an update too; that
  extra sync writes nothing new).

So the prediction is the needed syncs, plus one for each Foo whose needed sync
ended before the last needed key was added. The times are when the drill read
each line and each watch event, a few milliseconds late, and a Deployment
update other than the one that made it available can add a third's key a little
earlier, so the prediction can be a few syncs off.

Run: .venv/bin/python -m benchmarks.second_round [--pacing 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import kubernetes

from benchmarks import controller_bench
from benchmarks.controller_bench import Pacing
from benchmarks.guard import refuse_clusters_not_the_courses
from benchmarks.informer_bench import rotated
from benchmarks.stopping import exit_on_sigterm
from benchmarks.sync_timeline import LogClock
from helpers import kube
from helpers.controller import FOO_GROUP, FOO_PLURAL, FOO_VERSION

WATCH_SECONDS = 2
"""How long each watch request of :class:`FirstTimes` lasts before it looks at its stop flag."""


class FirstTimes:
    """Notes when each object of a kind first meets a condition, by the Foo it belongs to.

    It watches every namespace from a resourceVersion taken before the run,
    so it sees every object the run makes from its start.
    """

    def __init__(
        self, list_call: Callable[..., Any], foo_of: Callable[[Any], str | None],
        met: Callable[[Any], bool], **list_args: Any,
    ) -> None:  # fmt: skip
        self._list = list_call  # itself: the client's Watch reads its return type off its docstring
        self._list_args = list_args
        self._foo_of = foo_of
        self._met = met
        self._version = version_of(list_call(limit=1, **list_args))
        self.at: dict[str, float] = {}  # "namespace/foo" -> time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="first-times", daemon=True)

    def __enter__(self) -> FirstTimes:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.is_set():
            stream = kubernetes.watch.Watch().stream(
                self._list, resource_version=self._version, timeout_seconds=WATCH_SECONDS,
                **self._list_args,
            )  # fmt: skip
            for event in stream:
                found = event["object"]
                self._version = version_of(found)
                foo = self._foo_of(found)
                if foo is not None and self._met(found):
                    self.at.setdefault(foo, time.monotonic())


def version_of(found: Any) -> str:
    """The resourceVersion of a typed object or list, or of one given as a dict."""
    if isinstance(found, dict):
        return found["metadata"]["resourceVersion"]
    return found.metadata.resource_version


def deployment_foo(deployment: Any) -> str | None:
    """``namespace/name`` of the Foo that controls ``deployment``, if one does."""
    for owner in deployment.metadata.owner_references or []:
        if owner.controller and owner.kind == "Foo":
            return f"{deployment.metadata.namespace}/{owner.name}"
    return None


def deployment_available(deployment: Any) -> bool:
    wanted = deployment.spec.replicas or 0
    return wanted > 0 and (deployment.status.available_replicas or 0) >= wanted


def foo_key(foo: dict[str, Any]) -> str:
    return f"{foo['metadata']['namespace']}/{foo['metadata']['name']}"


def foo_says_available(foo: dict[str, Any]) -> bool:
    """Its status says what the benchmark waits for: every replica available."""
    wanted = (foo.get("spec") or {}).get("replicas")
    return bool(wanted) and (foo.get("status") or {}).get("availableReplicas") == wanted


@dataclass(frozen=True)
class Prediction:
    """A run's syncs, and what :func:`predict` made of its times."""

    syncs: int  # sync lines in the log
    predicted: int
    needed: int  # each Foo's syncs up to and including its needed one
    needed_a_third: int  # Foos whose second sync came before their Deployment was available
    extra: int  # Foos whose needed sync ended before the last needed key was added
    last_needed_added: float  # when, in seconds after the first sync line
    first_round: float  # seconds from the first sync line to the last Foo's first


def predict(
    synced: list[tuple[float, str]], available: dict[str, float], written: dict[str, float]
) -> Prediction:
    """The prediction the module's docstring explains.

    ``synced`` holds each sync line's (time, key); ``available`` when each
    Foo's Deployment became available; ``written`` when each Foo's status
    first said so. A Foo missing from either has no needed sync to count.
    """
    times: dict[str, list[float]] = {}
    for when, key in synced:
        times.setdefault(key, []).append(when)
    needed = third = 0
    ended: dict[str, float] = {}  # when each Foo's needed sync ended
    last_added = -math.inf
    for key, syncs in times.items():
        if key not in available or key not in written:
            continue
        # The needed sync logged its line just after its status write: the line nearest it.
        place = min(range(len(syncs)), key=lambda n: abs(syncs[n] - written[key]))
        needed += place + 1
        ended[key] = syncs[place]
        if place == 1:  # the first sync's status write (0 where there was none) added it
            last_added = max(last_added, syncs[0])
        elif place >= 2:  # the syncs between wrote nothing new: the Deployment's change did
            third += 1
            last_added = max(last_added, available[key])
    extra = sum(1 for when in ended.values() if when < last_added)
    first = min((when for when, _ in synced), default=0.0)
    last_first = max((syncs[0] for syncs in times.values()), default=first)
    return Prediction(
        syncs=len(synced), predicted=needed + extra, needed=needed, needed_a_third=third,
        extra=extra, last_needed_added=round(max(last_added, first) - first, 2),
        first_round=round(last_first - first, 2),
    )  # fmt: skip


def timed_run(
    controller: controller_bench.Controller, pacing: Pacing, logs: Path,
    api: kubernetes.client.ApiClient,
) -> dict[str, Any]:  # fmt: skip
    """controller_bench's run of ``controller``, with the prediction made from its times."""
    apps = kubernetes.client.AppsV1Api(api)
    custom = kubernetes.client.CustomObjectsApi(api)
    with (
        FirstTimes(apps.list_deployment_for_all_namespaces, deployment_foo,
                   deployment_available) as available,
        FirstTimes(custom.list_cluster_custom_object, foo_key, foo_says_available,
                   group=FOO_GROUP, version=FOO_VERSION, plural=FOO_PLURAL) as written,
        LogClock(logs) as clock,
    ):  # fmt: skip
        row = controller_bench.run_once(controller, pacing, 200, 1, logs)
    synced = list(zip(clock.synced_at, clock.synced_keys, strict=True))
    prediction = predict(synced, available.at, written.at)
    return {"controller": row["controller"], "pacing": row["pacing"],
            "wall_seconds": row["wall_seconds"], **asdict(prediction)}  # fmt: skip


def late(row: dict[str, Any]) -> bool:
    """Its last needed key was added after its first round ended: a third sync's, so late."""
    return row["last_needed_added"] > row["first_round"]


def table(rows: list[dict[str, Any]]) -> list[str]:
    """A Markdown table of the runs, then a line per controller: how many were late."""
    lines = [
        "| run | controller | syncs | predicted | needed (Foos needing a third) | extra "
        "| first round | last needed key added | wall time |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for number, row in enumerate(rows, 1):
        lines.append(
            f"| {number} | {row['controller']} | {row['syncs']} | {row['predicted']} "
            f"| {row['needed']} ({row['needed_a_third']}) | {row['extra']} "
            f"| {row['first_round']:.2f} s | {row['last_needed_added']:.2f} s "
            f"| {row['wall_seconds']:.2f} s |"
        )
    lines.append("")
    for name in dict.fromkeys(row["controller"] for row in rows):
        runs = [row for row in rows if row["controller"] == name]
        rounds = statistics.median(row["first_round"] for row in runs)
        walls = statistics.median(row["wall_seconds"] for row in runs)
        lines.append(
            f"{name}: {sum(map(late, runs))} of {len(runs)} runs with a needed key added after "
            f"the first round; first round {rounds:.2f} s, wall time {walls:.2f} s (medians)."
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pacing", type=Pacing.parse, default=Pacing.parse("50"),
                        help="'default' or a QPS (default: 50)")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    refuse_clusters_not_the_courses()  # before the first request
    exit_on_sigterm()  # a stopped drill still stops its controller
    from helpers.cluster import gobuild

    sample = gobuild.ensure_benchmark_programs()["sample-controller-paced"]
    api = kube.connect()
    logs = Path(tempfile.mkdtemp(prefix="second-round-"))
    rows = []
    for repetition in range(args.repeat):
        for controller in rotated(controller_bench.controllers(sample, args.pacing), repetition):
            row = timed_run(controller, args.pacing, logs, api)
            print(json.dumps(row), file=sys.stderr, flush=True)
            rows.append(row)
    for log in logs.iterdir():
        log.unlink()
    logs.rmdir()
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
