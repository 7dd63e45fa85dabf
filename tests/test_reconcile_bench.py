"""Chapter 06's bench (helpers/reconcile_bench.py) and playground, and the faults they inject
(helpers/faults/clients.py, slow_watch.py): the faults are the ones they say, the slow watch
holds the cache, and the playground comes back after Run All."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import kubernetes
import pytest

from helpers import namespaces
from helpers.faults.clients import FlakyClients, InjectedFailure
from helpers.faults.slow_watch import SlowWatch
from helpers.reconcile_bench import Bench
from helpers.resourceversion import compare_resource_versions
from helpers.testing.fakes import GUARD, RecordingClients, new_foo


def test_flaky_clients_never_fail_an_event() -> None:
    """An Event is not part of a sync: a failed one never fails it (issue 20, 6)."""
    inner = RecordingClients()
    flaky = FlakyClients(inner, fail_keys={"default/test"})
    foo = new_foo("test", 1)
    flaky.record_event(foo, "Normal", "Synced", "Foo synced successfully")
    assert inner.events == [("test", "Normal", "Synced", "Foo synced successfully")]
    with pytest.raises(InjectedFailure):
        flaky.update_foo_status("default", foo)
    assert flaky.failed == 1


def test_every_nth_write_fails_whatever_the_events_between() -> None:
    """Syncs run one after another, each writing a Deployment, a status and an Event, with every
    third write failing: the failures land on writes that may fail. Counting the Events would
    put every third write on an Event and fail none (chapter 06's burst, seen in CI)."""
    inner = RecordingClients()
    flaky = FlakyClients(inner, fail_every=3)
    foo = new_foo("test", 1)
    failed = 0
    for _ in range(6):
        for write in (
            lambda: flaky.update_foo_status("default", foo),
            lambda: flaky.update_foo_status("default", foo),
            lambda: flaky.record_event(foo, "Normal", "Synced", "Foo synced successfully"),
        ):
            try:
                write()
            except InjectedFailure:
                failed += 1
    print(f"18 writes, 12 that may fail, every third failing -> {failed} failed")
    assert (failed, flaky.failed, flaky.writes) == (4, 4, 12)
    assert len(inner.events) == 6, "every Event was written"


def test_the_next_writes_fail_and_then_none() -> None:
    """``fail_next=1``: the first write that may fail fails (chapter 06's first picture), the
    Event before it does not count, and every later write goes through."""
    inner = RecordingClients()
    flaky = FlakyClients(inner, fail_next=1)
    foo = new_foo("test", 1)
    flaky.record_event(foo, "Normal", "Synced", "not counted")
    with pytest.raises(InjectedFailure):
        flaky.update_foo_status("default", foo)
    for _ in range(3):
        flaky.update_foo_status("default", foo)
    assert (flaky.failed, flaky.fail_next, len(inner.actions)) == (1, 0, 3)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [("9", "10", -1), ("10", "9", 1), ("123", "123", 0), ("124", "123", 1), ("99", "100", -1)],
)
def test_resource_versions_compare_by_length_then_digits(a: str, b: str, expected: int) -> None:
    assert compare_resource_versions(a, b) == expected


@pytest.mark.parametrize("bad", ["", "0", "012", "12a"])
def test_a_resource_version_that_is_not_well_formed_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="not well formed"):
        compare_resource_versions(bad, "1")


class Cache:
    """Just enough of an informer for the slow watch: an indexer that gets objects by key."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.indexer = self
        self._objects = {
            f"{o['metadata']['namespace']}/{o['metadata']['name']}": o for o in objects
        }

    def get_by_key(self, key: str) -> dict[str, Any] | None:
        return self._objects.get(key)


def test_the_slow_watch_holds_the_next_status_change_until_released() -> None:
    cached = new_foo("test", 1) | {"status": {"availableReplicas": 1}}
    watch = SlowWatch()
    watch.informer = Cache(cached)  # type: ignore[assignment]
    spec_change = new_foo("test", 2) | {"status": {"availableReplicas": 1}}
    assert watch(spec_change) is spec_change, "unarmed: everything passes"
    watch.hold("test")
    assert watch(spec_change) is spec_change, "a change that is not the status passes"
    status_change = new_foo("test", 1) | {"status": {"availableReplicas": 2}}
    passed = threading.Event()
    reader = threading.Thread(target=lambda: (watch(status_change), passed.set()))
    reader.start()
    assert watch.wait_reached(GUARD) is status_change
    assert not passed.wait(0.1), "held in the reflector's thread"
    watch.release()
    assert passed.wait(GUARD)
    reader.join(GUARD)


@pytest.fixture
def chapter_namespace(api: kubernetes.client.ApiClient) -> Iterator[str]:
    name = namespaces.fresh_namespace(api, f"t-bench-{uuid.uuid4().hex[:6]}")
    yield name
    namespaces.delete_namespace(api, name)


@pytest.mark.cluster
def test_the_playground_comes_back_after_run_all(
    api: kubernetes.client.ApiClient, chapter_namespace: str
) -> None:
    """Run All stops the playground and deletes the namespace; making it again works."""
    from helpers.playground import NAMES, Playground

    bench = Bench(api, chapter_namespace)
    first = Playground(bench, show=False)
    first.stop()
    assert first.button.disabled
    bench.recorder.detach()
    namespaces.delete_namespace(api, chapter_namespace)
    again = Playground(bench, show=False)
    try:
        assert not again.button.disabled
        written = again.burst()
        for name in NAMES:
            bench.recorder.wait_saw("Foo", name, written[name], timeout=60)
    finally:
        again.stop()
