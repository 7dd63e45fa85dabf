"""benchmarks/thread_hops.py's shapes: each hands updates to the handler on the thread it says.

Each informer shape is made in a child process (it replaces methods of the
informer's class), which runs an informer over tests/test_reflector.py's
FakeSource and prints the name of the thread the handler heard an update on,
which decoder ``--decoder`` left installed, and what the handler heard. The
``batched`` shape's batches are client-go's (``take_batch``), and the two
readers that are no informer read the real cluster's watch.
"""

from __future__ import annotations

import subprocess
import sys
from collections import deque
from pathlib import Path

import kubernetes
import pytest

from benchmarks import thread_hops
from benchmarks.thread_hops import take_batch
from helpers.informer import ADDED, DELETED, REPLACED_ALL, UPDATED, Delta
from tests.replayed_watch import updates_to_replay

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import sys, threading
from benchmarks import informer_bench
from benchmarks.thread_hops import prepare
impl = prepare(sys.argv[1], sys.argv[2])
informer_bench.use_fast_json(impl)  # as measure_events does
from helpers import fastjson
from helpers.informer import SharedInformer, wait_for_cache_sync
from tests.test_informer import informer_on
from tests.test_reflector import FakeSource
source = FakeSource()
source.add("pod1")
source.add("pod2")
heard = threading.Event()
threads, updates = [], []
def on_update(old, new):
    threads.append(threading.current_thread().name)
    updates.append(new["metadata"]["name"] + ":" + new["metadata"]["resourceVersion"])
    if len(updates) == 4:
        heard.set()
informer = informer_on(source, name="hops")
informer.add_event_handler(on_update=on_update)
with informer:
    assert wait_for_cache_sync(informer, timeout=10)
    for name in ("pod1", "pod2", "pod1", "pod2"):
        source.modify(name)
    assert heard.wait(10), f"only {updates} reached the handler"
print(threads[0], "orjson" if fastjson.installed() else "json", ",".join(updates))
"""


@pytest.mark.parametrize("decoder", ["json", "orjson"])
@pytest.mark.parametrize(
    ("shape", "thread"),
    [
        ("course", "informer-hops-handler-1"),
        ("batched", "informer-hops-handler-1"),
        ("no-handler-thread", "informer-hops"),
        ("one-thread", "reflector-hops"),
    ],
)
def test_each_shape_calls_the_handler_on_its_thread(shape: str, thread: str, decoder: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, shape, decoder],
        capture_output=True, text=True, cwd=ROOT, timeout=60, check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    heard_thread, heard_decoder, updates = done.stdout.split()
    assert (heard_thread, heard_decoder) == (thread, decoder)
    # Every update, in the order made: pod1 and pod2 alternate, each version newer.
    names = [update.split(":")[0] for update in updates.split(",")]
    versions = [int(update.split(":")[1]) for update in updates.split(",")]
    assert names == ["pod1", "pod2", "pod1", "pod2"], updates
    assert versions == sorted(versions) and len(set(versions)) == 4, updates


def delta(kind: str, name: str) -> Delta:
    return Delta(kind, {"metadata": {"namespace": "ns", "name": name}})


def test_a_batch_takes_distinct_keys_in_order_and_stops_at_a_repeated_key() -> None:
    queued = deque([delta(ADDED, "a"), delta(UPDATED, "b"), delta(DELETED, "c"),
                    delta(UPDATED, "a"), delta(UPDATED, "d")])  # fmt: skip
    first = take_batch(queued)
    assert [d.obj["metadata"]["name"] for d in first] == ["a", "b", "c"]
    assert [d.obj["metadata"]["name"] for d in take_batch(queued)] == ["a", "d"]
    assert take_batch(queued) == [] and not queued


def test_a_list_comes_alone_and_ends_a_batch_and_a_batch_has_a_limit() -> None:
    listed = Delta(REPLACED_ALL, [], "7")
    queued = deque([delta(UPDATED, "a"), listed, delta(UPDATED, "b"), delta(UPDATED, "c")])
    assert [d.obj["metadata"]["name"] for d in take_batch(queued)] == ["a"]
    assert take_batch(queued) == [listed]
    assert [d.obj["metadata"]["name"] for d in take_batch(queued, limit=1)] == ["b"]
    many = deque(delta(UPDATED, f"cm-{i}") for i in range(1_500))
    assert len(take_batch(many)) == thread_hops.BATCH_LIMIT == 1_000
    assert len(take_batch(many)) == 500


@pytest.mark.cluster
@pytest.mark.parametrize(("reader", "kept"), [("decode-and-keep", 1), ("decode-only", 0)])
def test_the_readers_decode_every_replayed_event(
    api: kubernetes.client.ApiClient, namespace: str, reader: str, kept: int
) -> None:
    since = updates_to_replay(api, namespace, 25)
    row = thread_hops.measure_decoding(reader, namespace, since, 25, timeout_seconds=20)
    assert (row["impl"], row["events"], row["kept"]) == (reader, 25, kept), row
    assert (row["http"], row["connections_opened"]) == ("HTTP/1.1", 0), row
    # The CPU this process spent while reading, which one thread did: no more than the time it
    # read for (a process's CPU since it started, or a count in milliseconds, would be more).
    # Not "> 0": 25 events can take less than half a millisecond of CPU, which rounds to 0.000.
    assert row["events_per_second"] > 0, row
    assert 0 <= row["client_cpu_seconds"] <= row["seconds"], row
    with pytest.raises(AssertionError, match="the watch ended after 25 of 26 events"):
        thread_hops.measure_decoding(reader, namespace, since, 26, timeout_seconds=2)


def test_an_unknown_shape_is_refused_with_the_shapes_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        thread_hops.main(["--shapes", "course,fast"])
    assert "unknown shape(s) fast; the shapes are course, batched" in capsys.readouterr().err
